"""State-file primitives: safe names, the session lock."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from active_memory.file_names import safe_name
from active_memory.recall.files import FileLock


def test_safe_names_are_distinct_and_never_dot_or_dotdot() -> None:
    keys = ["run:1", "run/1", "run%3A1", ".", "..", "", "a" * 300, "a" * 299 + "b", "é"]
    names = [safe_name(key) for key in keys]
    assert len(set(names)) == len(names)
    assert not any(name in ("", ".", "..") or "/" in name or ":" in name for name in names)
    assert all(len(name) <= 120 for name in names)


def test_a_lock_held_elsewhere_times_out_instead_of_hanging(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    holder = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        start = time.monotonic()
        with pytest.raises(TimeoutError), FileLock(str(path), timeout=0.2):
            pass
        assert 0.2 <= time.monotonic() - start < 2
    finally:
        os.close(holder)
    with FileLock(str(path), timeout=0.2):  # free again
        pass


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
