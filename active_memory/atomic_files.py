"""Replacing a file so that a reader sees the old content or the new, never half of it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(
    path: str | os.PathLike[str], data: str | bytes, *, mode: int | None = None
) -> None:
    """Write `data` to a temporary file beside `path`, fsync it, then rename it into place.

    `mode` sets the new file's permissions; without it an existing file keeps its own and a
    new one gets the usual default (0666 less the umask). The folder is created if needed.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def write_output_file(destination: str, text: str) -> None:
    """Write the file a command was told to write (`-o FILE`, an export's target).

    A folder at `destination`, or a folder to hold it that does not exist, is a
    `UsageError` naming it, and nothing is written.
    """
    from active_memory.errors import UsageError

    target = Path(destination)
    if target.is_dir():
        raise UsageError(f"{destination}: is a folder; give a file path")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder; create it first")
    write_atomically(target, text)
