"""Codex: PreToolUse, PostCompact and SessionEnd command hooks in a `hooks.json`, and
their trust.

Codex has no HTTP hooks; the command hook asks the recall server itself when one runs.
The PreToolUse hook has no matcher (every tool Codex reports: shell, apply_patch, MCP
tools); the PostCompact hook runs `active-memory-hook context codex`, which starts the
compacted context's ledger again (recall/contexts.py: its payload names the sub-agent
whose context was compacted, where `SessionStart` with `source: "compact"` does not);
the SessionEnd hook enqueues the settled session (docs/queue.md). `codex exec` fires
SessionEnd at the end of every run (checked with 0.171), so no `Stop` (per turn) hook is
needed. Codex runs a hook only once it is trusted: `plan` also writes the trust entries
into `$CODEX_HOME/config.toml` (codex_trust.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from active_memory.hooks.installers import codex_trust
from active_memory.hooks.installers.command_path import shell_command
from active_memory.hooks.installers.files import FileChange
from active_memory.hooks.installers.hook_settings import HookEntry, plan_entries

MATCHER: str | None = None
"""No matcher: every tool Codex reports to PreToolUse (shell, apply_patch, MCP tools)."""

COMMAND = "active-memory-hook codex"
"""The lean console script (docs/recall.md): about 1.7x a bare interpreter per tool call,
where the full CLI (`active-memory hook codex`, also recognised as ours) costs 5x. The
installer writes it with the script's absolute path."""
COMMAND_TIMEOUT = 10
SESSION_END = "SessionEnd"
SESSION_END_TIMEOUT = 3
"""Codex clamps a SessionEnd hook's timeout to 1..3 s; enqueuing takes milliseconds."""

_PREFIX = r"""(^|[\s/\\'"])active-memory(-hook(\.exe)?['"]?|(\.exe)?['"]?\s+hook)"""
_OUR_COMMAND = re.compile(_PREFIX + r"\s+codex\b")
_OUR_SESSION_END = re.compile(_PREFIX + r"\s+session-end\s+codex\b")
_OUR_CONTEXT = re.compile(_PREFIX + r"\s+context\s+codex\b")
CONTEXT = "PostCompact"
CONTEXT_TIMEOUT = 5


def hooks_path(base: Path) -> Path:
    """`<base>/hooks.json`, base being `<checkout>/.codex` or the Codex home."""
    return base / "hooks.json"


def _command_matches(handler: Any, pattern: re.Pattern[str]) -> bool:
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    return isinstance(command, str) and bool(pattern.search(command))


def is_ours(handler: Any) -> bool:
    """True for a PreToolUse hook handler this installer wrote."""
    return _command_matches(handler, _OUR_COMMAND)


def is_our_session_end(handler: Any) -> bool:
    """True for a SessionEnd hook handler this installer wrote."""
    return _command_matches(handler, _OUR_SESSION_END)


def is_our_context(handler: Any) -> bool:
    """True for a context-event handler this installer wrote."""
    return _command_matches(handler, _OUR_CONTEXT)


def is_ours_at(event: str, handler: Any) -> bool:
    """True for a handler of ours under `event` (what trust is computed for)."""
    if event == "PreToolUse":
        return is_ours(handler)
    if event == SESSION_END:
        return is_our_session_end(handler)
    if event == CONTEXT:
        return is_our_context(handler)
    return False


def handler(script: Path | None = None) -> dict[str, Any]:
    """Our PreToolUse handler (it asks the resident server first when one runs)."""
    command = shell_command(script, "codex") if script else COMMAND
    return {"type": "command", "command": command, "timeout": COMMAND_TIMEOUT}


def session_end_handler(script: Path | None = None) -> dict[str, Any]:
    """Our SessionEnd handler: enqueue the settled session."""
    command = (
        shell_command(script, "session-end", "codex")
        if script
        else "active-memory-hook session-end codex"
    )
    return {"type": "command", "command": command, "timeout": SESSION_END_TIMEOUT}


def context_handler(script: Path | None = None) -> dict[str, Any]:
    """Our PostCompact handler: the compacted context starts its ledger again."""
    command = (
        shell_command(script, "context", "codex") if script else "active-memory-hook context codex"
    )
    return {"type": "command", "command": command, "timeout": CONTEXT_TIMEOUT}


def entries(script: Path | None) -> list[HookEntry]:
    """Our hooks: PreToolUse (recall), PostCompact (a compacted context's ledger starts
    again) and SessionEnd (enqueue the session)."""
    return [
        HookEntry("PreToolUse", handler(script), MATCHER, is_ours),
        HookEntry(CONTEXT, context_handler(script), None, is_our_context),
        HookEntry(SESSION_END, session_end_handler(script), None, is_our_session_end),
    ]


def plan(path: Path, install: bool, script: Path | None = None) -> FileChange:
    """The change that installs (or removes) our hooks in the hooks file at `path`."""
    return plan_entries(path, install, entries(script))


def plan_with_trust(
    path: Path,
    install: bool,
    script: Path | None,
    env: Mapping[str, str],
    *,
    trust_project: Path | None = None,
) -> tuple[FileChange, FileChange]:
    """The hooks file change and the matching `config.toml` trust change."""
    change = plan(path, install, script)
    before = _document(change.before)
    after = _document(change.after)
    trust = codex_trust.plan_trust(
        codex_trust.config_path(env),
        Path(os.path.abspath(path)),
        before,
        after,
        is_ours_at,
        trust_project=trust_project,
    )
    return change, trust


def _document(text: str | None) -> dict[str, Any]:
    if not text or not text.strip():
        return {}
    value = json.loads(text)
    return value if isinstance(value, dict) else {}
