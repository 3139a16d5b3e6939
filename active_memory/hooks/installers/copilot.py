"""GitHub Copilot CLI: a hooks file of ours, `active-memory.json`, with a `preToolUse` hook.

Copilot CLI loads every `*.json` in `$COPILOT_HOME/hooks/` (default `~/.copilot/hooks/`)
and, in a folder listed in `trustedFolders` of `$COPILOT_HOME/config.json`, every
`.github/hooks/*.json` of the repository. Each file is `{"version": 1, "hooks": {event:
[handler, …]}}`. Since hooks from all files are combined, ours lives in a file of its own:
the user's files are never touched. A file of that name that we did not write (no hook of
ours in it) is never overwritten or removed. Its context hooks run
`active-memory-hook context copilot EVENT` (the payloads do not name their event;
recall/contexts.py): `agentStop` (a turn ended: its cards reached the model),
`userPromptSubmitted` (a new prompt: what a cut-short turn was given is refunded) and
`preCompact` (the compacted context's ledger starts again). Its `sessionEnd` hook runs
`active-memory-hook session-end copilot`, which queues the session for its postmortem.

`preToolUse`'s `additionalContext` reaches the model in Copilot CLI 1.0.102 (checked with
the binary: it follows the tool's result as a user message); docs/harnesses.md says why
that and not `postToolUse` is used.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from active_memory.errors import UsageError
from active_memory.hooks.installers.command_path import shell_command
from active_memory.hooks.installers.files import (
    FileChange,
    dump_json,
    parse_json_object,
    read_text,
)

HOOKS_FILE = "active-memory.json"
EVENT = "preToolUse"
SESSION_END = "sessionEnd"
CONTEXT_EVENTS = ("userPromptSubmitted", "agentStop", "preCompact")
COMMAND = "active-memory-hook copilot"
TIMEOUT_SEC = 10
SESSION_END_TIMEOUT_SEC = 5
CONTEXT_TIMEOUT_SEC = 5

_OUR_COMMAND = re.compile(
    r"""(^|[\s/\\'"])active-memory(-hook(\.exe)?['"]?|(\.exe)?['"]?\s+hook)"""
    r"""\s+(session-end\s+|context\s+)?copilot\b"""
)


class ForeignHooksFile(UsageError):
    """The hooks path holds a file Active Memory did not write."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path}: exists and holds no Active Memory hook; rename or remove it, then run "
            "the command again (nothing was changed)"
        )
        self.path = path


def hooks_path(hooks_dir: Path) -> Path:
    """`<hooks_dir>/active-memory.json`."""
    return hooks_dir / HOOKS_FILE


def is_ours(handler: Any) -> bool:
    """True for a hook handler this installer wrote."""
    if not isinstance(handler, dict):
        return False
    command = handler.get("bash")
    return isinstance(command, str) and bool(_OUR_COMMAND.search(command))


def handler(script: Path | None) -> dict[str, Any]:
    """Our preToolUse handler."""
    command = shell_command(script, "copilot") if script else COMMAND
    return {"type": "command", "bash": command, "timeoutSec": TIMEOUT_SEC}


def session_end_handler(script: Path | None) -> dict[str, Any]:
    """Our sessionEnd handler: enqueue the session (returns in milliseconds)."""
    command = (
        shell_command(script, "session-end", "copilot")
        if script
        else "active-memory-hook session-end copilot"
    )
    return {"type": "command", "bash": command, "timeoutSec": SESSION_END_TIMEOUT_SEC}


def context_handler(script: Path | None, event: str) -> dict[str, Any]:
    """Our handler of context event `event` (named on the command line: the payload
    does not name it)."""
    command = (
        shell_command(script, "context", "copilot", event)
        if script
        else f"active-memory-hook context copilot {event}"
    )
    return {"type": "command", "bash": command, "timeoutSec": CONTEXT_TIMEOUT_SEC}


def our_handlers(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every handler of ours in a hooks file."""
    hooks = document.get("hooks")
    if not isinstance(hooks, dict):
        return []
    return [
        item
        for handlers in hooks.values()
        if isinstance(handlers, list)
        for item in handlers
        if is_ours(item)
    ]


def plan(path: Path, install: bool, script: Path | None = None) -> FileChange:
    """The change that writes (or removes) our hooks file at `path`."""
    before = read_text(path)
    if before is not None and not our_handlers(parse_json_object(path, before)):
        raise ForeignHooksFile(path)
    if not install:
        return FileChange(path, before, None)
    document = {
        "version": 1,
        "hooks": {
            EVENT: [handler(script)],
            **{event: [context_handler(script, event)] for event in CONTEXT_EVENTS},
            SESSION_END: [session_end_handler(script)],
        },
    }
    after = dump_json(document, 2)
    if before is not None and parse_json_object(path, before) == document:
        after = before  # the same hooks: leave the text exactly as it is
    return FileChange(path, before, after)
