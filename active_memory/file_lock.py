"""The package's one file lock: exclusive, between processes, bounded in time.

`FileLock(path, timeout)` holds an exclusive lock on `path` (created if missing) inside a
`with` block: `fcntl.flock` where it exists, `msvcrt.locking` on Windows, else an
`O_EXCL` lock file beside it. A holder that never lets go (a stopped process) costs a
waiter `timeout` seconds, then `TimeoutError`; `timeout=0` is one attempt. The kernel
releases a `flock` when its holder dies, so a crash never leaves a lock behind.
`is_locked(path)` probes without waiting and without creating the file.

Users: recall's session ledgers and generation builds (the hook's per-call path), the
recall server's probe before it answers on its event loop, and `init`'s session lock.
Imports only `os` and `time`: why not the `filelock` library is measured in
bench/lock_bench.py (bench/README.md, "File locks").
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any


class FileLock:
    """An exclusive lock on `path` (created if missing), held inside a `with` block."""

    __slots__ = ("_descriptor", "_kind", "path", "timeout")

    def __init__(self, path: str | os.PathLike[str], timeout: float = 5.0) -> None:
        self.path = os.fspath(path)
        self.timeout = timeout
        self._descriptor = -1
        self._kind = "flock"  # or "msvcrt", "exclusive-file"

    def __enter__(self) -> FileLock:
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
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
                self._descriptor = -1
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
                if time.monotonic() >= deadline:
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
                    if time.monotonic() >= deadline:
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
                if time.monotonic() >= deadline:
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


def is_locked(path: str | os.PathLike[str]) -> bool:
    """True when another holder has `path` locked at this instant.

    False when the file does not exist (nobody made it yet). Where `fcntl` is missing
    (Windows) the answer is always True: "cannot tell" must be read as busy.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return True
    try:
        descriptor = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)  # releases the probe's own lock
    return False
