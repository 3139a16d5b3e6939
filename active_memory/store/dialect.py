"""What differs between the store's backends, behind one abstract class.

The store's logic (`lesson_store.py`, `writing.py`, `queue_store.py`) is written once,
over a `Dialect`, and so is its SQL: with `?` placeholders, which the PostgreSQL
dialect numbers (`$1`, `$2`, …). A dialect owns only what differs: its connections,
transactions and their retries, error translation, the schema and its migrations, and
a few short phrases of SQL (null-safe comparison, row locks, list membership). Each
backend's module states its own time model (`sqlite.py`, `postgres.py`); common to
both: a write's body and its commit run shielded, so a deadline never interrupts a
write halfway.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, Self, TypeVar

import anyio

_T = TypeVar("_T")
Row = Sequence[Any]


class Tx(Protocol):
    """One connection of the store, inside the transaction of a `reading` or a `write`
    (a backend's class may inherit `fetchone` and `fetchval` as they are here)."""

    async def execute(self, sql: str, *params: Any) -> int:
        """Run one statement; the number of rows it changed."""

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement once per row of parameters."""

    async def fetch(self, sql: str, *params: Any) -> list[Row]:
        """Every row of a query."""

    async def fetchone(self, sql: str, *params: Any) -> Row | None:
        """The first row of a query, or None."""
        rows = await self.fetch(sql, *params)
        return rows[0] if rows else None

    async def fetchval(self, sql: str, *params: Any) -> Any:
        """The first column of the first row of a query, or None."""
        row = await self.fetchone(sql, *params)
        return row[0] if row else None


class Dialect(ABC):
    """One backend of the lesson store: connections, transactions, errors, SQL phrases."""

    name: str
    """`sqlite` or `postgres` (also the key of `changes.py`'s per-backend columns)."""
    location: str
    """Where the store lives, safe to print (a URL's password masked)."""
    busy_timeout: float
    """The longest a write waits for another writer's locks (then `StoreBusy`)."""
    replays_writes: bool
    """A write's body may run more than once (retried after a deadlock): its input must
    be held whole, never a one-pass iterable."""
    lock_rows: str
    """Ends a SELECT of rows the transaction is about to change: it locks them."""
    skip_locked: str
    """Ends a SELECT of rows to claim: it locks them and skips rows others hold."""
    distinct: str
    """Null-safe "differs from"."""
    renumbered: str
    """The value that moves an evidence row to the end (a new `seq`)."""

    @abstractmethod
    def among(self, column: str, values: Iterable[str]) -> tuple[str, Any]:
        """`column` is one of `values`: the SQL (one placeholder) and its parameter."""

    @abstractmethod
    def greatest(self, first: str, second: str) -> str:
        """The larger of two SQL expressions."""

    @abstractmethod
    def reading(self, *, snapshot: bool = True) -> AbstractAsyncContextManager[Tx]:
        """A connection for reads: with `snapshot`, in one read-only transaction (every
        statement sees one state); without, each statement on its own (cheaper)."""

    async def rows(self, sql: str, *params: Any) -> list[Row]:
        """Every row of one statement, read on its own (no transaction around it)."""
        async with self.reading(snapshot=False) as tx:
            return await tx.fetch(sql, *params)

    @abstractmethod
    async def write(self, body: Callable[[Tx], Awaitable[_T]]) -> _T:
        """Run `body` in one write transaction, all or nothing, and return its result.

        The backend's errors come out as the store's (`StoreBusy`, `StoreUnavailable`, …).
        """

    @abstractmethod
    async def now(self, tx: Tx) -> float:
        """Seconds since the epoch on the store's clock (the queue's leases use it)."""

    @abstractmethod
    async def hold(self, tx: Tx, key: str) -> None:
        """Hold `key` until the transaction ends, against every other writer that holds it."""

    @abstractmethod
    async def backup(self, destination: Path) -> None:
        """Write a consistent copy of the store to `destination`, or say why not."""

    @abstractmethod
    def translated(self) -> AbstractContextManager[None]:
        """A scope that turns the backend's errors into the store's."""

    async def started(self, setup: Callable[[], Awaitable[None]]) -> Self:
        """The dialect once `setup` (identify, create or migrate the schema) succeeded;
        closed again, and the error translated, if it failed."""
        try:
            with self.translated():
                await setup()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def aclose(self) -> None:
        """Release the connections; the dialect is unusable afterwards."""
        with anyio.CancelScope(shield=True):
            await self._close()

    @abstractmethod
    async def _close(self) -> None:
        """Close the connections."""
