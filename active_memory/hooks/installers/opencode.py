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

import json
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


COMMAND_PLACEHOLDER = '"active-memory-hook"'
"""The default command in the shipped plugin; the installer writes the absolute path."""


def plugin_source(script: Path | None = None) -> str:
    """The plugin's JavaScript (package data), running `script` (default: from PATH)."""
    source = (
        resources.files("active_memory.hooks.installers")
        .joinpath("opencode_plugin.js")
        .read_text(encoding="utf-8")
    )
    if script is None:
        return source
    return source.replace(COMMAND_PLACEHOLDER, json.dumps(str(script)), 1)


def plugin_command(text: str) -> str | None:
    """The hook executable an installed plugin file runs (None: not found)."""
    for line in text.splitlines():
        if line.startswith("const COMMAND = "):
            literal = line.rsplit("||", 1)[-1].strip().rstrip(";").strip()
            try:
                value = json.loads(literal)
            except ValueError:
                return None
            return value if isinstance(value, str) else None
    return None


def plan(path: Path, install: bool, script: Path | None = None) -> FileChange:
    """The change that writes (or removes) our plugin file at `path`."""
    before = read_text(path)
    if before is not None and not before.startswith(MARKER):
        raise ForeignPluginFile(path)
    return FileChange(path, before, plugin_source(script) if install else None)
