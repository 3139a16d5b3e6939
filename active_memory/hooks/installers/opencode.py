"""OpenCode: a plugin file that appends recalled lessons to tool output (`tool.execute.after`).

OpenCode loads every JavaScript file in `.opencode/plugins/` (project) and
`~/.config/opencode/plugins/` (user) at start-up. The file is wholly ours; a file of the
same name that we did not write (no marker line) is never overwritten or removed. The
plugin runs the absolute path of `active-memory-hook` (written at install time;
`ACTIVE_MEMORY_HOOK_COMMAND` still overrides it). No session-end hook is installed for
OpenCode: there is no OpenCode session importer, so a settled OpenCode session could not
become a run record (docs/loop.md).
"""

from __future__ import annotations

from pathlib import Path

from active_memory.hooks.installers.files import FileChange
from active_memory.hooks.installers.owned_file import (
    COMMAND_PLACEHOLDER as COMMAND_PLACEHOLDER,
)
from active_memory.hooks.installers.owned_file import (
    ForeignFile,
    installed_command,
    plan_owned,
    shipped_source,
)

PLUGIN_FILE = "active-memory.js"
MARKER = "// active-memory: written by `active-memory hook install opencode`"
ForeignPluginFile = ForeignFile
plugin_command = installed_command


def plugin_path(plugins_dir: Path) -> Path:
    """`<plugins_dir>/active-memory.js`."""
    return plugins_dir / PLUGIN_FILE


def plugin_source(script: Path | None = None) -> str:
    """The plugin's JavaScript (package data), running `script` (default: from PATH)."""
    return shipped_source("opencode_plugin.js", script)


def plan(path: Path, install: bool, script: Path | None = None) -> FileChange:
    """The change that writes (or removes) our plugin file at `path`."""
    return plan_owned(path, MARKER, plugin_source(script) if install else None)
