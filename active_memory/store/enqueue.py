"""Enqueue one session end from the session-end hook, importing as little as possible.

A SQLite store at the current schema version is written with the standard library's
`sqlite3` in one `BEGIN IMMEDIATE` transaction, waiting at most `BUSY_TIMEOUT` for the
lock (the harness is waiting for the hook). Session ends an earlier hook could not
write (the spool, store/spool.py) follow in the time that is left. Anything else (no
store yet, an older schema to migrate, a PostgreSQL URL) goes through the full store
(`open_store`), which creates or migrates it first. The decisions are
`store/queue.py`'s either way.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence

from active_memory.errors import StoreError
from active_memory.store.location import is_postgres_url
from active_memory.store.queue import (
    QUEUE_COLUMNS,
    QueueEntry,
    SessionEnd,
    plan_enqueue,
    row_to_entry,
)
from active_memory.store.sqlite_schema import APPLICATION_ID, SCHEMA_VERSION

BUSY_TIMEOUT = 1.5
"""Seconds the hook waits for another writer's lock before giving up (and logging)."""
FULL_PATH_TIMEOUT = 2.2
"""The slow path's whole budget (open, create or migrate, write). Codex clamps a
SessionEnd hook's timeout to 3 s and kills it after: the hook must log before that."""


SPOOLED_SHARE = 0.5
"""Of the time left after `end`'s own write, what spooled ends may use: the rest of the
budget is the hook's margin."""


def enqueue(
    location: str, end: SessionEnd, *, spooled: Sequence[SessionEnd] = ()
) -> tuple[QueueEntry, int]:
    """Insert or refresh `end`'s entry in the store at `location`, then the `spooled` ends
    (store/spool.py) in order while the hook's time lasts; returns `end`'s entry and how
    many of `spooled` were written. Raises on any problem with `end`'s own write."""
    started = time.monotonic()
    if not is_postgres_url(location) and os.path.isfile(location):
        try:
            done = _fast_sqlite(location, end, spooled, started)
        except sqlite3.Error as exc:
            raise StoreError(f"{location}: {exc}") from None
        if done is not None:
            return done
    return _full(location, end, spooled, started)


def _spooled_deadline(started: float) -> float:
    left = FULL_PATH_TIMEOUT - (time.monotonic() - started)
    return time.monotonic() + max(0.0, left) * SPOOLED_SHARE


def _fast_sqlite(
    path: str, end: SessionEnd, spooled: Sequence[SessionEnd], started: float
) -> tuple[QueueEntry, int] | None:
    """The stdlib path; None when the file needs the full store (not ours yet, old schema)."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
    try:
        app_id, version = conn.execute(
            "SELECT (SELECT application_id FROM pragma_application_id), "
            "(SELECT user_version FROM pragma_user_version)"
        ).fetchone()
        if app_id != APPLICATION_ID or version != SCHEMA_VERSION:
            return None
        entry = _transaction(conn, end)
        written = 0
        deadline = _spooled_deadline(started)
        for item in spooled:
            if time.monotonic() >= deadline:
                break
            try:
                _transaction(conn, item)
            except sqlite3.Error:
                break  # busy again: the rest stay spooled
            written += 1
        return entry, written
    finally:
        conn.close()


def _transaction(conn: sqlite3.Connection, end: SessionEnd) -> QueueEntry:
    conn.execute("BEGIN IMMEDIATE")
    try:
        entry = _write(conn, end, time.time())
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return entry


def _write(conn: sqlite3.Connection, end: SessionEnd, now: float) -> QueueEntry:
    key = (end.harness, end.session_id)
    select = f"SELECT {QUEUE_COLUMNS} FROM postmortem_queue WHERE harness = ? AND session_id = ?"
    row = conn.execute(select, key).fetchone()
    current = row_to_entry(row) if row else None
    values = plan_enqueue(end, current, now)
    if current is None and values is not None:
        marks = ", ".join("?" * len(values))
        conn.execute(
            f"INSERT INTO postmortem_queue ({', '.join(values)}) VALUES ({marks})",
            tuple(values.values()),
        )
    elif current is not None and values is not None:
        names = ", ".join(f"{name} = ?" for name in values)
        conn.execute(
            f"UPDATE postmortem_queue SET {names} WHERE id = ?", (*values.values(), current.id)
        )
    return row_to_entry(conn.execute(select, key).fetchone())


def _full(
    location: str, end: SessionEnd, spooled: Sequence[SessionEnd], started: float
) -> tuple[QueueEntry, int]:
    import anyio

    from active_memory.store.lesson_store import LessonStore

    async def write() -> tuple[QueueEntry, int]:
        store: LessonStore
        # One bound for the whole slow path: connecting, migrating, the writes.
        left = FULL_PATH_TIMEOUT - (time.monotonic() - started)
        with anyio.fail_after(max(left, 0.1)):
            if is_postgres_url(location):
                from active_memory.store.postgres import PostgresStore

                store = await PostgresStore.open(
                    location, busy_timeout=BUSY_TIMEOUT, connect_timeout=BUSY_TIMEOUT
                )
            else:
                from active_memory.store.sqlite import SqliteStore

                store = await SqliteStore.open(location, busy_timeout=BUSY_TIMEOUT)
            async with store:
                entry = await store.queue.enqueue(end)
                written = 0
                with anyio.move_on_after(_spooled_deadline(started) - time.monotonic()):
                    for item in spooled:
                        await store.queue.enqueue(item)
                        written += 1
                return entry, written

    return anyio.run(write)
