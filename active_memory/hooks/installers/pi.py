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

EXTENSION_FILE = "active-memory.ts"
MARKER = "// active-memory: written by `active-memory hook install pi`"
ForeignExtensionFile = ForeignFile
extension_command = installed_command


def extension_path(extensions_dir: Path) -> Path:
    """`<extensions_dir>/active-memory.ts`."""
    return extensions_dir / EXTENSION_FILE


def extension_source(script: Path | None = None) -> str:
    """The extension's source (package data), running `script` (default: from PATH)."""
    return shipped_source("pi_extension.ts", script)


def plan(path: Path, install: bool, script: Path | None = None) -> FileChange:
    """The change that writes (or removes) our extension file at `path`."""
    return plan_owned(path, MARKER, extension_source(script) if install else None)
