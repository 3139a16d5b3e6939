"""Codex: a PreToolUse command hook in `.codex/hooks.json` (Codex has no HTTP hooks)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from active_memory.hooks.installers.files import FileChange
from active_memory.hooks.installers.hook_settings import plan_settings

MATCHER: str | None = None
"""No matcher: every tool Codex reports to PreToolUse (shell, apply_patch, MCP tools)."""

COMMAND = "active-memory-hook codex"
"""The lean console script (docs/recall.md): about 1.7x a bare interpreter per tool call,
where the full CLI (`active-memory hook codex`, also recognised as ours) costs 5x."""
COMMAND_TIMEOUT = 10

_OUR_COMMAND = re.compile(
    r"""(^|[\s/\\'"])active-memory(-hook(\.exe)?['"]?|(\.exe)?['"]?\s+hook)\s+codex\b"""
)


def hooks_path(base: Path) -> Path:
    """`<base>/hooks.json`, base being `<checkout>/.codex` or the Codex home."""
    return base / "hooks.json"


def is_ours(handler: Any) -> bool:
    """True for a hook handler this installer wrote."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    return isinstance(command, str) and bool(_OUR_COMMAND.search(command))


def handler() -> dict[str, Any]:
    """Our command hook handler (it asks the resident server first when one runs)."""
    return {"type": "command", "command": COMMAND, "timeout": COMMAND_TIMEOUT}


def plan(path: Path, install: bool) -> FileChange:
    """The change that installs (or removes) our hook in the hooks file at `path`."""
    return plan_settings(path, install, handler(), MATCHER, is_ours)
