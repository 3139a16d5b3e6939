"""The postmortem queue kept in the lesson store, written once over its dialect; every
decision is `store/queue.py`'s.

Each change is one write transaction of the dialect, which reads `now` (the store's
clock) first. Two workers never claim one entry: on SQLite the second waits for the
first's commit (`BEGIN IMMEDIATE`) and then reads the row as `running`; on PostgreSQL a
claim reads candidates with `FOR UPDATE SKIP LOCKED`, so the workers of many machines
claim disjoint entries without waiting on each other, every other change locks its one
row, and `bind_scope` holds the scope (an advisory lock) so two workers never both hold
one repository scope.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, TypeVar

from active_memory.errors import QueueEntryNotFound, UsageError
from active_memory.store.dialect import Dialect, Tx
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

_T = TypeVar("_T")
_SESSION = "harness = ? AND session_id = ?"


class PostmortemQueue:
    """The queue of settled sessions waiting for a postmortem, kept in the lesson store."""

    def __init__(self, dialect: Dialect) -> None:
        self._d = dialect

    async def _write(self, body: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run `body(tx, now, *args)` in one write transaction."""

        async def run(tx: Tx) -> _T:
            return await body(tx, await self._d.now(tx), *args)

        return await self._d.write(run)

    async def enqueue(self, end: SessionEnd) -> QueueEntry:
        """Insert or refresh the one entry of (harness, session_id); see `plan_enqueue`."""
        return await self._write(self._enqueue, end)

    async def claim(
        self, owner: str, *, limit: int, lease: float, settle: float, host: str | None = None,
        skip: Collection[int] = (),
    ) -> list[QueueEntry]:  # fmt: skip
        """Claim up to `limit` claimable entries for `owner` (oldest first); with `host`,
        only entries enqueued on that machine (or naming none); never those in `skip`
        (entries this worker already found it cannot run)."""
        if limit <= 0:
            return []
        return await self._write(self._claim, owner, limit, lease, settle, host, frozenset(skip))

    async def renew(self, entry_id: int, owner: str, lease: float) -> bool:
        """Extend `owner`'s lease; False when the entry is no longer `owner`'s."""
        return await self._write(self._renew, entry_id, owner, lease)

    async def bind_scope(self, entry_id: int, owner: str, scope: str) -> bool:
        """Hold a repository scope for a running entry; False: another worker holds it and
        the entry went back to pending (or the lease was lost)."""
        return await self._write(self._bind_scope, entry_id, owner, scope)

    async def finish(
        self, entry_id: int, owner: str, outcome: Outcome, *, reason: str = "",
        result: dict[str, Any] | None = None, retry_in: float = 0.0,
    ) -> bool:  # fmt: skip
        """End `owner`'s attempt (see `plan_finish`); False when the lease was lost."""
        return await self._write(self._finish, entry_id, owner, outcome, reason, result, retry_in)

    async def entries(self, states: Sequence[QueueState] = STATES) -> list[QueueEntry]:
        """Every entry in the given states, by ID."""
        where, param = self._d.among("state", states)
        rows = await self._d.rows(
            f"SELECT {QUEUE_COLUMNS} FROM postmortem_queue WHERE {where} ORDER BY id", param
        )
        return [row_to_entry(tuple(row)) for row in rows]

    async def retry(self, entry_id: int) -> QueueEntry:
        """Make an entry pending again; `QueueEntryNotFound` or `UsageError` (running)."""
        return await self._write(self._retry, entry_id)

    async def drop(self, entry_id: int) -> QueueEntry:
        """Delete an entry; `QueueEntryNotFound` or `UsageError` (running)."""
        return await self._write(self._drop, entry_id)

    # --- transaction bodies --------------------------------------------------------

    async def _enqueue(self, tx: Tx, now: float, end: SessionEnd) -> QueueEntry:
        key = (end.harness, end.session_id)
        current = await self._one(tx, _SESSION + self._d.lock_rows, *key)
        values = plan_enqueue(end, current, now)
        if current is None:
            assert values is not None
            marks = ", ".join("?" * len(values))
            # Two first ends of one session at once: the loser updates the winner's row.
            inserted = await tx.fetchval(
                f"INSERT INTO postmortem_queue ({', '.join(values)}) VALUES ({marks}) "
                "ON CONFLICT (harness, session_id) DO NOTHING RETURNING id",
                *values.values(),
            )
            if inserted is None:
                current = await self._one(tx, _SESSION + self._d.lock_rows, *key)
                values = plan_enqueue(end, current, now)
        if current is not None and values is not None:
            await _update(tx, current.id, values)
        found = await self._one(tx, _SESSION, *key)
        assert found is not None
        return found

    async def _claim(
        self, tx: Tx, now: float, owner: str, limit: int, lease: float, settle: float,
        host: str | None, skip: frozenset[int],
    ) -> list[QueueEntry]:  # fmt: skip
        busy = {
            row[0]
            for row in await tx.fetch(
                "SELECT scope FROM postmortem_queue WHERE state = 'running' AND holds_scope = 1 "
                "AND lease_expires > ?",
                now,
            )
        }
        # Another machine's entries are not even read: on PostgreSQL they stay unlocked
        # for that machine's workers.
        mine, hosts = ("", ()) if host is None else (" AND host IN (?, '')", (host,))
        rows = await tx.fetch(
            f"SELECT {QUEUE_COLUMNS} FROM postmortem_queue WHERE "
            "((state = 'pending' AND not_before <= ? AND (final = 1 OR last_end_at <= ?)) "
            f"OR (state = 'running' AND lease_expires <= ?)){mine} "
            f"ORDER BY not_before, id LIMIT ?{self._d.skip_locked}",
            now,
            now - settle,
            now,
            *hosts,
            limit * 4 + 16 + len(skip),
        )
        claimed: list[QueueEntry] = []
        for row in rows:
            entry = row_to_entry(tuple(row))
            if entry.id in skip or len(claimed) == limit:
                continue
            if not claimable(entry, now, settle, busy, host):
                continue
            values = plan_claim(entry, owner, now, lease)
            await _update(tx, entry.id, values)
            if values["state"] == "running":
                claimed.append(applied(entry, values))
        return claimed

    async def _renew(self, tx: Tx, now: float, entry_id: int, owner: str, lease: float) -> bool:
        changed = await tx.execute(
            "UPDATE postmortem_queue SET lease_expires = ?, updated_at = ? "
            "WHERE id = ? AND state = 'running' AND lease_owner = ?",
            now + lease,
            now,
            entry_id,
            owner,
        )
        return changed == 1

    async def _bind_scope(self, tx: Tx, now: float, entry_id: int, owner: str, scope: str) -> bool:
        entry = await self._owned(tx, entry_id, owner)
        if entry is None:
            return False
        await self._d.hold(tx, scope)
        held_by = await tx.fetchval(
            "SELECT lease_owner FROM postmortem_queue WHERE state = 'running' "
            "AND holds_scope = 1 AND scope = ? AND lease_expires > ? AND id <> ? LIMIT 1",
            scope,
            now,
            entry_id,
        )
        bound, values = plan_bind_scope(entry, scope, now, held_by)
        await _update(tx, entry_id, values)
        return bound

    async def _finish(
        self, tx: Tx, now: float, entry_id: int, owner: str, outcome: Outcome, reason: str,
        result: dict[str, Any] | None, retry_in: float,
    ) -> bool:  # fmt: skip
        entry = await self._owned(tx, entry_id, owner)
        if entry is None:
            return False
        values = plan_finish(entry, outcome, now, reason=reason, result=result, retry_in=retry_in)
        await _update(tx, entry_id, values)
        return True

    async def _retry(self, tx: Tx, now: float, entry_id: int) -> QueueEntry:
        entry = await self._changeable(tx, entry_id, now, "retry")
        await _update(tx, entry_id, plan_retry(entry, now))
        found = await self._one(tx, "id = ?", entry_id)
        assert found is not None
        return found

    async def _drop(self, tx: Tx, now: float, entry_id: int) -> QueueEntry:
        entry = await self._changeable(tx, entry_id, now, "drop")
        await tx.execute("DELETE FROM postmortem_queue WHERE id = ?", entry_id)
        return entry

    # --- helpers -------------------------------------------------------------------

    async def _one(self, tx: Tx, where: str, *params: Any) -> QueueEntry | None:
        row = await tx.fetchone(
            f"SELECT {QUEUE_COLUMNS} FROM postmortem_queue WHERE {where}", *params
        )
        return row_to_entry(tuple(row)) if row is not None else None

    async def _owned(self, tx: Tx, entry_id: int, owner: str) -> QueueEntry | None:
        entry = await self._one(tx, "id = ?" + self._d.lock_rows, entry_id)
        if entry is None or entry.state != "running" or entry.lease_owner != owner:
            return None
        return entry

    async def _changeable(self, tx: Tx, entry_id: int, now: float, verb: str) -> QueueEntry:
        entry = await self._one(tx, "id = ?" + self._d.lock_rows, entry_id)
        if entry is None:
            raise QueueEntryNotFound(entry_id)
        if lease_live(entry, now):
            raise UsageError(
                f"queue entry {entry_id} is running (worker {entry.lease_owner}); {verb} it "
                "once it finishes, or after its lease expires"
            )
        return entry


async def _update(tx: Tx, entry_id: int, values: Values) -> None:
    names = ", ".join(f"{name} = ?" for name in values)
    await tx.execute(
        f"UPDATE postmortem_queue SET {names} WHERE id = ?", *values.values(), entry_id
    )
