"""An installed file that is wholly ours: OpenCode's plugin, Pi's extension.

Both are package data with a default command literal that the installer replaces with
the absolute hook path, and both start with a marker line: a file of the same name
without it was not written by us and is never overwritten or removed.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from active_memory.errors import UsageError
from active_memory.hooks.installers.files import FileChange, read_text

COMMAND_PLACEHOLDER = '"active-memory-hook"'
"""The default command in the shipped file; the installer writes the absolute path."""


class ForeignFile(UsageError):
    """The path holds a file Active Memory did not write."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path}: exists and was not written by active-memory; "
            "rename or remove it, then run the command again (nothing was changed)"
        )
        self.path = path


def shipped_source(resource: str, script: Path | None) -> str:
    """The package-data file `resource`, running `script` (default: from PATH)."""
    source = resources.files("active_memory.hooks.installers").joinpath(resource)
    text = source.read_text(encoding="utf-8")
    if script is None:
        return text
    return text.replace(COMMAND_PLACEHOLDER, json.dumps(str(script)), 1)


def installed_command(text: str) -> str | None:
    """The hook executable an installed file runs (its `const COMMAND = …` line)."""
    for line in text.splitlines():
        if line.startswith("const COMMAND = "):
            literal = line.rsplit("||", 1)[-1].strip().rstrip(";").strip()
            try:
                value = json.loads(literal)
            except ValueError:
                return None
            return value if isinstance(value, str) else None
    return None


def plan_owned(path: Path, marker: str, text: str | None) -> FileChange:
    """Write `text` at `path` (None: remove it), refusing a file without our `marker`."""
    before = read_text(path)
    if before is not None and not before.startswith(marker):
        raise ForeignFile(path)
    return FileChange(path, before, text)
