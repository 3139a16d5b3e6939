"""The default lesson store: one SQLite file, WAL, on aiosqlite.

Every write is one `BEGIN IMMEDIATE` transaction. Time model: waiting for another
writer's lock is bounded by the caller's deadline (`anyio.current_effective_deadline()`)
and by the busy timeout, whichever comes first. The wait is a series of short shielded
attempts (`LOCK_SLICE` each: aiosqlite cannot cancel a statement queued in its worker
thread, so no attempt may outlive its slice) with cancellable sleeps between them, so a
deadline fires within one slice. Once the lock is held, the body and COMMIT run
shielded: a write is never the thing a deadline interrupts, and holding the lock it
waits for nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.request import pathname2url

import aiosqlite
import anyio

from active_memory.errors import (
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreMissing,
    StoreTooNew,
    StoreUnavailable,
    UsageError,
)
from active_memory.lessons import (
    Author,
    HistoryEntry,
    Lesson,
    Mutation,
    PublishReceipt,
    Tombstone,
    utcnow,
)
from active_memory.private import FOLDER_MODE, create_private, tighten
from active_memory.store.candidates import (
    CANDIDATE_COLUMNS,
    CANDIDATES_KEPT,
    Candidate,
    Consumed,
    candidate_rows,
    consumed_rows,
    row_to_candidate,
)
from active_memory.store.changes import ScopeChanges, ScopeKey, changes_query
from active_memory.store.effectiveness import (
    DAY_POINT_SQL,
    EFFECTIVENESS_COLUMNS,
    EVENT_POINT_SQL,
    EVENTS_SINCE_KEY,
    Effectiveness,
    EffectivenessHistory,
    RunObservation,
    event_rows,
    observation_rows,
    row_to_effectiveness,
    row_to_point,
    since_iso,
)
from active_memory.store.location import default_store_path
from active_memory.store.planning import (
    Current,
    check_distinct_records,
    check_distinct_targets,
    check_revert,
    chunks,
    create_count,
    merge_reports,
    next_number_after,
    plan_import,
    plan_publish,
    plan_revert,
    touched_ids,
)
from active_memory.store.protocol import (
    MARK_PREFIX,
    ImportReport,
    LessonQuery,
    LessonSummary,
    PublishMark,
)
from active_memory.store.review import Proposal, ProposedMutation, ReviewDecision
from active_memory.store.rows import (
    HISTORY_COLUMNS,
    LESSON_COLUMNS,
    collector_paused,
    row_scope,
    row_to_history,
    row_to_model,
)
from active_memory.store.sqlite_queue import SqliteQueue
from active_memory.store.sqlite_rows import load_evidence, write_changes
from active_memory.store.sqlite_schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

SQLITE_HEADER = b"SQLite format 3\x00"
_ADD_COUNTS = (
    ", ".join(
        f"{name} = lesson_effectiveness.{name} + excluded.{name}"
        for name in EFFECTIVENESS_COLUMNS.split(", ")[:4]
    )
    + ", last_run_id = excluded.last_run_id"
)
DEFAULT_BUSY_TIMEOUT = 30.0
LOCK_SLICE = 0.05
"""The longest one shielded `BEGIN IMMEDIATE` attempt waits for another writer."""

_T = TypeVar("_T")


class SqliteStore:
    """A `LessonStore` in one SQLite file. Open it with `SqliteStore.open(path)`."""

    def __init__(self, path: Path, conn: aiosqlite.Connection, busy_timeout: float) -> None:
        self._path = path
        self._conn = conn
        self._busy_timeout = busy_timeout
        self._read_only = False
        self._queue: SqliteQueue | None = None

    @property
    def location(self) -> str:
        """The store's file path."""
        return str(self._path)

    @property
    def queue(self) -> SqliteQueue:
        """The postmortem queue kept in this store (store/queue.py)."""
        if self._queue is None:
            self._queue = SqliteQueue(self._conn, self._in_write_transaction, self._translated)
        return self._queue

    # --- opening -------------------------------------------------------------------

    @classmethod
    async def open(
        cls, path: str | Path, *, create: bool = True, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    ) -> SqliteStore:
        """Open (and if needed create or migrate) the store at `path`.

        A file that is not ours, or of a newer schema, is refused before anything is
        written to it.
        """
        path = await anyio.to_thread.run_sync(_checked_path, path, create)
        read_only = not await anyio.to_thread.run_sync(_writable, path)
        if not read_only:
            return await cls._connect(path, str(path), busy_timeout, read_only=False)
        # A store we may not write (a read-only file or folder, a read-only mount) is
        # opened read-only: reading commands work, a write names the cause. (SQLite reads
        # a WAL store read-only even where it cannot create the -shm file.)
        uri = f"file:{pathname2url(str(path.resolve()))}?mode=ro"
        return await cls._connect(path, uri, busy_timeout, read_only=True)

    @classmethod
    async def _connect(
        cls, path: Path, target: str, busy_timeout: float, *, read_only: bool
    ) -> SqliteStore:
        try:
            conn = await aiosqlite.connect(
                target, isolation_level=None, timeout=busy_timeout, uri=read_only
            )
        except sqlite3.Error as exc:
            raise StoreUnavailable(str(path), f"cannot open the store: {exc}") from None
        store = cls(path, conn, busy_timeout)
        store._read_only = read_only
        try:
            with store._translated():
                await store._configure()
                await store._migrate()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await conn.close()
            raise
        return store

    async def aclose(self) -> None:
        """Close the connection."""
        with anyio.CancelScope(shield=True):
            await self._conn.close()

    async def __aenter__(self) -> SqliteStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _configure(self) -> None:
        await self._conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
        await self._conn.execute("PRAGMA foreign_keys = ON")
        # Identify the file before switching it to WAL: that switch rewrites its header.
        await self._schema_version()
        if self._read_only:
            return
        await self._conn.execute("PRAGMA journal_mode = WAL")
        # FULL: a published lesson survives power loss, not only a process crash.
        await self._conn.execute("PRAGMA synchronous = FULL")

    async def _migrate(self) -> None:
        version = await self._schema_version()
        if version == SCHEMA_VERSION:
            return
        if self._read_only:
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

    async def _rollback(self) -> None:
        # A failed COMMIT (a full disk) may already have ended the transaction: then the
        # ROLLBACK's own error ("no transaction is active") must not hide the cause.
        with contextlib.suppress(sqlite3.Error):
            await self._conn.execute("ROLLBACK")

    async def _schema_version(self) -> int:
        # One statement, so the three facts come from one moment: another process may be
        # creating the store right now.
        rows = list(
            await self._conn.execute_fetchall(
                "SELECT (SELECT application_id FROM pragma_application_id), "
                "(SELECT user_version FROM pragma_user_version), "
                "(SELECT count(*) FROM sqlite_schema WHERE type = 'table')"
            )
        )
        app_id, version, tables = rows[0]
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

    # --- reading -------------------------------------------------------------------

    async def get(self, lesson_id: str) -> Lesson | Tombstone | None:
        """One lesson or tombstone by ID."""
        with self._translated():
            rows = await self._conn.execute_fetchall(
                f"SELECT {LESSON_COLUMNS} FROM lessons WHERE id = ?", (lesson_id,)
            )
            found = await self._hydrate(list(rows))
        return found[0] if found else None

    def _select_sql(self, query: LessonQuery | None, columns: str) -> tuple[str, list[Any]]:
        """The SELECT of `columns` of the lessons `query` names, ordered by ID."""
        query = query or LessonQuery()
        clauses: list[str] = []
        params: list[Any] = []
        if query.kind is not None:
            clauses.append("scope_kind = ?")
            params.append(query.kind)
        if query.repository is not None:
            clauses.append("repository = ?")
            params.append(query.repository)
        if query.graph_hash is not None:
            clauses.append("graph_hash = ?")
            params.append(query.graph_hash)
        if query.node is not None:
            clauses.append("node = ?")
            params.append(query.node)
        statuses = ["active"]
        if query.include_deferred:
            statuses.append("deferred")
        if query.include_retired:
            statuses.append("retired")
        clauses.append(f"status IN ({', '.join('?' * len(statuses))})")
        params.extend(statuses)
        return f"SELECT {columns} FROM lessons WHERE {' AND '.join(clauses)} ORDER BY id", params

    async def select(self, query: LessonQuery | None = None) -> list[Lesson | Tombstone]:
        """Lessons matching `query` (default: every living lesson), ordered by ID."""
        sql, params = self._select_sql(query, LESSON_COLUMNS)
        with self._translated():
            rows = await self._conn.execute_fetchall(sql, params)
            return await self._hydrate(list(rows))

    async def summaries(self, query: LessonQuery | None = None) -> list[LessonSummary]:
        """What `select(query)` returns, as summaries only."""
        sql, params = self._select_sql(query, SUMMARY_COLUMNS)
        with self._translated():
            rows = await self._conn.execute_fetchall(sql, params)
        return [LessonSummary(*row) for row in rows]

    async def read_snapshot(
        self, *, repository: str | None, graph_hash: str | None, node: str | None
    ) -> list[Lesson]:
        """Active lessons of one recall scope, in one read transaction."""
        parts, params = [], []
        if repository is not None:
            parts.append("(scope_kind = 'repository' AND repository = ? AND graph_hash = '')")
            params.append(repository)
        if graph_hash is not None and node is not None:
            parts.append(
                "(scope_kind = 'graph' AND graph_hash = ? AND node = ? AND repository IN ('', ?))"
            )
            params.extend([graph_hash, node, repository or ""])
        if not parts:
            return []
        sql = (
            f"SELECT {LESSON_COLUMNS} FROM lessons WHERE status = 'active' "
            f"AND ({' OR '.join(parts)}) ORDER BY id"
        )
        with self._translated():
            await self._conn.execute("BEGIN")
            try:
                rows = await self._conn.execute_fetchall(sql, params)
                lessons = await self._hydrate(list(rows))
            finally:
                with anyio.CancelScope(shield=True):
                    await self._conn.execute("COMMIT")
        return [lesson for lesson in lessons if isinstance(lesson, Lesson)]

    async def version(self) -> int:
        """The store's change version (docs/store.md, "Version and changes")."""
        with self._translated():
            return int(await self._scalar(_VERSION_SQL))

    async def changes(self, scope: ScopeKey, since: int | None) -> ScopeChanges:
        """`scope`'s lessons changed since `since`, and the version read, in one snapshot."""
        sql, params = changes_query(scope, since, lambda _n: "?")
        with self._translated():
            await self._conn.execute("BEGIN")
            try:
                version = int(await self._scalar(_VERSION_SQL))
                rows = [tuple(row) for row in await self._conn.execute_fetchall(sql, params)]
            finally:
                with anyio.CancelScope(shield=True):
                    await self._conn.execute("COMMIT")
        return ScopeChanges(version, rows, full=since is None)

    async def history(self, lesson_id: str) -> list[HistoryEntry]:
        """Every recorded revision of a lesson, oldest first."""
        with self._translated():
            rows = await self._conn.execute_fetchall(
                f"SELECT {HISTORY_COLUMNS} FROM lesson_history WHERE lesson_id = ? ORDER BY seq",
                (lesson_id,),
            )
        return [row_to_history(row, self.location) for row in rows]

    async def _hydrate(self, rows: list[Any]) -> list[Lesson | Tombstone]:
        """Turn lesson rows into models, loading their evidence in one query."""
        living = [row[0] for row in rows if row[2] != "retired"]
        evidence = await load_evidence(self._conn, living)
        with collector_paused():
            return [row_to_model(row, evidence.get(row[0]), self.location) for row in rows]

    # --- writing -------------------------------------------------------------------

    async def publish(
        self,
        mutations: Sequence[Mutation],
        effectiveness: Sequence[RunObservation] = (),
        *,
        candidates: Sequence[Candidate] = (),
        consumed: Sequence[Consumed] = (),
        mark: PublishMark | None = None,
        proposals: Sequence[ProposedMutation] = (),
    ) -> PublishReceipt:
        """Apply every mutation, effectiveness observation and candidate change, and keep
        every proposal, in one transaction, or none; with `mark`, record it there too."""
        check_distinct_targets(mutations)
        observations = observation_rows(effectiveness)
        extras = (consumed_rows(consumed), candidate_rows(candidates, utcnow().isoformat()))
        if not mutations and not observations and not any(extras) and not proposals:
            return PublishReceipt()
        return await self._in_write_transaction(
            self._apply, mutations, observations, extras, mark, proposals
        )

    async def publish_mark(self, key: str) -> int | None:
        """The token of the last committed publish marked with `key`, or None."""
        with self._translated():
            value = await self._scalar(
                "SELECT value FROM store_meta WHERE key = ?", (f"{MARK_PREFIX}{key}",)
            )
        return int(value) if value is not None else None

    async def revert(self, lesson_id: str, to_revision: int, author: Author) -> Lesson | Tombstone:
        """Make revision `to_revision` current again, recorded as a new revision."""
        await self._in_write_transaction(self._revert, lesson_id, to_revision, author)
        reverted = await self.get(lesson_id)
        assert reverted is not None
        return reverted

    async def propose(self, mutations: Sequence[ProposedMutation]) -> list[int]:
        """Keep creations and adaptations as proposals for review, all or none."""
        from active_memory.store.sqlite_review import propose

        return await propose(self, mutations)

    async def proposals(self, state: str | None = None) -> list[Proposal]:
        """Proposals in `state` (proposed, approved, rejected; None: all), oldest first."""
        from active_memory.store.sqlite_review import proposals

        return await proposals(self, state)

    async def decide_proposal(self, seq: int, decision: ReviewDecision) -> Proposal:
        """Approve (publish, revision-checked) or reject proposal `seq`."""
        from active_memory.store.sqlite_review import decide

        return await decide(self, seq, decision)

    async def import_lessons(
        self, records: Iterable[Lesson | Tombstone], author: Author
    ) -> ImportReport:
        """Add or update lessons from an export, all or nothing; never recreate a tombstone.

        `records` is consumed in chunks of `IMPORT_CHUNK` inside the one transaction: a
        streamed file is never held whole.
        """
        if isinstance(records, Sequence):
            check_distinct_records(records)  # before the lock, when it can be
        return await self._in_write_transaction(self._import_chunks, records, author)

    async def _import_chunks(
        self, records: Iterable[Lesson | Tombstone], author: Author
    ) -> ImportReport:
        seen: set[str] = set()
        parts = []
        for first, chunk in chunks(records):
            check_distinct_records(chunk, seen, first)
            parts.append(await self._import(chunk, author, first))
        return merge_reports(parts)

    async def _begin_immediate(self) -> None:
        """`BEGIN IMMEDIATE`, waiting for other writers until the caller's deadline (then
        cancelled like any wait) or the busy timeout (then `StoreBusy`)."""
        give_up = anyio.current_time() + self._busy_timeout
        full = int(self._busy_timeout * 1000)
        with self._translated():
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

    async def _in_write_transaction(self, body: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run `body` inside BEGIN IMMEDIATE … COMMIT; only the lock wait is cancellable."""
        if self._read_only:
            raise StoreUnavailable(
                self.location,
                "the store is read-only (no write permission on the file or its folder); "
                "nothing was written. Reading commands still work",
            )
        await self._begin_immediate()
        with anyio.CancelScope(shield=True), self._translated():
            try:
                result = await body(*args)
            except BaseException:
                await self._rollback()
                raise
            try:
                await self._conn.execute("COMMIT")
            except BaseException:
                await self._rollback()
                raise
        return result

    async def _apply(
        self,
        mutations: Sequence[Mutation],
        observations: list[tuple[Any, ...]],
        extras: tuple[list[tuple[str, int]], list[tuple[Any, ...]]],
        mark: PublishMark | None = None,
        proposals: Sequence[ProposedMutation] = (),
    ) -> PublishReceipt:
        receipt = PublishReceipt()
        if mutations:
            current = await self._current(touched_ids(mutations))
            new_ids = await self._allocate_ids(create_count(mutations))
            rows, receipt = plan_publish(mutations, current, new_ids)
            await write_changes(self._conn, rows, self.location)
        if observations:
            await self._conn.executemany(
                f"INSERT INTO lesson_effectiveness (lesson_id, {EFFECTIVENESS_COLUMNS}) "
                "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM lessons WHERE id = ?) "
                "ON CONFLICT (lesson_id) DO UPDATE SET "
                + _ADD_COUNTS
                + " WHERE lesson_effectiveness.last_run_id IS NOT excluded.last_run_id",
                [(*row, row[0]) for row in observations],
            )
            # The dated history beside the counters (schema 7): one event per lesson and run.
            await self._conn.executemany(
                "INSERT INTO lesson_effectiveness_events (lesson_id, run_id, delivered, "
                "recurred, at) SELECT ?, ?, ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM lessons WHERE id = ?) "
                "ON CONFLICT (lesson_id, run_id) DO NOTHING",
                [(*row, row[0]) for row in event_rows(observations, utcnow().isoformat())],
            )
        consumed, candidates = extras
        if consumed:
            await self._conn.executemany(
                "DELETE FROM lesson_candidates WHERE lesson_id = ? AND seq <= ?", consumed
            )
        if candidates:
            # Only for a living lesson; a repeated postmortem of one run adds nothing.
            await self._conn.executemany(
                "INSERT INTO lesson_candidates (lesson_id, run_id, specialist, title, "
                "recommendation, associations, score, at) SELECT ?, ?, ?, ?, ?, ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM lessons WHERE id = ? AND status <> 'retired') "
                "ON CONFLICT (lesson_id, run_id, specialist, title) DO NOTHING",
                [(*row, row[0]) for row in candidates],
            )
            await self._conn.executemany(
                "DELETE FROM lesson_candidates WHERE lesson_id = ? AND seq NOT IN "
                "(SELECT seq FROM lesson_candidates WHERE lesson_id = ? "
                "ORDER BY seq DESC LIMIT ?)",
                [(i, i, CANDIDATES_KEPT) for i in sorted({row[0] for row in candidates})],
            )
        if mark is not None:
            await self._conn.execute(
                "INSERT INTO store_meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (f"{MARK_PREFIX}{mark.key}", str(mark.token)),
            )
        if proposals:
            from active_memory.store.sqlite_review import insert_proposals

            proposed = await insert_proposals(self._conn, proposals)
            receipt = receipt.model_copy(update={"proposed": proposed})
        return receipt

    async def candidates(self, lesson_ids: Sequence[str]) -> dict[str, list[Candidate]]:
        """The pending candidates of each named lesson that has any, oldest first."""
        with self._translated():
            rows = await self._conn.execute_fetchall(
                f"SELECT {CANDIDATE_COLUMNS} FROM lesson_candidates "
                "WHERE lesson_id IN (SELECT value FROM json_each(?)) ORDER BY seq",
                (json.dumps(sorted(set(lesson_ids))),),
            )
        found: dict[str, list[Candidate]] = {}
        for row in rows:
            found.setdefault(row[1], []).append(row_to_candidate(tuple(row)))
        return found

    async def effectiveness_history(self, lesson_id: str | None = None) -> EffectivenessHistory:
        """One lesson's dated effectiveness events, or (None) every lesson's per UTC day."""
        with self._translated():
            since = await self._scalar(
                "SELECT value FROM store_meta WHERE key = ?", (EVENTS_SINCE_KEY,)
            )
            if lesson_id is None:
                rows = await self._conn.execute_fetchall(DAY_POINT_SQL)
            else:
                rows = await self._conn.execute_fetchall(
                    EVENT_POINT_SQL.format(p="?"), (lesson_id,)
                )
        return EffectivenessHistory(
            since=since_iso(since), points=[row_to_point(tuple(row)) for row in rows]
        )

    async def effectiveness(self, lesson_ids: Sequence[str]) -> dict[str, Effectiveness]:
        """The counters of each named lesson that has any."""
        with self._translated():
            rows = await self._conn.execute_fetchall(
                f"SELECT lesson_id, {EFFECTIVENESS_COLUMNS} FROM lesson_effectiveness "
                "WHERE lesson_id IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(set(lesson_ids))),),
            )
        return {row[0]: row_to_effectiveness(tuple(row[1:])) for row in rows}

    async def _revert(self, lesson_id: str, to_revision: int, author: Author) -> None:
        current = await self._current([lesson_id])
        now = check_revert(lesson_id, to_revision, current.get(lesson_id))
        found = list(
            await self._conn.execute_fetchall(
                "SELECT status, card FROM lesson_history WHERE lesson_id = ? AND revision = ?",
                (lesson_id, to_revision),
            )
        )
        rows = plan_revert(
            lesson_id, to_revision, now, (found[0][0], found[0][1]) if found else None, author
        )
        await write_changes(self._conn, rows, self.location)

    async def _import(
        self, records: Sequence[Lesson | Tombstone], author: Author, first: int = 1
    ) -> ImportReport:
        current = await self._current(r.id for r in records)
        rows, report = plan_import(records, current, author, first)
        await write_changes(self._conn, rows, self.location)
        await self._bump_id_counter(records)
        return report

    async def _current(self, ids: Iterable[str]) -> dict[str, Current]:
        """Revision, status, scope and card of each existing ID (inside a transaction)."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        rows = await self._conn.execute_fetchall(
            f"SELECT {LESSON_COLUMNS} FROM lessons WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(wanted),),
        )
        current = {}
        for row in rows:
            lesson_id, revision, status = row[:3]
            current[lesson_id] = Current(
                revision, status, row_scope(row, self.location), row[7:10], self.location
            )
        return current

    async def _allocate_ids(self, count: int) -> list[str]:
        if count == 0:
            return []
        first = int(
            await self._scalar("SELECT value FROM store_meta WHERE key = 'next_lesson_number'")
        )
        await self._conn.execute(
            "UPDATE store_meta SET value = ? WHERE key = 'next_lesson_number'",
            (str(first + count),),
        )
        return [f"L-{n}" for n in range(first, first + count)]

    async def _bump_id_counter(self, records: Sequence[Lesson | Tombstone]) -> None:
        """Keep allocated IDs clear of imported `L-<n>` IDs."""
        next_number = next_number_after(records)
        if next_number is not None:
            await self._conn.execute(
                "UPDATE store_meta SET value = max(CAST(value AS INTEGER), ?) "
                "WHERE key = 'next_lesson_number'",
                (next_number,),
            )

    # --- backup --------------------------------------------------------------------

    async def backup(self, destination: Path) -> None:
        """Copy the store with SQLite's online backup, then move it into place atomically.

        The destination name is claimed first with an exclusive create (an empty 0600
        file): of two backups to one new path, one wins and the other is refused. The
        copy is written beside it and renamed over the claim only when it is complete
        and sound; on any failure the claim is removed.
        """
        destination = await anyio.to_thread.run_sync(_backup_destination, destination)
        partial = destination.with_name(f".{destination.name}.partial-{os.getpid()}")
        done = False
        try:
            await anyio.to_thread.run_sync(create_private, partial)
            with self._translated(str(destination)):
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
                _release_claim(destination)

    async def integrity_check(self) -> list[str]:
        """SQLite's own integrity check: `["ok"]` when the file is sound."""
        with self._translated():
            rows = await self._conn.execute_fetchall("PRAGMA integrity_check")
        return [str(r[0]) for r in rows]

    # --- helpers -------------------------------------------------------------------

    async def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = list(await self._conn.execute_fetchall(sql, params))
        return rows[0][0] if rows else None

    @contextmanager
    def _translated(self, location: str | None = None) -> Iterator[None]:
        """Turn sqlite3 errors into our error tree, naming `location` (default: the store)."""
        where = location or self.location
        try:
            yield
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "locked" in text or "busy" in text:
                raise StoreBusy(where, self._busy_timeout) from None
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


def _note(message: str) -> None:
    # On stderr, where a person running a command sees it (stdout may be --json).
    import sys

    print(f"active-memory: note: {message}", file=sys.stderr)


_VERSION_SQL = "SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'change_version'"


SUMMARY_COLUMNS = "id, revision, status, scope_kind, repository, graph_hash, node, title"


def _checked_path(location: str | Path, create: bool) -> Path:
    """Refuse a path that is not a SQLite file before SQLite touches it."""
    path = Path(location).expanduser()
    if path.is_dir():
        raise StoreUnavailable(str(path), "is a folder; give the path of a store file")
    if path.exists():
        try:
            with path.open("rb") as handle:
                header = handle.read(len(SQLITE_HEADER))
        except OSError as exc:
            raise StoreUnavailable(str(path), f"cannot read the store: {exc.strerror}") from None
        if header and header != SQLITE_HEADER:
            raise StoreCorrupt(
                str(path),
                "is not a SQLite database; nothing was changed. "
                "Pass --store with an Active Memory store or a new path",
            )
        _tighten_store(path)
        return path
    if not create:
        raise StoreMissing(str(path))
    try:
        path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        # SQLite gives its -wal and -shm files the store file's own permissions.
        with contextlib.suppress(FileExistsError):
            create_private(path)
    except OSError as exc:
        raise StoreUnavailable(str(path), f"cannot create it: {exc.strerror}") from None
    _tighten_store(path)
    return path


def _tighten_store(path: Path) -> None:
    """Store, journals and (for the default location) its folder: owner only."""
    for sibling in ("", "-wal", "-shm", "-journal"):
        tighten(f"{path}{sibling}", _note)
    if path.parent == default_store_path().parent:
        tighten(path.parent, _note)


def _backup_destination(location: str | Path) -> Path:
    """Claim `location` for a backup with an exclusive create; a usage error if taken."""
    destination = Path(location).expanduser()
    if not destination.parent.is_dir():
        raise UsageError(f"{destination.parent} is not a folder; create it first")
    try:
        create_private(destination)
    except FileExistsError:
        raise UsageError(f"{destination} already exists; choose a new backup path") from None
    except OSError as exc:
        raise StoreUnavailable(
            str(destination), f"cannot create the backup: {exc.strerror or exc}"
        ) from None
    return destination


def _release_claim(destination: Path) -> None:
    # Only our own empty claim is removed, never a file someone else put there.
    with contextlib.suppress(OSError):
        if destination.stat().st_size == 0:
            destination.unlink()


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
