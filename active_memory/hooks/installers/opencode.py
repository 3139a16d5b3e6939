"""OpenCode: a plugin file that appends recalled lessons to tool output (`tool.execute.after`).

OpenCode loads every JavaScript file in `.opencode/plugins/` (project) and
`~/.config/opencode/plugins/` (user) at start-up. The file is wholly ours; a file of the
same name that we did not write (no marker line) is never overwritten or removed.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from active_memory.errors import UsageError
from active_memory.hooks.installers.files import FileChange, read_text

PLUGIN_FILE = "active-memory.js"
MARKER = "// active-memory: written by `active-memory hook install opencode`"


class ForeignPluginFile(UsageError):
    """The plugin path holds a file Active Memory did not write."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path}: exists and was not written by active-memory; "
            "rename or remove it, then run the command again (nothing was changed)"
        )
        self.path = path


def plugin_path(plugins_dir: Path) -> Path:
    """`<plugins_dir>/active-memory.js`."""
    return plugins_dir / PLUGIN_FILE


def plugin_source() -> str:
    """The plugin's JavaScript, shipped as package data."""
    return (
        resources.files("active_memory.hooks.installers")
        .joinpath("opencode_plugin.js")
        .read_text(encoding="utf-8")
    )


def plan(path: Path, install: bool) -> FileChange:
    """The change that writes (or removes) our plugin file at `path`."""
    before = read_text(path)
    if before is not None and not before.startswith(MARKER):
        raise ForeignPluginFile(path)
    return FileChange(path, before, plugin_source() if install else None)
