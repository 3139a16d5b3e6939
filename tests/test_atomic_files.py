"""The one atomic-write function: whole files or nothing, permissions, create-only."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from active_memory.atomic_files import write_atomically, write_output_file
from active_memory.errors import UsageError


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_write_replaces_the_whole_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "state.bin"
    write_atomically(target, b"first")
    write_atomically(str(target), "second é", sync=False)
    assert target.read_bytes() == "second é".encode()
    assert _names(target.parent) == ["state.bin"]


def test_chunks_are_written_in_order(tmp_path: Path) -> None:
    target = tmp_path / "big.gen"
    chunks = [bytes([n]) * 70_000 for n in range(5)]
    write_atomically(target, iter(chunks))
    assert target.read_bytes() == b"".join(chunks)


def test_a_failure_while_writing_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "state.bin"
    target.write_bytes(b"old")

    def chunks() -> Iterator[bytes]:
        yield b"new, half of it"
        raise RuntimeError("the producer failed")

    with pytest.raises(RuntimeError, match="the producer failed"):
        write_atomically(target, chunks())
    assert target.read_bytes() == b"old"
    assert _names(tmp_path) == ["state.bin"]


def test_a_full_disk_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    """A real write error (EFBIG past RLIMIT_FSIZE, as ENOSPC would be): nothing half-written."""
    target = tmp_path / "state.bin"
    target.write_bytes(b"old")
    program = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))\n"
        "from active_memory.atomic_files import write_atomically\n"
        "try:\n"
        "    write_atomically(sys.argv[1], b'x' * 1_000_000)\n"
        "except OSError as exc:\n"
        "    print(exc.errno)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, str(target)], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "27"  # EFBIG
    assert target.read_bytes() == b"old"
    assert _names(tmp_path) == ["state.bin"]


def test_a_folder_in_the_way_fails_and_leaves_no_temporary(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    with pytest.raises(OSError):
        write_atomically(tmp_path / "taken", b"data")
    assert (tmp_path / "taken").is_dir()
    assert _names(tmp_path) == ["taken"]


def test_an_existing_file_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "hook"
    target.write_text("old")
    target.chmod(0o750)
    write_atomically(target, "new")
    assert _mode(target) == 0o750


def test_an_explicit_mode_is_exact_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o077)
    try:
        write_atomically(tmp_path / "entry", "#!/bin/sh\n", mode=0o755)
    finally:
        os.umask(previous)
    assert _mode(tmp_path / "entry") == 0o755


def test_a_new_file_gets_the_umask_default(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        write_atomically(tmp_path / "new", "text")
    finally:
        os.umask(previous)
    assert _mode(tmp_path / "new") == 0o640


def test_create_only_never_overwrites_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "pin"
    write_atomically(target, "first", replace=False)
    with pytest.raises(FileExistsError):
        write_atomically(target, "second", replace=False, sync=False)
    assert target.read_text() == "first"
    assert _names(tmp_path) == ["pin"]


def test_a_reader_sees_the_old_content_or_the_new_never_a_mix(tmp_path: Path) -> None:
    target = tmp_path / "ledger"
    contents = [b"a" * 200_000, b"b" * 300_000]
    write_atomically(target, contents[0], sync=False)
    seen: set[bytes] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.add(target.read_bytes())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for n in range(200):
            write_atomically(target, contents[n % 2], sync=False)
    finally:
        stop.set()
        reader.join()
    assert seen <= set(contents)


def test_an_output_file_in_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such folder; create it first"):
        write_output_file(str(tmp_path / "absent" / "out.jsonl"), "x\n")
    assert _names(tmp_path) == []


def test_an_output_file_that_is_a_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a folder; give a file path"):
        write_output_file(str(tmp_path), "x\n")
    assert _names(tmp_path) == []
