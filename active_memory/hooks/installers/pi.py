"""Pi: an extension file, `active-memory.ts`, that appends recalled lessons to tool results.

Pi discovers every `*.ts` in `.pi/extensions/` (project) and `~/.pi/agent/extensions/`
(user; `$PI_CODING_AGENT_DIR/extensions/` when that is set) at start-up. Its
`tool_result` event may change the result the model sees, and that is the strongest path
Pi offers: a `tool_call` handler can only block (docs/harnesses.md). The file is wholly
ours; a file of the same name that we did not write (no marker line) is never overwritten
or removed. In Pi's contained mode (`pi --no-extensions`), discovery is off and only
explicit `-e PATH` extensions load: `pi --no-extensions -e <that file>`.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from active_memory.errors import UsageError
from active_memory.hooks.installers.files import FileChange, read_text

EXTENSION_FILE = "active-memory.ts"
MARKER = "// active-memory: written by `active-memory hook install pi`"
COMMAND_PLACEHOLDER = '"active-memory-hook"'


class ForeignExtensionFile(UsageError):
    """The extension path holds a file Active Memory did not write."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"{path}: exists and was not written by active-memory; "
            "rename or remove it, then run the command again (nothing was changed)"
        )
        self.path = path


def extension_path(extensions_dir: Path) -> Path:
    """`<extensions_dir>/active-memory.ts`."""
    return extensions_dir / EXTENSION_FILE


def extension_source(script: Path | None = None) -> str:
    """The extension's source (package data), running `script` (default: from PATH)."""
    source = (
        resources.files("active_memory.hooks.installers")
        .joinpath("pi_extension.ts")
        .read_text(encoding="utf-8")
    )
    if script is None:
        return source
    return source.replace(COMMAND_PLACEHOLDER, json.dumps(str(script)), 1)


def extension_command(text: str) -> str | None:
    """The hook executable an installed extension runs (None: not found)."""
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
    """The change that writes (or removes) our extension file at `path`."""
    before = read_text(path)
    if before is not None and not before.startswith(MARKER):
        raise ForeignExtensionFile(path)
    return FileChange(path, before, extension_source(script) if install else None)
