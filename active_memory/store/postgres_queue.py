"""The postmortem queue in a PostgreSQL store: only SQL; every decision is
`store/queue.py`'s.

Claims read candidates with `FOR UPDATE SKIP LOCKED`: the workers of many machines
claim disjoint entries without waiting on each other. Every other change locks its one
row (`FOR UPDATE`); `bind_scope` then takes a transaction-level advisory lock on the
scope, so two workers never both hold one repository scope. `now` is the server's
`clock_timestamp()`, read once per transaction. Each change runs in the store's
shielded write transaction, bounded by its lock and statement timeouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

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

if TYPE_CHECKING:
    import asyncpg

    from active_memory.store.postgres import PostgresStore

    Connection: TypeAlias = asyncpg.pool.PoolConnectionProxy[asyncpg.Record]

_NOW = "SELECT extract(epoch FROM clock_timestamp())::float8"


class PostgresQueue:
    """`PostmortemQueue` on a PostgreSQL store's pool."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    async def enqueue(self, end: SessionEnd) -> QueueEntry:
        """Insert or refresh the entry of (harness, session_id)."""
        entry: QueueEntry = await self._store._in_write_transaction(self._enqueue, end)
        return entry

    async def claim(
        self, owner: str, *, limit: int, lease: float, settle: float
    ) -> list[QueueEntry]:
        """Claim up to `limit` entries for `owner`, oldest first, skipping locked rows."""
        if limit <= 0:
            return []
        claimed: list[QueueEntry] = await self._store._in_write_transaction(
            self._claim, owner, limit, lease, settle
        )
        return claimed

    async def renew(self, entry_id: int, owner: str, lease: float) -> bool:
        """Extend `owner`'s lease of a running entry."""
        renewed: bool = await self._store._in_write_transaction(self._renew, entry_id, owner, lease)
        return renewed

    async def bind_scope(self, entry_id: int, owner: str, scope: str) -> bool:
        """Hold `scope` for `owner`'s running entry, or send it back to wait."""
        bound: bool = await self._store._in_write_transaction(
            self._bind_scope, entry_id, owner, scope
        )
        return bound

    async def finish(
        self, entry_id: int, owner: str, outcome: Outcome, *, reason: str = "",
        result: dict[str, Any] | None = None, retry_in: float = 0.0,
    ) -> bool:  # fmt: skip
        """End `owner`'s attempt; False when the lease was lost."""
        finished: bool = await self._store._in_write_transaction(
            self._finish, entry_id, owner, outcome, reason, result, retry_in
        )
        return finished

    async def entries(self, states: Sequence[QueueState] = STATES) -> list[QueueEntry]:
        """Every entry in `states`, by ID."""
        async with self._store._reading() as conn:
            rows = await conn.fetch(
                f"SELECT {QUEUE_COLUMNS} FROM postmortem_queue "
                "WHERE state = ANY($1::text[]) ORDER BY id",
                list(states),
            )
        return [row_to_entry(tuple(row)) for row in rows]

    async def retry(self, entry_id: int) -> QueueEntry:
        """Make an entry pending again (not a running one)."""
        entry: QueueEntry = await self._store._in_write_transaction(self._retry, entry_id)
        return entry

    async def drop(self, entry_id: int) -> QueueEntry:
        """Delete an entry (not a running one)."""
        entry: QueueEntry = await self._store._in_write_transaction(self._drop, entry_id)
        return entry

    # --- transaction bodies --------------------------------------------------------

    async def _enqueue(self, conn: Connection, end: SessionEnd) -> QueueEntry:
        now = float(await conn.fetchval(_NOW))
        key = "harness = $1 AND session_id = $2"
        current = await _one(conn, key + " FOR UPDATE", end.harness, end.session_id)
        values = plan_enqueue(end, current, now)
        if current is None:
            assert values is not None
            marks = ", ".join(f"${i}" for i in range(1, len(values) + 1))
            # Two first ends of one session at once: the loser updates the winner's row.
            inserted = await conn.fetchval(
                f"INSERT INTO postmortem_queue ({', '.join(values)}) VALUES ({marks}) "
                "ON CONFLICT (harness, session_id) DO NOTHING RETURNING id",
                *values.values(),
            )
            if inserted is None:
                current = await _one(conn, key + " FOR UPDATE", end.harness, end.session_id)
                values = plan_enqueue(end, current, now)
        if current is not None and values is not None:
            await _update(conn, current.id, values)
        found = await _one(conn, key, end.harness, end.session_id)
        assert found is not None
        return found

    async def _claim(
        self, conn: Connection, owner: str, limit: int, lease: float, settle: float
    ) -> list[QueueEntry]:
        now = float(await conn.fetchval(_NOW))
        busy = {
            row[0]
            for row in await conn.fetch(
                "SELECT scope FROM postmortem_queue WHERE state = 'running' "
                "AND holds_scope = 1 AND lease_expires > $1",
                now,
            )
        }
        rows = await conn.fetch(
            f"SELECT {QUEUE_COLUMNS} FROM postmortem_queue WHERE "
            "(state = 'pending' AND not_before <= $1 AND (final = 1 OR last_end_at <= $2)) "
            "OR (state = 'running' AND lease_expires <= $1) "
            "ORDER BY not_before, id LIMIT $3 FOR UPDATE SKIP LOCKED",
            now,
            now - settle,
            limit * 4 + 16,
        )
        claimed: list[QueueEntry] = []
        for row in rows:
            entry = row_to_entry(tuple(row))
            if len(claimed) == limit or not claimable(entry, now, settle, busy):
                continue
            values = plan_claim(entry, owner, now, lease)
            await _update(conn, entry.id, values)
            if values["state"] == "running":
                claimed.append(applied(entry, values))
        return claimed

    async def _renew(self, conn: Connection, entry_id: int, owner: str, lease: float) -> bool:
        now = float(await conn.fetchval(_NOW))
        status = await conn.execute(
            "UPDATE postmortem_queue SET lease_expires = $1, updated_at = $2 "
            "WHERE id = $3 AND state = 'running' AND lease_owner = $4",
            now + lease,
            now,
            entry_id,
            owner,
        )
        return bool(status == "UPDATE 1")

    async def _bind_scope(self, conn: Connection, entry_id: int, owner: str, scope: str) -> bool:
        now = float(await conn.fetchval(_NOW))
        entry = await _owned(conn, entry_id, owner)
        if entry is None:
            return False
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", scope)
        held_by = await conn.fetchval(
            "SELECT lease_owner FROM postmortem_queue WHERE state = 'running' "
            "AND holds_scope = 1 AND scope = $1 AND lease_expires > $2 AND id <> $3 LIMIT 1",
            scope,
            now,
            entry_id,
        )
        bound, values = plan_bind_scope(entry, scope, now, held_by)
        await _update(conn, entry_id, values)
        return bound

    async def _finish(
        self, conn: Connection, entry_id: int, owner: str, outcome: Outcome, reason: str,
        result: dict[str, Any] | None, retry_in: float,
    ) -> bool:  # fmt: skip
        now = float(await conn.fetchval(_NOW))
        entry = await _owned(conn, entry_id, owner)
        if entry is None:
            return False
        values = plan_finish(entry, outcome, now, reason=reason, result=result, retry_in=retry_in)
        await _update(conn, entry_id, values)
        return True

    async def _retry(self, conn: Connection, entry_id: int) -> QueueEntry:
        now = float(await conn.fetchval(_NOW))
        entry = await _changeable(conn, entry_id, now, "retry")
        await _update(conn, entry_id, plan_retry(entry, now))
        found = await _one(conn, "id = $1", entry_id)
        assert found is not None
        return found

    async def _drop(self, conn: Connection, entry_id: int) -> QueueEntry:
        now = float(await conn.fetchval(_NOW))
        entry = await _changeable(conn, entry_id, now, "drop")
        await conn.execute("DELETE FROM postmortem_queue WHERE id = $1", entry_id)
        return entry


async def _one(conn: Connection, where: str, *params: Any) -> QueueEntry | None:
    row = await conn.fetchrow(
        f"SELECT {QUEUE_COLUMNS} FROM postmortem_queue WHERE {where}", *params
    )
    return row_to_entry(tuple(row)) if row is not None else None


async def _owned(conn: Connection, entry_id: int, owner: str) -> QueueEntry | None:
    entry = await _one(conn, "id = $1 FOR UPDATE", entry_id)
    if entry is None or entry.state != "running" or entry.lease_owner != owner:
        return None
    return entry


async def _changeable(conn: Connection, entry_id: int, now: float, verb: str) -> QueueEntry:
    entry = await _one(conn, "id = $1 FOR UPDATE", entry_id)
    if entry is None:
        raise QueueEntryNotFound(entry_id)
    if lease_live(entry, now):
        raise UsageError(
            f"queue entry {entry_id} is running (worker {entry.lease_owner}); {verb} it "
            "once it finishes, or after its lease expires"
        )
    return entry


async def _update(conn: Connection, entry_id: int, values: Values) -> None:
    names = ", ".join(f"{name} = ${i}" for i, name in enumerate(values, start=1))
    await conn.execute(
        f"UPDATE postmortem_queue SET {names} WHERE id = ${len(values) + 1}",
        *values.values(),
        entry_id,
    )
