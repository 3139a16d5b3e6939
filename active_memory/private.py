"""Private by default: what Active Memory writes is readable by its owner only.

Lessons, snapshots, journals, exports, backups and logs hold what agents learned about
private code. Every entry point (`active-memory …`, the hook, the server through the
CLI) sets the process umask to `PRIVATE_UMASK`, so every file it creates is 0600 and
every folder 0700 whatever the caller's umask, including files added later by code
that never thinks about permissions. The store and backups also create their files
0600 explicitly (they are used as a library too), and `tighten` narrows files and
folders made earlier by a version that did not, with a note saying so.

Imports only `os` and `stat`: the per-tool-call hook calls `use_private_umask`.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

PRIVATE_UMASK = 0o077
FILE_MODE = 0o600
FOLDER_MODE = 0o700


def use_private_umask() -> int:
    """Set the process umask to `PRIVATE_UMASK`; return the previous one."""
    return os.umask(PRIVATE_UMASK)


def tighten(path: str | os.PathLike[str], note: Callable[[str], None] | None = None) -> bool:
    """Remove group and other permissions from an existing file or folder we own.

    Returns True when something changed (and `note` was told); False for a missing path,
    one already private, or one we may not change (another owner: left as it is).
    """
    try:
        info = os.stat(path)
    except OSError:
        return False
    current = stat.S_IMODE(info.st_mode)
    if not current & 0o077 or info.st_uid != os.getuid():
        return False
    wanted = FOLDER_MODE if stat.S_ISDIR(info.st_mode) else current & 0o700
    try:
        os.chmod(path, wanted)
    except OSError:
        return False
    if note is not None:
        note(
            f"{os.fspath(path)}: was readable by other users ({current:04o}); "
            f"now {wanted:04o} (owner only)"
        )
    return True


def create_private(path: str | os.PathLike[str]) -> None:
    """Create `path` as a new empty 0600 file; `FileExistsError` if anything is there.

    An exclusive create: two processes racing for one name cannot both succeed.
    """
    descriptor = os.open(
        path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), FILE_MODE
    )
    os.close(descriptor)
