"""Gemini CLI: an `AfterTool` hook in `.gemini/settings.json`.

Gemini CLI (0.61) runs `BeforeTool` hooks but drops their `additionalContext`; only an
`AfterTool` hook's `hookSpecificOutput.additionalContext` reaches the model, appended to
the tool's result inside `<hook_context>` (docs/harnesses.md). So recall answers after the
tool. The settings file has Claude Code's hook shape (event → matcher groups → handlers),
so the merge is hook_settings.py's; a handler's `timeout` is in milliseconds here.

A `PreCompress` hook with the matcher `manual` (Gemini CLI matches it against the
trigger) runs `active-memory-hook context gemini` when the user compresses the chat
(`/compress`): the compressed context's ledger starts again (recall/contexts.py). The
automatic `PreCompress` fires before every turn, whether or not Gemini CLI then
compresses, so it is not matched (docs/harnesses.md, "Contexts").

A `SessionEnd` hook runs `active-memory-hook session-end gemini`, which puts the session
in the postmortem queue (docs/queue.md); Gemini CLI names the session's JSONL log in
`transcript_path`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from active_memory.hooks.installers.command_path import shell_command
from active_memory.hooks.installers.files import FileChange
from active_memory.hooks.installers.hook_settings import HookEntry, plan_entries

EVENT = "AfterTool"
MATCHER = (
    "read_file|read_many_files|write_file|replace|edit|run_shell_command|glob|"
    "grep_search|search_file_content|list_directory"
)
"""Gemini CLI's tools whose arguments carry recall signals (a regular expression)."""
COMMAND = "active-memory-hook gemini"
TIMEOUT_MS = 10_000
SESSION_END = "SessionEnd"
SESSION_END_TIMEOUT_MS = 5_000
CONTEXT = "PreCompress"
CONTEXT_MATCHER = "manual"
CONTEXT_TIMEOUT_MS = 5_000

_OUR_COMMAND = re.compile(
    r"""(^|[\s/\\'"])active-memory(-hook(\.exe)?['"]?|(\.exe)?['"]?\s+hook)\s+gemini\b"""
)


_OUR_SESSION_END = re.compile(
    r"""(^|[\s/\\'"])active-memory(-hook(\.exe)?['"]?|(\.exe)?['"]?\s+hook)"""
    r"""\s+session-end\s+gemini\b"""
)


_OUR_CONTEXT = re.compile(
    r"""(^|[\s/\\'"])active-memory(-hook(\.exe)?['"]?|(\.exe)?['"]?\s+hook)"""
    r"""\s+context\s+gemini\b"""
)


def settings_path(base: Path) -> Path:
    """`<base>/.gemini/settings.json` (base: the checkout root or the home folder)."""
    return base / ".gemini" / "settings.json"


def is_ours(handler: Any) -> bool:
    """True for a hook handler this installer wrote."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    return isinstance(command, str) and bool(_OUR_COMMAND.search(command))


def is_our_session_end(handler: Any) -> bool:
    """True for a SessionEnd handler this installer wrote."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    return isinstance(command, str) and bool(_OUR_SESSION_END.search(command))


def is_our_context(handler: Any) -> bool:
    """True for a PreCompress handler this installer wrote."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    return isinstance(command, str) and bool(_OUR_CONTEXT.search(command))


def context_handler(script: Path | None) -> dict[str, Any]:
    """Our PreCompress handler: the compressed context's ledger starts again."""
    if script:
        command = shell_command(script, "context", "gemini")
    else:
        command = "active-memory-hook context gemini"
    return {"name": "active-memory-context", "type": "command", "command": command,
            "timeout": CONTEXT_TIMEOUT_MS}  # fmt: skip


def session_end_handler(script: Path | None) -> dict[str, Any]:
    """Our SessionEnd handler: enqueue the session (returns in milliseconds)."""
    command = (
        shell_command(script, "session-end", "gemini")
        if script
        else "active-memory-hook session-end gemini"
    )
    return {"name": "active-memory-session-end", "type": "command", "command": command,
            "timeout": SESSION_END_TIMEOUT_MS}  # fmt: skip


def handler(script: Path | None) -> dict[str, Any]:
    """Our AfterTool handler (`name` shows in Gemini CLI's hook list and warnings)."""
    command = shell_command(script, "gemini") if script else COMMAND
    return {"name": "active-memory", "type": "command", "command": command,
            "timeout": TIMEOUT_MS}  # fmt: skip


def entries(script: Path | None) -> list[HookEntry]:
    """Our hooks: AfterTool (recall), PreCompress on `/compress` (the context's ledger
    starts again) and SessionEnd (enqueue the session)."""
    return [
        HookEntry(EVENT, handler(script), MATCHER, is_ours),
        HookEntry(CONTEXT, context_handler(script), CONTEXT_MATCHER, is_our_context),
        HookEntry(SESSION_END, session_end_handler(script), None, is_our_session_end),
    ]


def plan(path: Path, install: bool, script: Path | None = None) -> FileChange:
    """The change that installs (or removes) our hook in the settings file at `path`."""
    return plan_entries(path, install, entries(script))
