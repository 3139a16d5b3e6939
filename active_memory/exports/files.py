"""Reading and writing an export's files: unchanged files are not rewritten."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from active_memory.errors import UsageError


@dataclass(frozen=True, slots=True)
class Written:
    """One file an export wrote, left as it was, or removed."""

    path: Path
    action: Literal["written", "unchanged", "removed"]


def read(path: Path) -> str | None:
    """The file's text; None when it does not exist. Unreadable: `UsageError`."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read ({exc}); nothing was written") from None


def write(path: Path, before: str | None, after: str) -> Written:
    """Write `after` to `path` atomically, unless it already holds exactly that; every
    credential in it masked (lessons are screened when published: one stored before the
    screen existed may hold one)."""
    from active_memory.credential_gate import mask

    after = mask(after)
    if before == after:
        return Written(path, "unchanged")
    from active_memory.atomic_files import write_output_file

    os.makedirs(path.parent, exist_ok=True)
    write_output_file(str(path), after)
    return Written(path, "written")


def remove(path: Path) -> Written:
    """Remove a file of ours that the export no longer wants."""
    path.unlink()
    return Written(path, "removed")
