"""A run record from one finished harness session, as the postmortem queue's worker needs.

This version only calls the existing transcript importers (Claude Code, Codex); the
`sessions` branch's version also joins the hook's receipts and deliveries for the
session, and keeps this signature.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from active_memory.errors import UsageError
from active_memory.runlog.record import RunRecord, parse_run_record


def import_harness_session(
    harness: str,
    transcript: str | Path,
    *,
    session_id: str,
    cwd: str | None,
    env: Mapping[str, str],
) -> RunRecord:
    """The run record of `harness`'s session `session_id` read from `transcript`.

    Raises `UsageError` (a bad, empty or unreadable transcript, an unknown harness).
    """
    if harness == "claude":
        from active_memory.runlog.importers.claude import import_transcript

        result = import_transcript(transcript)
    elif harness == "codex":
        from active_memory.runlog.importers.codex import import_rollout

        result = import_rollout(transcript)
    else:
        raise UsageError(f"no transcript importer for harness {harness!r}; allowed claude, codex")
    if not result.runs:
        why = "; ".join(s.reason for s in result.skipped[:3]) or "nothing to import"
        raise UsageError(f"{transcript}: no run in the {harness} session log ({why})")
    return parse_run_record(result.runs[0].record, str(transcript))
