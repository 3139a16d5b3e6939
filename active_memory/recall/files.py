"""Small file primitives recall's state needs: appends and reads.

Every state file lives under `<zeroshot state dir>/active-memory/recall/`. Writers
replace whole files atomically (`active_memory.atomic_files.write_atomically`), append
one record per `write` on an `O_APPEND` descriptor (one short line, so concurrent
appenders never interleave), and serialise read-modify-write cycles with the package's
file lock (`active_memory.file_lock.FileLock`).
"""

from __future__ import annotations

import os

from active_memory.reader import NotReadable, open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass


def append_line(path: str, line: str, *, sync: bool = False) -> None:
    """Append one line (a newline is added) with a single `write` on an `O_APPEND` file.

    `sync` also flushes it to the disk before returning (`fdatasync`), so it survives a
    machine crash, not only a process crash.
    """
    descriptor = append_open(path, line)
    try:
        if sync:
            sync_data(descriptor)
    finally:
        os.close(descriptor)


def append_open(path: str, line: str) -> int:
    """`append_line` without the sync, returning the file's still-open descriptor: the
    caller flushes it (`sync_data`) when it chooses, then closes it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(descriptor, (line + "\n").encode("utf-8"))
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def sync_data(descriptor: int) -> None:
    """Flush the file's data to the disk (`fdatasync`; `fsync` where it is missing)."""
    (getattr(os, "fdatasync", None) or os.fsync)(descriptor)


def read_bytes(path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        with open_regular(path) as handle:
            return handle.read()
    except NotReadable as exc:
        # Judged at the open: another process may create the file a moment later (a
        # scope's first `CURRENT`), and that is still "not there yet", not an error.
        if exc.missing:
            return None
        raise OSError(str(exc)) from None
