"""`python -m active_memory.harness_plugins [ROOT]`: write every harness plugin's files
under ROOT (default: the current folder, this repository's root), printing each path that
changed. The drift tests fail until what they name is written again and committed."""

from __future__ import annotations

import sys
from pathlib import Path

from active_memory.harness_plugins import claude, codex, copilot, gemini
from active_memory.harness_plugins.rendering import Entry, text, write


def every_entry() -> dict[str, Entry]:
    """Every plugin file of every harness, by path from the repository root."""
    files: dict[str, Entry] = {path: text(value) for path, value in claude.files().items()}
    for harness in (gemini, codex, copilot):
        files.update(harness.entries())
    return files


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    for written in write(target, every_entry()):
        print(written)
