"""A process that opens one SQLite store twice keeps its first connection working
(issue 29: the worker opens the store once for its queue and again per postmortem).

Reading the store file's header to check it closes a descriptor of the file, which drops
every POSIX lock the process holds on it, SQLite's own included; another process then
takes the store for unused, checkpoints it and deletes its WAL, and every later statement
of the first connection failed with "disk I/O error"."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from active_memory.store import SessionEnd, open_store

WRITE_AND_LEAVE = """
import sqlite3, sys
raw = sqlite3.connect(sys.argv[1], isolation_level=None)
raw.execute("PRAGMA journal_mode = WAL")
raw.execute("CREATE TABLE IF NOT EXISTS elsewhere (x)")
raw.execute("INSERT INTO elsewhere VALUES (1)")
raw.close()
"""


@pytest.mark.asyncio
async def test_a_second_connection_in_one_process_keeps_the_first_one_working(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "lessons.sqlite3")
    async with open_store(store) as first:
        await first.queue.enqueue(SessionEnd("claude", "s-1", "", "/w", "SessionEnd"))
        for index in range(3):  # as the worker does, once per postmortem
            async with open_store(store) as second:
                assert len(await second.queue.entries()) == index + 1
            # Another process comes and goes (a hook, `queue`, a reader).
            await anyio.run_process([sys.executable, "-c", WRITE_AND_LEAVE, store])
            end = SessionEnd("claude", f"s-{index + 2}", "", "/w", "SessionEnd")
            await first.queue.enqueue(end)
        assert len(await first.queue.entries()) == 4
    assert (tmp_path / "lessons.sqlite3").stat().st_size > 0
