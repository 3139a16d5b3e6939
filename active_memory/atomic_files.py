"""Replacing a file so that a reader sees the old content or the new, never half of it.

`write_atomically` is the package's one way to write a whole file: the data goes to a
temporary file beside the target (`.<name>.<pid>-<n>.tmp`, created exclusively), is
flushed to the disk unless the caller opts out, and is renamed into place; with
`replace=False` it is hard-linked instead, so a file that appeared meanwhile is never
overwritten. Whatever fails on the way, the temporary file is removed and the target is
as it was.

Imports only `os` and `time` (the hook writes its ledger and pins through it on every
tool call); `pathlib` and the errors load only for `write_output_file`.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

_CREATE = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)


def write_atomically(
    path: str | os.PathLike[str],
    data: str | bytes | Iterable[bytes],
    *,
    mode: int | None = None,
    sync: bool = True,
    replace: bool = True,
) -> None:
    """Write `data` (text as UTF-8, bytes, or chunks of bytes) to `path` atomically.

    `mode` sets the file's permissions exactly; without it an existing file keeps its own
    and a new one gets the usual default (0666 less the umask). `sync` flushes the file
    and then its folder to the disk, so the new content survives a machine crash;
    without it a process crash still never leaves half a file. `replace=False` creates
    the file only if it does not exist: `FileExistsError` otherwise, and nothing is
    written. The folder is created if needed.
    """
    target = os.fspath(path)
    folder = os.path.dirname(target) or "."
    os.makedirs(folder, exist_ok=True)
    if mode is None:
        try:  # noqa: SIM105 - contextlib would cost the hook process an import
            mode = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            pass
    temporary, descriptor = _create_temporary(folder, os.path.basename(target), mode)
    try:
        try:
            _write_all(descriptor, data)
            if mode is not None:
                # Exactly `mode`: the umask applied at creation must not narrow it.
                os.chmod(temporary, mode)
            if sync:
                os.fsync(descriptor)
        finally:
            os.close(descriptor)
        if replace or not _linked(temporary, target):
            os.replace(temporary, target)
        else:
            try:  # noqa: SIM105 - the target is in place: a leftover name is harmless
                os.unlink(temporary)  # the target is a second name of the same file
            except OSError:
                pass
        if sync:
            _sync_folder(folder)
    except BaseException:
        try:  # noqa: SIM105 - contextlib would cost the hook process an import
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _create_temporary(folder: str, name: str, mode: int | None) -> tuple[str, int]:
    # Private (0600) while the content is written when the final mode is known, since
    # it is set afterwards; else the default a new file gets anyway (0666 less umask).
    initial = 0o600 if mode is not None else 0o666
    stem = f".{name}.{os.getpid()}-"
    while True:
        temporary = os.path.join(folder, f"{stem}{time.monotonic_ns()}.tmp")
        try:
            return temporary, os.open(temporary, _CREATE, initial)
        except FileExistsError:  # another thread of this process in the same instant
            continue


def _write_all(descriptor: int, data: str | bytes | Iterable[bytes]) -> None:
    if isinstance(data, str):
        data = data.encode("utf-8")
    chunks: Iterable[bytes] = (data,) if isinstance(data, bytes | bytearray) else data
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            written = os.write(descriptor, view)
            view = view[written:]


def _linked(temporary: str, target: str) -> bool:
    """Hard-link `temporary` as `target`: True when done; False on a file system without
    hard links once `target` was found absent (the caller renames; a narrow race
    remains). `FileExistsError` when `target` exists."""
    try:
        os.link(temporary, target)  # fails if present: the first writer's file stays
    except FileExistsError:
        raise
    except OSError:
        if os.path.lexists(target):
            raise FileExistsError(target) from None
        return False
    return True


def _sync_folder(folder: str) -> None:
    # A rename is durable once its folder is; Windows cannot open a folder for this.
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def write_output_file(destination: str, text: str) -> None:
    """Write the file a command was told to write (`-o FILE`, an export's target).

    A folder at `destination`, or a folder to hold it that does not exist, is a
    `UsageError` naming it, and nothing is written.
    """
    from pathlib import Path

    from active_memory.errors import UsageError

    target = Path(destination)
    if target.is_dir():
        raise UsageError(f"{destination}: is a folder; give a file path")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such folder; create it first")
    write_atomically(target, text)
