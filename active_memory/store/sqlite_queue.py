"""The postmortem queue in a SQLite store: only SQL; every decision is `store/queue.py`'s.

Every change is one `BEGIN IMMEDIATE` transaction (the store's shielded write), so two
workers never claim one entry: the second waits for the first's commit and then reads
the row as `running`. Transactions of one process queue on an `anyio.Lock` first (one
connection, one transaction at a time), cancellably, before the shield.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import aiosqlite
import anyio

from active_memory.errors import QueueEntryNotFound, UsageError
from active_memory.store.queue import (
    QUEUE_COLUMNS,
    STATES,
    Outcome,
    QueueEntry,
    QueueState,
    SessionEnd,
    Values,
    applied,
    claimable,
    lease_live,
    plan_bind_scope,
    plan_claim,
    plan_enqueue,
    plan_finish,
    plan_retry,
    row_to_entry,
)

WriteTransaction = Callable[..., Awaitable[Any]]


class SqliteQueue:
    """`PostmortemQueue` on one SQLite store connection."""

    def __init__(
        self,
        conn: aiosqlite.Connection,
        write: WriteTransaction,
        translated: Callable[[], AbstractContextManager[None]],
    ) -> None:
        self._conn = conn
        self._write = write
        self._translated = translated  # sqlite3 errors → the store's error tree
        self._lock = anyio.Lock()

    async def _transaction(self, body: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        async with self._lock:
            return await self._write(body, time.time(), *args)

    # --- the protocol ------------------------------------------------------------

    async def enqueue(self, end: SessionEnd) -> QueueEntry:
        """Insert or refresh the entry of (harness, session_id)."""
        entry: QueueEntry = await self._transaction(self._enqueue, end)
        return entry

    async def claim(
        self, owner: str, *, limit: int, lease: float, settle: float
    ) -> list[QueueEntry]:
        """Claim up to `limit` entries for `owner`, oldest first."""
        if limit <= 0:
            return []
        claimed: list[QueueEntry] = await self._transaction(
            self._claim, owner, limit, lease, settle
        )
        return claimed

    async def renew(self, entry_id: int, owner: str, lease: float) -> bool:
        """Extend `owner`'s lease of a running entry."""
        renewed: bool = await self._transaction(self._renew, entry_id, owner, lease)
        return renewed

    async def bind_scope(self, entry_id: int, owner: str, scope: str) -> bool:
        """Hold `scope` for `owner`'s running entry, or send it back to wait."""
        bound: bool = await self._transaction(self._bind_scope, entry_id, owner, scope)
        return bound

    async def finish(
        self, entry_id: int, owner: str, outcome: Outcome, *, reason: str = "",
        result: dict[str, Any] | None = None, retry_in: float = 0.0,
    ) -> bool:  # fmt: skip
        """End `owner`'s attempt; False when the lease was lost."""
        finished: bool = await self._transaction(
            self._finish, entry_id, owner, outcome, reason, result, retry_in
        )
        return finished

    async def entries(self, states: Sequence[QueueState] = STATES) -> list[QueueEntry]:
        """Every entry in `states`, by ID."""
        marks = ", ".join("?" * len(states))
        with self._translated():
            rows = await self._conn.execute_fetchall(
                f"SELECT {QUEUE_COLUMNS} FROM postmortem_queue WHERE state IN ({marks}) "
                "ORDER BY id",
                tuple(states),
            )
        return [row_to_entry(tuple(row)) for row in rows]

    async def retry(self, entry_id: int) -> QueueEntry:
        """Make an entry pending again (not a running one)."""
        entry: QueueEntry = await self._transaction(self._retry, entry_id)
        return entry

    async def drop(self, entry_id: int) -> QueueEntry:
        """Delete an entry (not a running one)."""
        entry: QueueEntry = await self._transaction(self._drop, entry_id)
        return entry

    # --- transaction bodies (inside BEGIN IMMEDIATE) ------------------------------

    async def _enqueue(self, now: float, end: SessionEnd) -> QueueEntry:
        current = await self._one("harness = ? AND session_id = ?", end.harness, end.session_id)
        values = plan_enqueue(end, current, now)
        if current is None:
            assert values is not None
            names = ", ".join(values)
            await self._conn.execute(
                f"INSERT INTO postmortem_queue ({names}) VALUES ({', '.join('?' * len(values))})",
                tuple(values.values()),
            )
        elif values is not None:
            await self._update(current.id, values)
        found = await self._one("harness = ? AND session_id = ?", end.harness, end.session_id)
        assert found is not None
        return found

    async def _claim(
        self, now: float, owner: str, limit: int, lease: float, settle: float
    ) -> list[QueueEntry]:
        busy = {
            row[0]
            for row in await self._conn.execute_fetchall(
                "SELECT scope FROM postmortem_queue WHERE state = 'running' AND holds_scope = 1 "
                "AND lease_expires > ?",
                (now,),
            )
        }
        rows = await self._conn.execute_fetchall(
            f"SELECT {QUEUE_COLUMNS} FROM postmortem_queue WHERE "
            "(state = 'pending' AND not_before <= ? AND (final = 1 OR last_end_at <= ?)) "
            "OR (state = 'running' AND lease_expires <= ?) ORDER BY not_before, id LIMIT ?",
            (now, now - settle, now, limit * 4 + 16),
        )
        claimed: list[QueueEntry] = []
        for row in rows:
            entry = row_to_entry(tuple(row))
            if len(claimed) == limit or not claimable(entry, now, settle, busy):
                continue
            values = plan_claim(entry, owner, now, lease)
            await self._update(entry.id, values)
            if values["state"] == "running":
                claimed.append(applied(entry, values))
        return claimed

    async def _renew(self, now: float, entry_id: int, owner: str, lease: float) -> bool:
        cursor = await self._conn.execute(
            "UPDATE postmortem_queue SET lease_expires = ?, updated_at = ? "
            "WHERE id = ? AND state = 'running' AND lease_owner = ?",
            (now + lease, now, entry_id, owner),
        )
        return cursor.rowcount == 1

    async def _bind_scope(self, now: float, entry_id: int, owner: str, scope: str) -> bool:
        entry = await self._owned(entry_id, owner)
        if entry is None:
            return False
        rows = list(
            await self._conn.execute_fetchall(
                "SELECT lease_owner FROM postmortem_queue WHERE state = 'running' "
                "AND holds_scope = 1 AND scope = ? AND lease_expires > ? AND id <> ? LIMIT 1",
                (scope, now, entry_id),
            )
        )
        bound, values = plan_bind_scope(entry, scope, now, rows[0][0] if rows else None)
        await self._update(entry_id, values)
        return bound

    async def _finish(
        self, now: float, entry_id: int, owner: str, outcome: Outcome, reason: str,
        result: dict[str, Any] | None, retry_in: float,
    ) -> bool:  # fmt: skip
        entry = await self._owned(entry_id, owner)
        if entry is None:
            return False
        values = plan_finish(entry, outcome, now, reason=reason, result=result, retry_in=retry_in)
        await self._update(entry_id, values)
        return True

    async def _retry(self, now: float, entry_id: int) -> QueueEntry:
        entry = await self._changeable(entry_id, now, "retry")
        await self._update(entry_id, plan_retry(entry, now))
        found = await self._one("id = ?", entry_id)
        assert found is not None
        return found

    async def _drop(self, now: float, entry_id: int) -> QueueEntry:
        entry = await self._changeable(entry_id, now, "drop")
        await self._conn.execute("DELETE FROM postmortem_queue WHERE id = ?", (entry_id,))
        return entry

    # --- helpers -----------------------------------------------------------------

    async def _one(self, where: str, *params: Any) -> QueueEntry | None:
        rows = list(
            await self._conn.execute_fetchall(
                f"SELECT {QUEUE_COLUMNS} FROM postmortem_queue WHERE {where}", params
            )
        )
        return row_to_entry(tuple(rows[0])) if rows else None

    async def _owned(self, entry_id: int, owner: str) -> QueueEntry | None:
        entry = await self._one("id = ?", entry_id)
        if entry is None or entry.state != "running" or entry.lease_owner != owner:
            return None
        return entry

    async def _changeable(self, entry_id: int, now: float, verb: str) -> QueueEntry:
        entry = await self._one("id = ?", entry_id)
        if entry is None:
            raise QueueEntryNotFound(entry_id)
        if lease_live(entry, now):
            raise UsageError(
                f"queue entry {entry_id} is running (worker {entry.lease_owner}); {verb} it "
                "once it finishes, or after its lease expires"
            )
        return entry

    async def _update(self, entry_id: int, values: Values) -> None:
        names = ", ".join(f"{name} = ?" for name in values)
        await self._conn.execute(
            f"UPDATE postmortem_queue SET {names} WHERE id = ?", (*values.values(), entry_id)
        )
