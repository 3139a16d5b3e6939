"""The organization-wide lesson store: PostgreSQL, on asyncpg.

Concurrency rule: every write runs at READ COMMITTED and takes row locks in one fixed
order (`writing.py`): the ID counter row first, then the lesson rows it reads, with
`SELECT … ORDER BY id FOR UPDATE`. The revision check reads the locked, latest committed
rows, so a lost update is impossible, and the fixed order leaves no lock cycle. Should
the server still report a deadlock, a serialization failure or a unique-key race (two
imports adding one ID), the whole transaction is rolled back and run again a few times
(tenacity); if that keeps failing, or a lock is not granted within the busy timeout, the
caller gets `StoreBusy` and nothing is written.

Time model. The write transaction runs in a shielded cancel scope, as in the SQLite
store: a caller's deadline takes effect after COMMIT or ROLLBACK, never between. Waiting
for row locks inside the shield is bounded by the caller's deadline as well as the busy
timeout (at least `LOCK_SLICE`, so a write nobody blocks still happens after its
deadline), and waiting for a pool connection by the busy timeout. The URL's password
never leaves this module: `location` and every message use the masked URL.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeAlias, TypeVar, cast
from urllib.parse import unquote, urlsplit

import anyio
import asyncpg
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from active_memory.errors import (
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreMissing,
    StoreTooNew,
    StoreUnavailable,
    UsageError,
)
from active_memory.store.dialect import Dialect, Row, Tx
from active_memory.store.lesson_store import LessonStore
from active_memory.store.location import mask_url
from active_memory.store.postgres_schema import (
    MIGRATION_LOCK,
    MIGRATIONS,
    SCHEMA_VERSION,
    TABLES,
    VERSION_TABLE,
)

DEFAULT_BUSY_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 10.0
LOCK_SLICE = 0.05
"""The least time a write waits for row locks, even past its caller's deadline."""
WRITE_ATTEMPTS = 5  # runs of one write transaction before a retryable failure is reported
POOL_SIZE = 4

_T = TypeVar("_T")
Connection: TypeAlias = "asyncpg.pool.PoolConnectionProxy[asyncpg.Record]"


@lru_cache(maxsize=1024)
def numbered(sql: str) -> str:
    """`sql` with each `?` outside a quoted literal as PostgreSQL's `$1`, `$2`, …"""
    parts = sql.split("'")
    count = 0
    for i in range(0, len(parts), 2):  # even parts lie outside quotes
        pieces = parts[i].split("?")
        text = pieces[0]
        for piece in pieces[1:]:
            count += 1
            text += f"${count}{piece}"
        parts[i] = text
    return "'".join(parts)


class _Connection(Tx):
    """`Tx` on an asyncpg connection: the statements' placeholders numbered."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, *params: Any) -> int:
        status = await self._conn.execute(numbered(sql), *params)
        count = status.rpartition(" ")[2]
        return int(count) if count.isdigit() else 0

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self._conn.executemany(numbered(sql), rows)

    async def fetch(self, sql: str, *params: Any) -> list[Row]:
        return cast("list[Row]", await self._conn.fetch(numbered(sql), *params))

    async def fetchone(self, sql: str, *params: Any) -> Row | None:
        return cast("Row | None", await self._conn.fetchrow(numbered(sql), *params))

    async def fetchval(self, sql: str, *params: Any) -> Any:
        return await self._conn.fetchval(numbered(sql), *params)


class _Retry(Exception):
    """A write transaction failed in a way that running it again can cure."""


class PostgresDialect(Dialect):
    """PostgreSQL's side of the store: a pool, row locks, retried write transactions."""

    name = "postgres"
    replays_writes = True
    lock_rows = " FOR UPDATE"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    distinct = "IS DISTINCT FROM"
    renumbered = "DEFAULT"

    def __init__(
        self, location: str, secret: str | None, pool: asyncpg.Pool[asyncpg.Record],
        busy_timeout: float,
    ) -> None:  # fmt: skip
        self.location = location
        self.busy_timeout = busy_timeout
        self._secret = secret
        self._pool = pool

    def among(self, column: str, values: Iterable[str]) -> tuple[str, Any]:
        return f"{column} = ANY(?::text[])", list(values)

    def greatest(self, first: str, second: str) -> str:
        return f"GREATEST({first}, {second})"

    # --- opening -------------------------------------------------------------------

    @classmethod
    async def connect(
        cls, url: str, *, create: bool, busy_timeout: float, connect_timeout: float
    ) -> PostgresDialect:
        """Connect to the database at `url`, creating or migrating the schema if needed."""
        location = mask_url(url)
        secret = url_password(url)
        try:
            pool = await asyncpg.create_pool(
                url, min_size=1, max_size=POOL_SIZE, timeout=connect_timeout,
                init=_init_connection, server_settings={"DateStyle": "ISO", "TimeZone": "UTC"},
            )  # fmt: skip
        except Exception as exc:
            raise connect_error(location, secret, exc) from None
        dialect = cls(location, secret, pool, busy_timeout)
        return await dialect.started(lambda: dialect._migrate(create))

    async def _close(self) -> None:
        await self._pool.close()

    async def _migrate(self, create: bool) -> None:
        async with self._pool.acquire() as conn:
            version = await self._schema_version(conn)
            if version == SCHEMA_VERSION:
                return
            if version == 0 and not create:
                raise StoreMissing(self.location)
            with anyio.CancelScope(shield=True):
                async with conn.transaction():
                    # Concurrent openers queue here; the lock ends with the transaction.
                    await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
                    version = await self._schema_version(conn)
                    for statements in MIGRATIONS[version:]:
                        for statement in statements:
                            await conn.execute(statement)
                    await conn.execute(f"UPDATE {VERSION_TABLE} SET version = $1", SCHEMA_VERSION)

    async def _schema_version(self, conn: Connection) -> int:
        """0 for a database without our schema; refuse one holding our table names only."""
        # One statement, so both facts come from one moment: another process may be
        # creating the store right now.
        row = await conn.fetchrow(
            "SELECT to_regclass($1) IS NOT NULL, ARRAY(SELECT tablename FROM pg_tables "
            "WHERE schemaname = current_schema() AND tablename = ANY($2::text[]))",
            VERSION_TABLE,
            list(TABLES),
        )
        assert row is not None
        has_version, clashes = row[0], list(row[1])
        if has_version:
            version = int(await conn.fetchval(f"SELECT version FROM {VERSION_TABLE}"))
            if version > SCHEMA_VERSION:
                raise StoreTooNew(self.location, version, SCHEMA_VERSION)
            return version
        if clashes:
            names = ", ".join(sorted(clashes))
            raise StoreCorrupt(
                self.location,
                f"this database has tables named like the store's ({names}) but is not an "
                "Active Memory lesson store; nothing was changed. Use another database",
            )
        return 0

    # --- transactions ----------------------------------------------------------------

    @asynccontextmanager
    async def reading(self, *, snapshot: bool = True) -> AsyncIterator[Tx]:
        """A pooled connection; with `snapshot`, in a REPEATABLE READ, read-only transaction."""
        with self.translated():
            async with self._pool.acquire() as conn:
                if not snapshot:
                    yield _Connection(conn)
                    return
                async with conn.transaction(isolation="repeatable_read", readonly=True):
                    yield _Connection(conn)

    async def write(self, body: Callable[[Tx], Awaitable[_T]]) -> _T:
        """Run `body` in one READ COMMITTED transaction, shielded; retry retryable failures."""
        left = anyio.current_effective_deadline() - anyio.current_time()
        lock_wait = f"{max(1, int(min(self.busy_timeout, max(left, LOCK_SLICE)) * 1000))}ms"
        timeout = f"{int(self.busy_timeout * 1000)}ms"
        retrying = AsyncRetrying(
            stop=stop_after_attempt(WRITE_ATTEMPTS), wait=wait_exponential(multiplier=0.01),
            retry=retry_if_exception_type(_Retry), sleep=anyio.sleep, reraise=True,
        )  # fmt: skip
        with anyio.CancelScope(shield=True), self.translated(), contextlib.suppress(_Retry):
            async with self._pool.acquire(timeout=self.busy_timeout) as conn:
                async for attempt in retrying:
                    with attempt:
                        async with conn.transaction():
                            # Bounds inside the shield: no lock or statement waits forever.
                            await conn.execute(f"SET LOCAL lock_timeout = '{lock_wait}'")
                            await conn.execute(f"SET LOCAL statement_timeout = '{timeout}'")
                            try:
                                return await body(_Connection(conn))
                            except (
                                asyncpg.DeadlockDetectedError,
                                asyncpg.SerializationError,
                            ) as exc:
                                raise _Retry from exc
                            except asyncpg.UniqueViolationError as exc:
                                if exc.constraint_name != "lessons_pkey":
                                    raise
                                raise _Retry from exc
        raise StoreBusy(self.location, self.busy_timeout)

    async def now(self, tx: Tx) -> float:
        """The server's clock: the workers of many machines agree on when a lease expires."""
        return float(await tx.fetchval("SELECT extract(epoch FROM clock_timestamp())::float8"))

    async def hold(self, tx: Tx, key: str) -> None:
        """A transaction-level advisory lock on `key`."""
        await tx.execute("SELECT pg_advisory_xact_lock(hashtext(?))", key)

    async def backup(self, destination: Path) -> None:
        """Refused: a PostgreSQL store is backed up with the server's own tools."""
        raise UsageError(
            f"{self.location} is a PostgreSQL store; back it up with the server's tools, "
            "e.g. `pg_dump --format=custom --file=lessons.dump <database>` "
            "and restore with `pg_restore` (see docs/store.md)"
        )

    # --- errors --------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        """`text` with the password (should a driver message carry it) masked."""
        return text.replace(self._secret, "***") if self._secret else text

    @contextmanager
    def translated(self) -> Iterator[None]:
        """Turn asyncpg and connection errors into our error tree, with the masked URL."""
        try:
            yield
        except (asyncpg.LockNotAvailableError, asyncpg.QueryCanceledError):
            raise StoreBusy(self.location, self.busy_timeout) from None
        except asyncpg.InsufficientPrivilegeError as exc:
            raise StoreUnavailable(
                self.location,
                f"missing permission: {self._scrub(str(exc))}. The role needs CREATE on the "
                "schema to create the store, then SELECT, INSERT, UPDATE and DELETE on its "
                "tables",
            ) from None
        except (asyncpg.PostgresConnectionError, asyncpg.InterfaceError, OSError) as exc:
            raise StoreUnavailable(
                self.location, f"lost the connection to the server: {self._scrub(str(exc))}"
            ) from None
        except asyncpg.PostgresError as exc:
            raise StoreError(f"{self.location}: {self._scrub(str(exc))}") from None


class PostgresStore(LessonStore):
    """A `LessonStore` in a PostgreSQL database. Open it with `PostgresStore.open(url)`."""

    @classmethod
    async def open(
        cls, url: str, *, create: bool = True, busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> PostgresStore:  # fmt: skip
        """Connect to the database at `url`, creating or migrating the schema if needed.

        `create=False` refuses a database without the store's schema (`StoreMissing`).
        An unreachable server, a refused login or a missing permission is
        `StoreUnavailable` (exit 2), with the password masked.
        """
        timeouts = {"busy_timeout": busy_timeout, "connect_timeout": connect_timeout}
        return cls(await PostgresDialect.connect(url, create=create, **timeouts))


async def _init_connection(conn: asyncpg.Connection[asyncpg.Record]) -> None:
    # Times travel as text, as SQLite keeps them: ISO strings in, the same strings out.
    await conn.set_type_codec(
        "timestamptz", schema="pg_catalog", encoder=str, decoder=_iso, format="text"
    )


def _iso(text: str) -> str:
    """PostgreSQL's ISO output (`2026-12-02 15:06:00.1+00`) as Python writes it."""
    return datetime.fromisoformat(text).isoformat()


def url_password(url: str) -> str | None:
    """The password in `url`, to mask it wherever it might show, or None."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


def connect_error(location: str, secret: str | None, exc: Exception) -> StoreUnavailable:
    """A clear, password-free reason why connecting failed."""
    text = str(exc)
    if secret:
        text = text.replace(secret, "***")
    reason: str
    if isinstance(
        exc, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError
    ):
        reason = f"the server refused the login ({text}); check the user and password"
    elif isinstance(exc, asyncpg.InvalidCatalogNameError):
        reason = f"{text}; create it first (`createdb`) or fix the database name"
    elif isinstance(exc, asyncpg.InsufficientPrivilegeError):
        reason = f"missing permission to connect: {text}"
    elif isinstance(exc, TimeoutError):
        reason = "the server did not answer in time; check the host and port"
    elif isinstance(exc, ssl.SSLError):
        reason = (
            f"the TLS connection failed ({text}); check the URL's sslmode and sslrootcert "
            '(docs/store.md, "TLS")'
        )
    elif isinstance(exc, OSError):
        reason = f"cannot reach the PostgreSQL server ({text}); is it running at that address?"
    elif isinstance(exc, asyncpg.PostgresError | asyncpg.InterfaceError | ValueError):
        reason = f"cannot connect: {text}"
    else:
        raise exc
    return StoreUnavailable(location, reason)
