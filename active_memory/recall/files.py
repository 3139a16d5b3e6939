"""Small file primitives recall's state needs: appends, reads, locks.

Every state file lives under `<zeroshot state dir>/active-memory/recall/`. Writers
replace whole files atomically (`active_memory.atomic_files.write_atomically`), append
one record per `write` on an `O_APPEND` descriptor (one short line, so concurrent
appenders never interleave), and serialise read-modify-write cycles with an exclusive
lock: `fcntl.flock` where it exists, `msvcrt.locking` on Windows, else an `O_EXCL` lock
file.
"""

from __future__ import annotations

import os
import time

from active_memory.reader import NotReadable, open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any


def append_line(path: str, line: str, *, sync: bool = False) -> None:
    """Append one line (a newline is added) with a single `write` on an `O_APPEND` file.

    `sync` also flushes it to the disk before returning (`fdatasync`), so it survives a
    machine crash, not only a process crash.
    """
    os.makedirs(os.path.dirname(path), exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(descriptor, (line + "\n").encode("utf-8"))
        if sync:
            (getattr(os, "fdatasync", None) or os.fsync)(descriptor)
    finally:
        os.close(descriptor)


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


class FileLock:
    """An exclusive lock on `path` (created if missing), held inside a `with` block."""

    __slots__ = ("_descriptor", "_kind", "path", "timeout")

    def __init__(self, path: str, timeout: float = 5.0) -> None:
        self.path = path
        self.timeout = timeout
        self._descriptor = -1
        self._kind = "flock"  # or "msvcrt", "exclusive-file"

    def __enter__(self) -> FileLock:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        try:
            import fcntl
        except ImportError:
            fcntl = None  # type: ignore[assignment]
        if fcntl is not None:
            self._descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                self._flock(fcntl)
            except BaseException:
                os.close(self._descriptor)
                raise
            return self
        self._enter_without_fcntl()  # pragma: no cover - Windows
        return self

    def _flock(self, fcntl: Any) -> None:
        # Non-blocking attempts with a short back-off, so that a holder that never lets go
        # (a stopped process) costs this call `timeout` seconds, not the tool call forever.
        deadline = time.monotonic() + self.timeout
        pause = 0.0005
        while True:
            try:
                fcntl.flock(self._descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.path}: lock held over {self.timeout:g} s") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.01)

    def _enter_without_fcntl(self) -> None:  # pragma: no cover - Windows
        deadline = time.monotonic() + self.timeout
        try:
            import msvcrt
        except ImportError:
            msvcrt = None  # type: ignore[assignment]
        if msvcrt is not None:
            self._descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            while True:
                try:
                    msvcrt.locking(self._descriptor, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
                    self._kind = "msvcrt"
                    return
                except OSError:
                    if time.monotonic() > deadline:
                        os.close(self._descriptor)
                        raise TimeoutError(f"{self.path}: lock held too long") from None
                    time.sleep(0.002)
        exclusive = self.path + ".held"
        while True:
            try:
                self._descriptor = os.open(exclusive, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                self._kind = "exclusive-file"
                return
            except FileExistsError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{exclusive}: lock held too long") from None
                time.sleep(0.002)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        descriptor, self._descriptor = self._descriptor, -1
        if self._kind == "msvcrt":  # pragma: no cover - Windows
            import msvcrt

            os.lseek(descriptor, 0, os.SEEK_SET)
            msvcrt.locking(descriptor, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        os.close(descriptor)  # releases a flock
        if self._kind == "exclusive-file":  # pragma: no cover - neither fcntl nor msvcrt
            os.unlink(self.path + ".held")
