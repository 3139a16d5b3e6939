"""The one file lock: exclusive between processes, bounded waits, a probe that never waits."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from active_memory.file_lock import FileLock, is_locked

_HOLD = """
import sys, time
from active_memory.file_lock import FileLock
with FileLock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_lock_held_elsewhere_times_out_instead_of_hanging(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    holder = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        start = time.monotonic()
        with pytest.raises(TimeoutError, match=r"lock held over 0\.2 s"), FileLock(path, 0.2):
            pass
        assert 0.2 <= time.monotonic() - start < 2
    finally:
        os.close(holder)
    with FileLock(str(path), timeout=0.2):  # free again
        pass


def test_timeout_zero_is_one_attempt(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    with FileLock(path):
        start = time.monotonic()
        with pytest.raises(TimeoutError), FileLock(path, timeout=0):
            pass
        assert time.monotonic() - start < 0.05


def test_a_lock_is_exclusive_between_processes_and_freed_when_its_holder_dies(
    tmp_path: Path,
) -> None:
    path = tmp_path / "locks" / "07.lock"
    with subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as holder:  # fmt: skip
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            assert is_locked(path)
            with pytest.raises(TimeoutError), FileLock(path, timeout=0.1):
                pass
        finally:
            holder.kill()  # never released by the holder itself: the kernel frees it
            holder.wait()
    assert not is_locked(path)
    with FileLock(path, timeout=0.1):
        assert is_locked(path)  # our own lock, seen from another descriptor
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)


def test_the_probe_never_creates_the_lock_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.lock"
    assert not is_locked(path)
    assert not path.exists()


def test_a_failed_attempt_leaves_no_descriptor_open(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    before = len(os.listdir("/proc/self/fd"))
    with FileLock(path):
        for _ in range(20):
            with pytest.raises(TimeoutError), FileLock(path, timeout=0):
                pass
    assert len(os.listdir("/proc/self/fd")) == before


def test_without_fcntl_or_msvcrt_an_exclusive_file_serialises(tmp_path: Path) -> None:
    path = str(tmp_path / "s.lock")
    first = FileLock(path, timeout=0.2)
    first._enter_without_fcntl()  # on Linux `msvcrt` is missing: the O_EXCL file is used
    assert os.path.exists(path + ".held")
    second = FileLock(path, timeout=0.2)
    with pytest.raises(TimeoutError):
        second._enter_without_fcntl()
    first.__exit__(None, None, None)
    assert not os.path.exists(path + ".held")
    second._enter_without_fcntl()
    second.__exit__(None, None, None)
