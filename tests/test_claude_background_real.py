"""Bash calls that end in the background, as the real `claude` 2.1.332 records them
(tests/background_sessions.py says what the session runs): a call past its `timeout` is
moved there unless it starts with `sleep`, a `run_in_background` call starts there, and
a `<task-notification>` settles each, queued into the turn (an `attachment`) or after it
(a `user` line).

The committed capture (tests/fixtures/sessions/claude-2.1.332-background-real/) is read
always; the live test runs the binary (skips without it, fails in CI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import background_sessions as session

from active_memory.runlog.importers.claude import import_transcript

CAPTURE = (
    Path(__file__).parent
    / "fixtures"
    / "sessions"
    / "claude-2.1.332-background-real"
    / "1110c79c-db1d-4720-bf09-94fb74ac18f6.jsonl"
)


def _failures(transcript: Path) -> dict[str, dict[str, Any]]:
    record = import_transcript(transcript).runs[0].record
    failures: list[dict[str, Any]] = record["tool_failures"]
    by_command = {f["command"]: f for f in failures}
    assert len(by_command) == len(failures)
    return by_command


def _check(failures: dict[str, dict[str, Any]]) -> None:
    # Moved at its timeout, then failed: a timeout with the exit code its summary names.
    late = failures[session.FAILS_LATE]
    assert (late["exit_code"], late["family"]) == (2, "python3")
    assert late["error"] == 'timed out; Background command "checks" failed with exit code 2'
    # Started in the background on purpose, then failed: a failure, not a timeout.
    background = failures[session.FAILS_IN_BACKGROUND]
    assert background["exit_code"] == 2
    assert background["error"] == 'Background command "lint" failed with exit code 2'
    # Starts with `sleep`: killed at its timeout.
    killed = failures[session.KILLED]
    assert (killed["exit_code"], killed["family"]) == (143, "sleep")
    assert killed["error"] == "Command timed out after 2s"
    # Notified after the turn's answer, as a user line.
    after = failures[session.FAILS_AFTER_THE_TURN]
    assert after["exit_code"] == 3 and after["error"].startswith("timed out; ")
    # Moved to the background, then completed: no failure; the wait neither.
    assert session.PASSES_LATE not in failures and session.WAIT not in failures
    assert len(failures) == 4


def test_the_captured_session_s_background_calls_are_settled_by_their_notifications() -> None:
    text = CAPTURE.read_text(encoding="utf-8")
    # The capture holds both shapes of notification and the four kinds of call.
    assert '"type":"queued_command"' in text and "moved to the background (ID:" in text
    assert "Command running in background with ID:" in text and "Exit code 143" in text
    _check(_failures(CAPTURE))


def test_a_live_claude_session_s_background_calls_are_settled_by_their_notifications(
    tmp_path: Path,
) -> None:
    _check(_failures(session.record(tmp_path)))
