"""Where a build reads its scope from: the store, page by page, or rows in memory.

- `SqliteSource`: a SQLite store read with the standard library (store/changes.py), a
  page of lessons per short read transaction, the catch-up of a complete build streamed
  from one transaction; a store from before change versions through the full store
  (opening migrates it);
- `StoreSource`: any store through the full store, each read on an event loop of its
  own (a PostgreSQL URL: only the background builder ever reads one);
- `ReadSource`: `read(scope, since) -> ScopeChanges` (tests, a store in memory).

`migrate` brings a SQLite store an earlier version wrote to this version's schema before
the builder reads it (the recall keys a hook's direct read needs).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from active_memory.recall import full_build
from active_memory.recall.build_from_rows import MemoryReader
from active_memory.recall.generation import record_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

    from active_memory.recall.generation import Record
    from active_memory.store.changes import ScopeChanges, ScopeKey


class Source:
    """How a build reads its scope: `changes(since, limit)` and a complete build's pages."""

    def __init__(self, scope: ScopeKey, matched: bool) -> None:
        self.scope = scope
        self.matched = matched

    def changes(self, since: int | None, limit: int | None = None) -> ScopeChanges:
        """The scope's changes since `since` (None: all its active lessons)."""
        raise NotImplementedError

    def reader(self) -> full_build.ScopeReader:
        """What a complete build reads (default: every active lesson in memory)."""
        everything = self.changes(None)
        records = [r for r in (record_of(row, matched=self.matched) for row in everything.rows)
                   if r is not None]  # fmt: skip
        return MemoryReader(records, everything.version, everything.latest)


class ReadSource(Source):
    """A source over `read(scope, since) -> ScopeChanges` (tests, a store in memory)."""

    def __init__(self, scope: ScopeKey, matched: bool, read: Callable[..., ScopeChanges]) -> None:
        super().__init__(scope, matched)
        self.read = read

    def changes(self, since: int | None, limit: int | None = None) -> ScopeChanges:
        """The scope's changes since `since`, from `read`."""
        return self.read(self.scope, since)


class SqliteSource(Source):
    """A SQLite store read with the standard library, a page at a time; a store from
    before change versions through the full store instead (opening migrates it)."""

    def __init__(self, scope: ScopeKey, matched: bool, path: str) -> None:
        super().__init__(scope, matched)
        self.path = path
        self._old: StoreSource | None = None

    def changes(self, since: int | None, limit: int | None = None) -> ScopeChanges:
        """The scope's changes since `since` (at most `limit` rows)."""
        from active_memory.store.changes import OldSchema, read_sqlite_changes

        if self._old is None:
            try:
                return read_sqlite_changes(self.path, self.scope, since, limit)
            except OldSchema:
                self._old = StoreSource(self.scope, self.matched, self.path)
        return self._old.changes(since, limit)

    def reader(self) -> full_build.ScopeReader:
        """Pages of the scope, and its changes in one streamed transaction."""
        self.changes(None, limit=0)  # finds out whether the store must be migrated first
        return self._old.reader() if self._old is not None else _SqliteReader(self)


class _SqliteReader:
    def __init__(self, source: SqliteSource) -> None:
        self.source = source

    def page(self, after: str | None, limit: int) -> tuple[int, str | None, list[Record]]:
        from active_memory.store.changes import read_sqlite_page

        version, rows = read_sqlite_page(self.source.path, self.source.scope, after, limit)
        records = [record_of(row, matched=self.source.matched) for row in rows]
        return version, str(rows[-1][0]) if rows else None, [r for r in records if r]

    @contextmanager
    def changes_since(
        self, since: int
    ) -> Iterator[tuple[int, int, Iterable[tuple[str, Record | None]]]]:
        from active_memory.store.changes import (
            _version_and_latest,
            changes_query,
            sqlite_reading,
        )

        with sqlite_reading(self.source.path) as conn:
            if conn is None:
                yield 0, 0, ()
                return
            version, latest = _version_and_latest(conn, self.source.scope)
            sql, params = changes_query(self.source.scope, since)
            rows = conn.execute(sql, params)  # a cursor: rows stream, never all at once
            matched = self.source.matched
            yield version, latest, ((str(r[0]), record_of(r, matched=matched)) for r in rows)


class StoreSource(Source):
    """Any store through the full store (a PostgreSQL URL; an old SQLite store, which
    opening migrates), each read on an event loop of its own."""

    def __init__(self, scope: ScopeKey, matched: bool, location: str) -> None:
        super().__init__(scope, matched)
        self.location = location

    def _run(self, method: str, *args: Any) -> Any:
        import anyio

        from active_memory.errors import StoreMissing
        from active_memory.store import open_store

        async def read() -> Any:
            try:
                async with open_store(self.location, create=False) as opened:
                    return await getattr(opened, method)(self.scope, *args)
            except StoreMissing:
                return None

        return _outside_event_loop(lambda: anyio.run(read))

    def changes(self, since: int | None, limit: int | None = None) -> ScopeChanges:
        """The scope's changes since `since` (at most `limit` rows)."""
        from active_memory.store.changes import ScopeChanges

        found = self._run("changes", since, limit)
        return found if found is not None else ScopeChanges(0, [], full=since is None, latest=0)

    def reader(self) -> full_build.ScopeReader:
        """Pages through `scope_page`; the catch-up as one read."""
        return _StoreReader(self)


class _StoreReader:
    def __init__(self, source: StoreSource) -> None:
        self.source = source

    def page(self, after: str | None, limit: int) -> tuple[int, str | None, list[Record]]:
        found = self.source._run("scope_page", after, limit)
        version, rows = found if found is not None else (0, [])
        records = [record_of(row, matched=self.source.matched) for row in rows]
        return version, str(rows[-1][0]) if rows else None, [r for r in records if r]

    @contextmanager
    def changes_since(
        self, since: int
    ) -> Iterator[tuple[int, int, Iterable[tuple[str, Record | None]]]]:
        found = self.source.changes(since)
        matched = self.source.matched
        yield (
            found.version,
            found.latest,
            ((str(row[0]), record_of(row, matched=matched)) for row in found.rows),
        )


def source_for(location: str, scope: ScopeKey) -> Source:
    """The source of `scope` in the store at `location`."""
    matched = scope.kind == "repository"
    if "://" in location:
        return StoreSource(scope, matched, location)
    return SqliteSource(scope, matched, location)


def migrate(location: str) -> bool:
    """Bring a SQLite store written by an earlier version to this version's schema (the
    recall keys a hook reads when a run has no generation yet), as any writer's open
    would; whether it did. A store that cannot be migrated (read-only, busy) is left as
    it is: generations are still built from it, and runs without one wait for them."""
    import sqlite3

    from active_memory.store.changes import sqlite_uri
    from active_memory.store.sqlite_schema import SCHEMA_VERSION

    if not os.path.exists(location):
        return False
    try:
        conn = sqlite3.connect(sqlite_uri(location), uri=True, timeout=5.0)
        try:
            (version,) = conn.execute("PRAGMA user_version").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    if version >= SCHEMA_VERSION or version == 0:
        return False
    import anyio

    from active_memory.errors import ActiveMemoryError
    from active_memory.store import open_store

    async def open_once() -> None:
        async with open_store(location, create=False):
            pass

    try:
        _outside_event_loop(lambda: anyio.run(open_once))
    except (ActiveMemoryError, OSError):
        return False
    return True


def _outside_event_loop(work: Callable[[], Any]) -> Any:
    """Run `work` (which starts an event loop) here, or on a thread of its own when
    this thread already runs one (a server that did not move the call to a thread)."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return work()
    import threading

    result: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="active-memory-read")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
