"""Claude Code transcripts and session-end payloads for the queue and worker tests.

`quiet_transcript`: one turn, no cost, so the postmortem asks no model. `costly_transcript`:
the Claude Code fixture (tests/fixtures/sessions/claude-session.jsonl: timed-out tool
calls, an API error) under another session ID and folder, so discovery asks its model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).with_name("fixtures") / "sessions" / "claude-session.jsonl"
FIXTURE_SESSION = "0b7c2f4e-9d1a-4c3b-8e5f-6a7b8c9d0e1f"
FIXTURE_CWD = "/home/dev/acme-api"


def quiet_transcript(path: Path, session_id: str, cwd: str) -> Path:
    """A one-turn Claude Code transcript with nothing costly in it."""
    base = {"sessionId": session_id, "cwd": cwd, "isSidechain": False}
    lines = [
        {**base, "type": "user", "uuid": "u1", "timestamp": "2026-11-20T09:00:02.000Z",
         "message": {"role": "user", "content": "Say hello"}},
        {**base, "type": "assistant", "uuid": "u2", "timestamp": "2026-11-20T09:00:03.000Z",
         "message": {"model": "claude-sonnet-4-5", "role": "assistant",
                     "content": [{"type": "text", "text": "Hello."}]}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def costly_transcript(path: Path, session_id: str, cwd: str) -> Path:
    """The fixture's costly session under `session_id`, working in `cwd`."""
    text = FIXTURE.read_text(encoding="utf-8")
    path.write_text(text.replace(FIXTURE_SESSION, session_id).replace(FIXTURE_CWD, cwd),
                    encoding="utf-8")  # fmt: skip
    return path


def claude_end(session_id: str, transcript: Path | str | None, cwd: str) -> dict[str, Any]:
    """A Claude Code `SessionEnd` hook payload."""
    return {
        "session_id": session_id,
        "transcript_path": str(transcript) if transcript is not None else None,
        "cwd": cwd,
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
        "permission_mode": "default",
    }


def codex_stop(session_id: str, transcript: Path | str | None, cwd: str) -> dict[str, Any]:
    """A Codex (0.17x) `Stop` hook payload, fired after every turn."""
    return {
        "session_id": session_id,
        "transcript_path": str(transcript) if transcript is not None else None,
        "cwd": cwd,
        "hook_event_name": "Stop",
        "model": "gpt-5.1-codex",
        "permission_mode": "default",
        "turn_id": "turn-1",
        "stop_hook_active": False,
        "last_assistant_message": "Done.",
    }
