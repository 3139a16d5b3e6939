"""The real `claude` and `codex` binaries run commands that fail (tests/failure_sessions.py);
what the importer records of their own logs. Without a binary these skip with the
reason; in CI (CI=true) they fail instead (tests/fakes/harness.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import failure_sessions as sessions

from active_memory.evidence import scan
from active_memory.runlog.importers.claude import import_transcript
from active_memory.runlog.importers.codex import import_rollout
from active_memory.runlog.record import parse_run_record


def _check(record: dict[str, Any], extra: dict[str, int], qualifying: set[str]) -> None:
    failures = record["tool_failures"]
    assert Counter(f["family"] for f in failures) == Counter(sessions.EXPECTED_FAMILIES | extra)
    assert all(f["error"] for f in failures), failures
    parsed = parse_run_record(record)
    found = {i.family for i in scan(parsed).evidence if i.kind == "tool_failures"}
    assert found == qualifying
    inputs = [e["event"]["input"] for e in record["events"] if e["event"]["kind"] == "node_started"]
    assert inputs == [sessions.PROMPT]


def test_a_real_claude_session_s_failed_calls_are_all_recorded(tmp_path: Path) -> None:
    transcript = sessions.record_claude(tmp_path)
    record = import_transcript(transcript).runs[0].record
    _check(record, sessions.CLAUDE_EXTRA, sessions.CLAUDE_QUALIFYING)


def test_a_real_codex_session_s_failed_calls_are_all_recorded(tmp_path: Path) -> None:
    rollout = sessions.record_codex(tmp_path)
    record = import_rollout(rollout).runs[0].record
    _check(record, sessions.CODEX_EXTRA, sessions.CODEX_QUALIFYING)
