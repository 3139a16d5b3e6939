"""The default lesson store: one SQLite file, WAL, on aiosqlite.

Time model. Transactions of one process take turns on its one connection: each waits
for an `anyio.Lock` first (`_turn`), cancellably, before anything is shielded. Every
write is one `BEGIN IMMEDIATE` transaction. Waiting for another process's write lock is
bounded by the caller's deadline (`anyio.current_effective_deadline()`) and by the busy
timeout, whichever comes first. The wait is a series of short shielded attempts
(`LOCK_SLICE` each: aiosqlite cannot cancel a statement queued in its worker thread, so
no attempt may outlive its slice) with cancellable sleeps between them, so a deadline
fires within one slice. Once the lock is held, the body and COMMIT run shielded: a write
is never the thing a deadline interrupts, and holding the lock it waits for nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.request import pathname2url

import aiosqlite
import anyio

from active_memory.errors import (
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreTooNew,
    StoreUnavailable,
)
from active_memory.private import create_private
from active_memory.store.dialect import Dialect, Row, Tx
from active_memory.store.lesson_store import LessonStore
from active_memory.store.sqlite_file import (
    backup_destination,
    checked_path,
    count_open,
    release_claim,
)
from active_memory.store.sqlite_schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

DEFAULT_BUSY_TIMEOUT = 30.0
LOCK_SLICE = 0.05
"""The longest one shielded `BEGIN IMMEDIATE` attempt waits for another writer."""

_T = TypeVar("_T")


class _Connection(Tx):
    """`Tx` on an aiosqlite connection."""

    __slots__ = ("_conn",)

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, *params: Any) -> int:
        cursor = await self._conn.execute(sql, params)
        return cursor.rowcount

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self._conn.executemany(sql, rows)

    async def fetch(self, sql: str, *params: Any) -> list[Row]:
        return list(await self._conn.execute_fetchall(sql, params))


class SqliteDialect(Dialect):
    """SQLite's side of the store: one connection, `BEGIN IMMEDIATE` writes, the file."""

    name = "sqlite"
    replays_writes = False
    lock_rows = ""  # a write holds the whole file
    skip_locked = ""
    distinct = "IS NOT"
    renumbered = "(SELECT max(seq) + 1 FROM lesson_evidence)"

    def __init__(
        self, location: str, conn: aiosqlite.Connection, busy_timeout: float, *, read_only: bool
    ) -> None:
        self.location = location
        self.busy_timeout = busy_timeout
        self.read_only = read_only
        self._conn = conn
        self._tx = _Connection(conn)
        self._turn = anyio.Lock()
        self._counted = False  # counted in sqlite_file.OPEN_IN_THIS_PROCESS

    def among(self, column: str, values: Iterable[str]) -> tuple[str, Any]:
        return f"{column} IN (SELECT value FROM json_each(?))", json.dumps(list(values))

    def greatest(self, first: str, second: str) -> str:
        return f"max({first}, {second})"

    # --- opening -------------------------------------------------------------------

    @classmethod
    async def connect(cls, path: str | Path, *, create: bool, busy_timeout: float) -> SqliteDialect:
        """Open (and if needed create or migrate) the store at `path`.

        A file that is not ours, or of a newer schema, is refused before anything is
        written to it.
        """
        path = await anyio.to_thread.run_sync(checked_path, path, create)
        if await anyio.to_thread.run_sync(_writable, path):
            return await cls.start(str(path), str(path), busy_timeout, read_only=False)
        # A store we may not write (a read-only file or folder, a read-only mount) is
        # opened read-only: reading commands work, a write names the cause. (SQLite reads
        # a WAL store read-only even where it cannot create the -shm file.)
        uri = f"file:{pathname2url(str(path.resolve()))}?mode=ro"
        return await cls.start(str(path), uri, busy_timeout, read_only=True)

    @classmethod
    async def start(
        cls, location: str, target: str, busy_timeout: float, *, read_only: bool
    ) -> SqliteDialect:
        """Connect to `target` (a path, a `mode=ro` URI, `:memory:`) and set the store up."""
        counted = target != ":memory:"
        if counted:  # before SQLite opens the file: no header read of ours from here on
            count_open(location, +1)
        try:
            conn = await aiosqlite.connect(
                target, isolation_level=None, timeout=busy_timeout, uri=read_only
            )
        except sqlite3.Error as exc:
            if counted:
                count_open(location, -1)
            raise StoreUnavailable(location, f"cannot open the store: {exc}") from None
        dialect = cls(location, conn, busy_timeout, read_only=read_only)
        dialect._counted = counted
        return await dialect.started(dialect._migrate)

    async def _close(self) -> None:
        try:
            await self._conn.close()
        finally:
            # Uncounted once SQLite let go of the file (its last close may checkpoint).
            if self._counted:
                count_open(self.location, -1)
                self._counted = False

    async def _configure(self) -> None:
        await self._conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        await self._conn.execute("PRAGMA foreign_keys = ON")
        # Identify the file before switching it to WAL: that switch rewrites its header.
        await self._schema_version()
        if self.read_only:
            return
        await self._conn.execute("PRAGMA journal_mode = WAL")
        # FULL: a published lesson survives power loss, not only a process crash.
        await self._conn.execute("PRAGMA synchronous = FULL")

    async def _migrate(self) -> None:
        await self._configure()
        version = await self._schema_version()
        if version == SCHEMA_VERSION:
            return
        if self.read_only:
            raise StoreUnavailable(
                self.location,
                f"the store is read-only and needs an upgrade of its schema (version "
                f"{version} to {SCHEMA_VERSION}); open it once with write access",
            )
        await self._begin_immediate()
        with anyio.CancelScope(shield=True):
            try:
                # Another process may have migrated while we waited for the lock.
                version = await self._schema_version()
                for script in MIGRATIONS[version:]:
                    for statement in _statements(script):
                        await self._conn.execute(statement)
                await self._conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                await self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            except BaseException:
                await self._rollback()
                raise
            await self._conn.execute("COMMIT")

    async def _schema_version(self) -> int:
        # One statement, so the three facts come from one moment: another process may be
        # creating the store right now.
        (app_id, version, tables), *_ = await self._tx.fetch(
            "SELECT (SELECT application_id FROM pragma_application_id), "
            "(SELECT user_version FROM pragma_user_version), "
            "(SELECT count(*) FROM sqlite_schema WHERE type = 'table')"
        )
        if app_id not in (0, APPLICATION_ID):
            raise StoreCorrupt(
                self.location,
                "this SQLite file belongs to another application; nothing was changed. "
                "Pass --store with a new path or an Active Memory store",
            )
        if app_id == 0:
            if tables:
                raise StoreCorrupt(
                    self.location,
                    "this SQLite file is not an Active Memory lesson store (it has other "
                    "tables); nothing was changed. Pass --store with a new path",
                )
            return 0
        if version > SCHEMA_VERSION:
            raise StoreTooNew(self.location, version, SCHEMA_VERSION)
        return int(version)

    # --- transactions ----------------------------------------------------------------

    @asynccontextmanager
    async def reading(self, *, snapshot: bool = True) -> AsyncIterator[Tx]:
        """The connection, in its turn; with `snapshot`, inside BEGIN … COMMIT."""
        async with self._in_turn():
            with self.translated():
                if not snapshot:
                    yield self._tx
                    return
                await self._conn.execute("BEGIN")
                try:
                    yield self._tx
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._conn.execute("COMMIT")

    async def write(self, body: Callable[[Tx], Awaitable[_T]]) -> _T:
        """Run `body` inside BEGIN IMMEDIATE … COMMIT; only the waits are cancellable."""
        if self.read_only:
            raise StoreUnavailable(
                self.location,
                "the store is read-only (no write permission on the file or its folder); "
                "nothing was written. Reading commands still work",
            )
        async with self._in_turn():
            await self._begin_immediate()
            with anyio.CancelScope(shield=True), self.translated():
                try:
                    result = await body(self._tx)
                    await self._conn.execute("COMMIT")
                except BaseException:
                    await self._rollback()
                    raise
        return result

    @asynccontextmanager
    async def _in_turn(self) -> AsyncIterator[None]:
        """The connection to ourselves: at once when no other task of this process holds
        it (not even a passed deadline stops a write nobody blocks), else cancellably."""
        try:
            self._turn.acquire_nowait()
        except anyio.WouldBlock:
            await self._turn.acquire()
        try:
            yield
        finally:
            self._turn.release()

    async def now(self, tx: Tx) -> float:
        """This machine's clock (a SQLite store is one machine's)."""
        return time.time()

    async def hold(self, tx: Tx, key: str) -> None:
        """Nothing to take: a write holds the whole file already."""

    async def _begin_immediate(self) -> None:
        """`BEGIN IMMEDIATE`, waiting for other writers until the caller's deadline (then
        cancelled like any wait) or the busy timeout (then `StoreBusy`)."""
        give_up = anyio.current_time() + self.busy_timeout
        full = int(self.busy_timeout * 1000)
        with self.translated():
            while True:
                left = give_up - anyio.current_time()
                slice_ms = max(0, int(min(left, LOCK_SLICE) * 1000))
                with anyio.CancelScope(shield=True):
                    await self._conn.execute(f"PRAGMA busy_timeout = {slice_ms}")
                    try:
                        await self._conn.execute("BEGIN IMMEDIATE")
                        return
                    except sqlite3.OperationalError as exc:
                        if "locked" not in str(exc) and "busy" not in str(exc):
                            raise
                        if left <= 0:
                            raise
                    finally:
                        await self._conn.execute(f"PRAGMA busy_timeout = {full}")
                await anyio.sleep(0.005)  # the caller's deadline, if any, fires here

    async def _rollback(self) -> None:
        # A failed COMMIT (a full disk) may already have ended the transaction: then the
        # ROLLBACK's own error ("no transaction is active") must not hide the cause.
        with contextlib.suppress(sqlite3.Error):
            await self._conn.execute("ROLLBACK")

    # --- backup --------------------------------------------------------------------

    async def backup(self, destination: Path) -> None:
        """Copy the store with SQLite's online backup, then move it into place atomically.

        The destination name is claimed first with an exclusive create (an empty 0600
        file): of two backups to one new path, one wins and the other is refused. The
        copy is written beside it and renamed over the claim only when it is complete
        and sound; on any failure the claim is removed.
        """
        destination = await anyio.to_thread.run_sync(backup_destination, destination)
        partial = destination.with_name(f".{destination.name}.partial-{os.getpid()}")
        done = False
        try:
            await anyio.to_thread.run_sync(create_private, partial)
            async with self._in_turn():
                with self.translated(str(destination)):
                    target = await aiosqlite.connect(str(partial))
                    try:
                        await self._conn.backup(target)
                        result = await target.execute_fetchall("PRAGMA integrity_check")
                    finally:
                        await target.close()
            if [tuple(r) for r in result] != [("ok",)]:
                raise StoreCorrupt(str(destination), "the copy failed its integrity check")
            os.replace(partial, destination)
            done = True
        except OSError as exc:
            raise StoreUnavailable(
                str(destination), f"cannot write the backup: {exc.strerror or exc}"
            ) from None
        finally:
            partial.unlink(missing_ok=True)
            if not done:
                release_claim(destination)

    # --- errors --------------------------------------------------------------------

    @contextmanager
    def translated(self, location: str | None = None) -> Iterator[None]:
        """Turn sqlite3 errors into our error tree, naming `location` (default: the store)."""
        where = location or self.location
        try:
            yield
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "locked" in text or "busy" in text:
                raise StoreBusy(where, self.busy_timeout) from None
            raise _unavailable(where, exc) or StoreError(f"{where}: {text}") from exc
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if "malformed" in text or "not a database" in text or "corrupt" in text:
                raise StoreCorrupt(
                    where,
                    f"the store is damaged ({text}); restore a backup "
                    "(`active-memory backup` makes them)",
                ) from None
            raise _unavailable(where, exc) or StoreError(f"{where}: {text}") from exc


class SqliteStore(LessonStore):
    """A `LessonStore` in one SQLite file. Open it with `SqliteStore.open(path)`."""

    @classmethod
    async def open(
        cls, path: str | Path, *, create: bool = True, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    ) -> SqliteStore:
        """Open (and if needed create or migrate) the store at `path`; `create=False`
        refuses a missing one (`StoreMissing`)."""
        return cls(await SqliteDialect.connect(path, create=create, busy_timeout=busy_timeout))

    @classmethod
    async def in_memory(cls, location: str = ":memory:") -> SqliteStore:
        """A new, empty store that lives in memory only (named `location` in messages):
        a dry run's stand-in for a store that does not exist yet."""
        opening = SqliteDialect.start(location, ":memory:", DEFAULT_BUSY_TIMEOUT, read_only=False)
        return cls(await opening)

    async def integrity_check(self) -> list[str]:
        """SQLite's own integrity check: `["ok"]` when the file is sound."""
        return [str(row[0]) for row in await self.dialect.rows("PRAGMA integrity_check")]


def _unavailable(where: str, exc: sqlite3.Error) -> StoreUnavailable | None:
    """The real cause of a failed open or write, in words, or None if it is another error."""
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc)
    if code == sqlite3.SQLITE_FULL or "disk is full" in text:
        return StoreUnavailable(where, "the disk is full; nothing was written. Free space, retry")
    if code == sqlite3.SQLITE_READONLY or "readonly" in text:
        return StoreUnavailable(where, "is read-only (no write permission); nothing was written")
    if "unable to open" in text:
        return StoreUnavailable(
            where, "cannot open it: check that its folder exists and is readable and writable"
        )
    if "disk I/O" in text:
        return StoreUnavailable(where, f"the disk failed a read or write ({text})")
    return None


def _writable(path: Path) -> bool:
    """Whether this process may write the store file and create its journals beside it."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (trigger bodies kept whole)."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
