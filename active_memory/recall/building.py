"""Bringing a scope's generation up to the store: who builds, from what, under which lock.

Time model. The store's change version orders everything; a build holds the scope's
`builder.lock` for as long as it runs (seconds for a few changes, a minute or two for a
complete build of a million lessons), so only one process builds a scope at a time. It
never holds `current.lock` for more than the rename of `CURRENT`, which is all a hook or
`serve` ever waits for (0.2 s at most, else it skips the optional record). Nobody else
waits for a builder: hooks and `serve` answer from the last good generation, or for a
run that needs a newer one, straight from the store (direct.py), while it builds.

`refresh` is one step: read the changes since `CURRENT` was checked (none in the steady
state: `CURRENT` is only advanced), make the next generation incrementally when it can
(incremental.py) or completely (full_build.py, streamed and resumable), make it current,
collect what nobody needs. `settle` repeats it until the store did not move during the
last step, and after letting go of the lock looks once more, so a change committed while
it built is never left for nobody: whoever saw it found the lock taken and relied on
this last look.

Sources: a SQLite store is read with the standard library (store/changes.py); a
PostgreSQL store (or a SQLite one not yet migrated) through the full store on an event
loop of the builder's own. A caller may also pass `read(scope, since) -> ScopeChanges`
(tests, a store in memory).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from active_memory.file_lock import FileLock
from active_memory.recall import full_build, incremental
from active_memory.recall.build_from_rows import MemoryReader
from active_memory.recall.generation import record_of
from active_memory.recall.generations import (
    BUILDER_LOCK,
    advance,
    collect,
    generation_name,
    quiet_stamp,
    read_pointer,
    replace_current,
    scope_dir,
    stamp_holds,
)
from active_memory.recall.index import SnapshotIndex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from typing import Any

    from active_memory.recall.generation import Record
    from active_memory.recall.generations import Pointer
    from active_memory.store.changes import ScopeChanges, ScopeKey

BUILD_LOCK_SECONDS = 120.0
"""How long an in-call build (a command, a test) waits for a builder that is running."""


class NeedsCompleteBuild(Exception):
    """The next generation must be built complete, and the caller does not do that."""


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


def refresh(
    recall_dir: str,
    location: str,
    scope: ScopeKey,
    source: Source | Callable[..., ScopeChanges],
    *,
    write: bool = True,
    lock_seconds: float = BUILD_LOCK_SECONDS,
    stamp: Any = None,
    complete: bool = True,
    progress: Callable[[str], None] | None = None,
    hold_lock: bool = True,
) -> str:
    """`scope`'s generation at the store's current version; its path.

    Builds the next one when the store changed (incremental, or complete unless
    `complete=False`: then `NeedsCompleteBuild`). With `write=False` (a look-only
    recall) a generation that would have to be built is written to a throwaway file
    (`….tmp`, which the caller deletes once it has opened it) and `CURRENT` stays.
    `stamp()` (a SQLite store: `sqlite_stamp` of it) lets an unchanged store go unread.
    A build takes the scope's builder lock (waiting up to `lock_seconds`) unless the
    caller holds it (`hold_lock=False`).
    """
    if not isinstance(source, Source):
        source = ReadSource(scope, scope.kind == "repository", source)
    folder = scope_dir(recall_dir, location, scope)
    pointer = read_pointer(folder)
    if stamp is not None and pointer is not None and stamp_holds(pointer, stamp):
        return os.path.join(folder, pointer.generation)  # nothing written since `checked`
    taken = quiet_stamp(stamp)  # before the read: it certifies what the read returns
    head = None
    if pointer is not None:
        # One read: in the steady state it returns no row; else the rows to build from.
        head = source.changes(pointer.checked, limit=incremental.MAX_ROWS + 1)
        if _holds_now(pointer, head):
            if write and (head.version > pointer.checked or taken is not None):
                advance(folder, pointer.generation, head.version, taken)
            return os.path.join(folder, pointer.generation)
    if not write:
        return _build(folder, pointer, source, complete, progress, head, throwaway=True)[0]
    read_at = pointer.checked if pointer is not None else None
    if not hold_lock:
        return _build_current(recall_dir, folder, source, complete, progress, taken,
                              (read_at, head))  # fmt: skip
    with FileLock(os.path.join(folder, BUILDER_LOCK), timeout=lock_seconds):
        return _build_current(recall_dir, folder, source, complete, progress, taken,
                              (read_at, head))  # fmt: skip


def _holds_now(pointer: Pointer, head: ScopeChanges) -> bool:
    """Whether the pointer's generation is the scope at the version `head` was read at:
    the store did not go back, and the scope's latest change is one it holds."""
    return bool(head.version >= pointer.checked and head.latest <= pointer.checked)


def _build_current(
    recall_dir: str,
    folder: str,
    source: Source,
    complete: bool,
    progress: Callable[[str], None] | None,
    taken: Any,
    read: tuple[int | None, ScopeChanges | None],
) -> str:
    """Build the next generation and make it current (the builder lock is held). `read`:
    the changes already read, and since which version (reused if `CURRENT` still is)."""
    pointer = read_pointer(folder)
    head = read[1] if read[0] == (pointer.checked if pointer else None) else None
    path, version, latest = _build(folder, pointer, source, complete, progress, head)
    if pointer is None or os.path.basename(path) != pointer.generation:
        replace_current(folder, os.path.basename(path), version, latest, taken)
        collect(recall_dir, folder)
    return path


def _build(
    folder: str,
    pointer: Pointer | None,
    source: Source,
    complete: bool,
    progress: Callable[[str], None] | None,
    head: ScopeChanges | None,
    *,
    throwaway: bool = False,
) -> tuple[str, int, int]:
    """Build the next generation of `folder`'s scope: (path, version, latest). A pointer
    already at the store's version (built while we waited) is returned as it is."""
    scope = source.scope
    meta = {"scope": {"kind": scope.kind, "repository": scope.repository,
                      "graph_hash": scope.graph_hash, "node": scope.node}}  # fmt: skip
    scratch = _scratch() if throwaway else ""

    def target(version: int) -> str:
        if throwaway:  # outside the state folder: a look-only recall writes nothing there
            return os.path.join(scratch, ".look-generation.tmp")
        return os.path.join(folder, generation_name(version))

    if pointer is not None:
        changes = head or source.changes(pointer.checked, limit=incremental.MAX_ROWS + 1)
        current = os.path.join(folder, pointer.generation)
        if _holds_now(pointer, changes):
            return current, pointer.checked, pointer.since  # up to date (built meanwhile)
        if changes.version >= pointer.checked and len(changes.rows) <= incremental.MAX_ROWS:
            path = target(changes.version)
            previous = SnapshotIndex.open(current)
            scoped = {**meta, "version": changes.version, "since": changes.latest}
            if incremental.build(previous, changes.rows, scoped, path, matched=source.matched):
                return path, changes.version, changes.latest
        # else: the store went back in time (another store at the same place), or too
        # much changed, or the incremental build declined: build it complete.
    if not complete:
        raise NeedsCompleteBuild(f"{scope.kind} {scope.repository or scope.node}")
    work = os.path.join(scratch or folder, "build")
    try:
        return full_build.build(work, source.reader(), meta, target, matched=source.matched,
                                progress=progress)  # fmt: skip
    except full_build.StoreWentBack:
        return full_build.build(work, source.reader(), meta, target, matched=source.matched,
                                progress=progress)  # fmt: skip


def _scratch() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="active-memory-look-")


def settle(
    recall_dir: str,
    location: str,
    scope: ScopeKey,
    *,
    progress: Callable[[str], None] | None = None,
) -> str | None:
    """The background builder's work: build until the scope is current, then let go.

    Returns the current generation's path, or None when another builder holds the
    scope (it will settle it). Looks once more after letting go (module docstring).
    """
    folder = scope_dir(recall_dir, location, scope)
    from active_memory.recall.generations import sqlite_stamp

    stamp = None if "://" in location else (lambda: sqlite_stamp(location))
    if stamp is not None:
        migrate(location)
    path = None
    for _round in range(8):
        try:
            with FileLock(os.path.join(folder, BUILDER_LOCK), timeout=0):
                source = source_for(location, scope)
                while True:
                    path = refresh(recall_dir, location, scope, source, stamp=stamp,
                                   progress=progress, hold_lock=False)  # fmt: skip
                    if _current(folder, source):
                        break
        except TimeoutError:
            return path  # another builder has it; it looks again when it lets go
        if _current(folder, source_for(location, scope)):
            return path
    return path


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


def _current(folder: str, source: Source) -> bool:
    pointer = read_pointer(folder)
    if pointer is None:
        return False
    head = source.changes(pointer.checked, limit=0)
    return head.latest <= pointer.checked and head.version >= pointer.checked


def known_scopes(recall_dir: str, location: str) -> list[tuple[ScopeKey, Any]]:
    """Every scope of the store at `location` that has a generation here, with its
    `CURRENT` (generations.Pointer)."""
    from active_memory.recall.generations import store_key
    from active_memory.store.changes import ScopeKey

    base = os.path.join(recall_dir, "generations", store_key(location))
    try:
        folders = sorted(os.listdir(base))
    except FileNotFoundError:
        return []
    found: list[tuple[ScopeKey, Any]] = []
    for name in folders:
        try:
            pointer = read_pointer(os.path.join(base, name))
            if pointer is None:
                continue
            index = SnapshotIndex.open(os.path.join(base, name, pointer.generation))
        except Exception:  # an unreadable scope is built again at its next first call
            continue
        scope = index.meta.get("scope", {})
        if scope.get("kind") in ("repository", "graph"):
            key = ScopeKey(scope["kind"], repository=scope.get("repository"),
                           graph_hash=scope.get("graph_hash"), node=scope.get("node"))  # fmt: skip
            found.append((key, pointer))
    return found


def refresh_known(recall_dir: str, location: str, *, complete: bool = False) -> list[str]:
    """Bring every scope of the store at `location` that has generations here up to date.

    Called after a write session changed the store (the command line subscribes it to
    the store's announcement), so a run's first call finds its generation current and
    only pins. An incremental step is built here; one that must be complete is handed
    to the background builder (builder.py) unless `complete`, and so is a scope whose
    builder is busy. Scopes nobody recalled yet are left to their first call. Returns
    the generation paths now current.
    """
    from active_memory.recall.background import start_builder

    current: list[str] = []
    folder_of = {}
    for key, pointer in known_scopes(recall_dir, location):
        folder_of[key.name] = scope_dir(recall_dir, location, key)
        try:
            current.append(refresh(recall_dir, location, key, source_for(location, key),
                                   complete=complete, lock_seconds=0))  # fmt: skip
        except (NeedsCompleteBuild, TimeoutError):
            start_builder(recall_dir, location, key)  # never blocks the writer
            current.append(os.path.join(folder_of[key.name], pointer.generation))
    return current


def watch_store(recall_dir: str, location: str) -> list[ScopeKey]:
    """Ask the store at `location` for its version once, and start the builder of every
    scope known here whose generation was checked at an older one (`serve` does this
    every `background.POLL_SECONDS`, so another machine's publish reaches this one). The
    builder finds out whether the scope itself changed. Returns the scopes started."""
    from active_memory.recall.background import start_builder

    known = known_scopes(recall_dir, location)
    if not known:
        return []
    version = source_for(location, known[0][0]).changes(None, limit=0).version
    started: list[ScopeKey] = []
    for key, pointer in known:
        if version != pointer.checked and start_builder(recall_dir, location, key):
            started.append(key)
    return started


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
