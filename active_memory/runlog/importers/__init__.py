"""Importers: run records (`active-memory/run@1`) from other tools' logs.

- `zeroshot.import_ledger(PATH)`: a zeroshot native run ledger (`runs.sqlite3`, or the
  folder holding it), one record per finished run;
- `claude.import_transcript(PATH)`: one Claude Code session transcript (JSONL);
- `codex.import_rollout(PATH)`: one Codex session log (`rollout-*.jsonl`).

Each returns an `ImportResult` (`runs`, `skipped`); `write` writes records to files.
Import the submodules directly; nothing is re-exported so this package stays cheap.
"""

from __future__ import annotations
