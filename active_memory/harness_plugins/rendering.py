"""The files of a harness plugin as this package renders them, and writing them.

Each plugin (docs/plugins.md) is a set of committed files: text (JSON manifests, hook
files, skills, POSIX shell launchers) and relative symbolic links to the repository's
source. `stale` says which committed files differ from the rendering (the drift tests),
`write` writes them again (`python -m active_memory.harness_plugins ROOT`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Entry:
    """One file of a plugin: a text (executable or not) or a relative symbolic link."""

    text: str | None = None
    executable: bool = False
    link: str | None = None

    def __post_init__(self) -> None:
        if (self.text is None) == (self.link is None):
            raise ValueError("an entry is either a text or a link")


def text(value: str, *, executable: bool = False) -> Entry:
    """A text file."""
    return Entry(text=value, executable=executable)


def as_json(value: Any) -> Entry:
    """A JSON file, indented as the harnesses' own files are."""
    return Entry(text=json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def link(target: str) -> Entry:
    """A relative symbolic link."""
    return Entry(link=target)


def _matches(path: Path, entry: Entry) -> bool:
    if entry.link is not None:
        return path.is_symlink() and os.readlink(path) == entry.link
    if path.is_symlink() or not path.is_file():
        return False
    if path.read_text(encoding="utf-8") != entry.text:
        return False
    return os.access(path, os.X_OK) == entry.executable


def stale(root: Path, entries: Mapping[str, Entry]) -> list[str]:
    """The paths (from `root`) whose committed file is not the rendering."""
    return [relative for relative, entry in entries.items() if not _matches(root / relative, entry)]


def write(root: Path, entries: Mapping[str, Entry]) -> list[Path]:
    """Write every entry under `root`; the paths that changed."""
    changed = []
    for relative, entry in entries.items():
        path = root / relative
        if _matches(path, entry):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        if entry.link is not None:
            os.symlink(entry.link, path)
        else:
            assert entry.text is not None
            path.write_text(entry.text, encoding="utf-8")
            path.chmod(0o755 if entry.executable else 0o644)
        changed.append(path)
    return changed
