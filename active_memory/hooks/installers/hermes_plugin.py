# active-memory: written by `active-memory hook install hermes`; `active-memory hook
# uninstall hermes` removes it. Edits are overwritten by the next install.
"""Active Memory for Hermes Agent: lessons from earlier runs, and sessions queued.

- `transform_tool_result`: after each tool call, asks `active-memory-hook after-tool`
  which lessons match the call and returns the tool's result with their framed text
  appended, so the cards reach the model with the result, in the next request.
- `on_session_end` (after every turn) and `on_session_finalize` (the session is over)
  queue the session for its postmortem (`active-memory-hook session-end hermes`).

Any failure (command missing, slow, non-zero exit, unreadable answer) changes nothing:
recall must never break a tool call or a session. Standard library only: this file runs
inside Hermes' own interpreter, where Active Memory is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from typing import Any

COMMAND = os.environ.get("ACTIVE_MEMORY_HOOK_COMMAND") or "active-memory-hook"
TIMEOUT_SECONDS = 5.0


def _cwd() -> str:
    # Hermes runs terminal commands in TERMINAL_CWD when it is set, else where it started.
    return os.environ.get("TERMINAL_CWD") or os.getcwd()


def _ask(arguments: list[str], payload: dict[str, Any]) -> str:
    try:
        done = subprocess.run(
            # A project install names the command from the home folder (`~/…`): nothing of
            # one user in a file a team commits.
            [os.path.expanduser(COMMAND), *arguments],
            input=json.dumps(payload).encode("utf-8"),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=TIMEOUT_SECONDS,
            cwd=_cwd(),
            check=False,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return ""
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""


def _with_cards(
    tool_name: str = "", args: Any = None, result: Any = None, session_id: str = "", **_: Any
) -> str | None:
    if not isinstance(result, str) or not tool_name:
        return None  # a multimodal result, or no tool: left as it is
    payload = {
        "harness": "hermes",
        "tool": tool_name,
        "args": args if isinstance(args, dict) else {},
        "sessionID": session_id or None,
        "cwd": _cwd(),
    }
    try:
        answer = json.loads(_ask(["after-tool"], payload) or "null")
    except ValueError:
        return None
    appendix = answer.get("append") if isinstance(answer, dict) else None
    if isinstance(appendix, str) and appendix:
        return result + appendix
    return None


def _ended(event: str) -> Callable[..., None]:
    def handler(session_id: str = "", **_: Any) -> None:
        if isinstance(session_id, str) and session_id:
            _ask(
                ["session-end", "hermes"], {"sessionID": session_id, "cwd": _cwd(), "event": event}
            )

    return handler


def register(ctx: Any) -> None:
    """Hermes' plugin entry point: our hooks."""
    ctx.register_hook("transform_tool_result", _with_cards)
    ctx.register_hook("on_session_end", _ended("on_session_end"))
    ctx.register_hook("on_session_finalize", _ended("on_session_finalize"))
