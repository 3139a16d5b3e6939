"""The organization-wide lesson store: PostgreSQL, on asyncpg.

Concurrency rule: every write runs at READ COMMITTED and takes row locks in one fixed
order: the ID counter row first (publishes that create, and imports), then the lesson
rows it reads, with `SELECT … ORDER BY id FOR UPDATE`. The revision check reads the
locked, latest committed rows, so a lost update is impossible, and the fixed order
leaves no lock cycle. Should the server still report a deadlock, a serialization
failure or a unique-key race (two imports adding one ID), the whole transaction is
rolled back and run again a few times; if that keeps failing, or a lock is not granted
within the busy timeout, the caller gets `StoreBusy` and nothing is written.

The write transaction runs in a shielded cancel scope, as in the SQLite store: a
caller's deadline takes effect after COMMIT or ROLLBACK, never between. The URL's
password never leaves this module: `location` and every message use the masked URL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeAlias, TypeVar

import anyio
import asyncpg

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
from active_memory.store.location import mask_url
from active_memory.store.planning import (
    Current,
    check_distinct_records,
    check_distinct_targets,
    check_revert,
    create_count,
    next_number_after,
    plan_import,
    plan_publish,
    plan_revert,
    touched_ids,
)
from active_memory.store.postgres_queue import PostgresQueue
from active_memory.store.postgres_rows import (
    connect_error,
    json_citation,
    url_password,
    write_changes,
)
from active_memory.store.postgres_schema import (
    MIGRATION_LOCK,
    MIGRATIONS,
    SCHEMA_VERSION,
    TABLES,
    VERSION_TABLE,
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

DEFAULT_BUSY_TIMEOUT = 30.0
LOCK_SLICE = 0.05
"""The least time a write waits for row locks, even past its caller's deadline."""
_ADD_COUNTS = (
    ", ".join(
        f"{name} = lesson_effectiveness.{name} + excluded.{name}"
        for name in EFFECTIVENESS_COLUMNS.split(", ")[:4]
    )
    + ", last_run_id = excluded.last_run_id"
)
DEFAULT_CONNECT_TIMEOUT = 10.0
WRITE_ATTEMPTS = 5  # runs of one write transaction before a retryable failure is reported
POOL_SIZE = 4

_T = TypeVar("_T")
_P = ParamSpec("_P")
Connection: TypeAlias = "asyncpg.pool.PoolConnectionProxy[asyncpg.Record]"


_VERSION_SQL = "SELECT value FROM store_meta WHERE key = 'change_version'"


SUMMARY_COLUMNS = "id, revision, status, scope_kind, repository, graph_hash, node, title"


class _Retry(Exception):
    """A write transaction failed in a way that running it again can cure."""


class PostgresStore:
    """A `LessonStore` in a PostgreSQL database. Open it with `PostgresStore.open(url)`."""

    def __init__(
        self, location: str, secret: str | None, pool: asyncpg.Pool[asyncpg.Record],
        busy_timeout: float,
    ) -> None:  # fmt: skip
        self._location = location
        self._secret = secret
        self._pool = pool
        self._busy_timeout = busy_timeout

    @property
    def location(self) -> str:
        """The store's URL with its password masked."""
        return self._location

    @property
    def queue(self) -> PostgresQueue:
        """The postmortem queue kept in this store (store/queue.py)."""
        return PostgresQueue(self)

    # --- opening -------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        create: bool = True,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> PostgresStore:
        """Connect to the database at `url`, creating or migrating the schema if needed.

        `create=False` refuses a database without the store's schema (`StoreMissing`).
        An unreachable server, a refused login or a missing permission is
        `StoreUnavailable` (exit 2), with the password masked.
        """
        location = mask_url(url)
        secret = url_password(url)
        try:
            pool = await asyncpg.create_pool(
                url, min_size=1, max_size=POOL_SIZE, timeout=connect_timeout
            )
        except Exception as exc:
            raise connect_error(location, secret, exc) from None
        store = cls(location, secret, pool, busy_timeout)
        try:
            with store._translated():
                await store._migrate(create)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await pool.close()
            raise
        return store

    async def aclose(self) -> None:
        """Close every connection."""
        with anyio.CancelScope(shield=True):
            await self._pool.close()

    async def __aenter__(self) -> PostgresStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

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

    # --- reading -------------------------------------------------------------------

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[Connection]:
        """A connection inside one REPEATABLE READ, read-only transaction."""
        with self._translated():
            async with (
                self._pool.acquire() as conn,
                conn.transaction(isolation="repeatable_read", readonly=True),
            ):
                yield conn

    async def get(self, lesson_id: str) -> Lesson | Tombstone | None:
        """One lesson or tombstone by ID."""
        async with self._reading() as conn:
            rows = await conn.fetch(
                f"SELECT {LESSON_COLUMNS} FROM lessons WHERE id = $1", lesson_id
            )
            found = await self._hydrate(conn, rows)
        return found[0] if found else None

    def _select_sql(self, query: LessonQuery | None, columns: str) -> tuple[str, list[Any]]:
        """The SELECT of `columns` of the lessons `query` names, ordered by ID."""
        query = query or LessonQuery()
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("scope_kind", query.kind),
            ("repository", query.repository),
            ("graph_hash", query.graph_hash),
            ("node", query.node),
        ):
            if value is not None:
                params.append(value)
                clauses.append(f"{column} = ${len(params)}")
        statuses = ["active"]
        if query.include_deferred:
            statuses.append("deferred")
        if query.include_retired:
            statuses.append("retired")
        params.append(statuses)
        clauses.append(f"status = ANY(${len(params)}::text[])")
        return f"SELECT {columns} FROM lessons WHERE {' AND '.join(clauses)} ORDER BY id", params

    async def select(self, query: LessonQuery | None = None) -> list[Lesson | Tombstone]:
        """Lessons matching `query` (default: every living lesson), ordered by ID."""
        sql, params = self._select_sql(query, LESSON_COLUMNS)
        async with self._reading() as conn:
            return await self._hydrate(conn, await conn.fetch(sql, *params))

    async def summaries(self, query: LessonQuery | None = None) -> list[LessonSummary]:
        """What `select(query)` returns, as summaries only."""
        sql, params = self._select_sql(query, SUMMARY_COLUMNS)
        async with self._reading() as conn:
            return [LessonSummary(*row) for row in await conn.fetch(sql, *params)]

    async def read_snapshot(
        self, *, repository: str | None, graph_hash: str | None, node: str | None
    ) -> list[Lesson]:
        """Active lessons of one recall scope, in one REPEATABLE READ read-only transaction."""
        parts: list[str] = []
        params: list[Any] = []
        if repository is not None:
            params.append(repository)
            parts.append(
                f"(scope_kind = 'repository' AND repository = ${len(params)} AND graph_hash = '')"
            )
        if graph_hash is not None and node is not None:
            params.extend([graph_hash, node, repository or ""])
            n = len(params)
            parts.append(
                f"(scope_kind = 'graph' AND graph_hash = ${n - 2} AND node = ${n - 1} "
                f"AND repository IN ('', ${n}))"
            )
        if not parts:
            return []
        sql = (
            f"SELECT {LESSON_COLUMNS} FROM lessons WHERE status = 'active' "
            f"AND ({' OR '.join(parts)}) ORDER BY id"
        )
        async with self._reading() as conn:
            lessons = await self._hydrate(conn, await conn.fetch(sql, *params))
        return [lesson for lesson in lessons if isinstance(lesson, Lesson)]

    async def version(self) -> int:
        """The store's change version (docs/store.md, "Version and changes")."""
        async with self._reading() as conn:
            return int(await conn.fetchval(_VERSION_SQL))

    async def changes(self, scope: ScopeKey, since: int | None) -> ScopeChanges:
        """`scope`'s lessons changed since `since`, and the version read, in one snapshot."""
        sql, params = changes_query(scope, since, lambda n: f"${n}", dialect="postgres")
        async with self._reading() as conn:
            version = int(await conn.fetchval(_VERSION_SQL))
            rows = [tuple(row) for row in await conn.fetch(sql, *params)]
        return ScopeChanges(version, rows, full=since is None)

    async def history(self, lesson_id: str) -> list[HistoryEntry]:
        """Every recorded revision of a lesson, oldest first."""
        async with self._reading() as conn:
            rows = await conn.fetch(
                f"SELECT {HISTORY_COLUMNS} FROM lesson_history WHERE lesson_id = $1 ORDER BY seq",
                lesson_id,
            )
        return [row_to_history(row, self.location) for row in rows]

    async def _hydrate(
        self, conn: Connection, rows: Sequence[asyncpg.Record]
    ) -> list[Lesson | Tombstone]:
        """Turn lesson rows into models, loading their evidence in one query."""
        living = [row[0] for row in rows if row[2] != "retired"]
        evidence: dict[str, dict[str, list[Any]]] = {}
        if living:
            for lesson_id, kind, value in await conn.fetch(
                "SELECT lesson_id, kind, value FROM lesson_evidence "
                "WHERE lesson_id = ANY($1::text[]) ORDER BY seq",
                living,
            ):
                slot = evidence.setdefault(lesson_id, {"run": [], "evidence": [], "citation": []})
                slot[kind].append(value)
        with collector_paused():
            for slot in evidence.values():
                slot["citation"] = [json_citation(c) for c in slot["citation"]]
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
        async with self._reading() as conn:
            value = await conn.fetchval(
                "SELECT value FROM store_meta WHERE key = $1", f"{MARK_PREFIX}{key}"
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
        from active_memory.store.postgres_review import propose

        return await propose(self, mutations)

    async def proposals(self, state: str | None = None) -> list[Proposal]:
        """Proposals in `state` (proposed, approved, rejected; None: all), oldest first."""
        from active_memory.store.postgres_review import proposals

        return await proposals(self, state)

    async def decide_proposal(self, seq: int, decision: ReviewDecision) -> Proposal:
        """Approve (publish, revision-checked) or reject proposal `seq`."""
        from active_memory.store.postgres_review import decide

        return await decide(self, seq, decision)

    async def import_lessons(
        self, records: Iterable[Lesson | Tombstone], author: Author
    ) -> ImportReport:
        """Add or update lessons from an export, all or nothing; never recreate a tombstone.

        `records` is held whole: the transaction may be run again after a deadlock.
        """
        records = list(records)
        check_distinct_records(records)
        return await self._in_write_transaction(self._import, records, author)

    async def _in_write_transaction(
        self,
        body: Callable[Concatenate[Connection, _P], Awaitable[_T]],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _T:
        """Run `body` in one READ COMMITTED transaction, shielded; retry retryable failures.

        Waiting for another writer's row locks inside the shield is bounded by the
        caller's deadline as well as the busy timeout (at least `LOCK_SLICE`, so a write
        nobody blocks still happens after its deadline): a shield never outlasts the
        time the caller has left by more than a slice (then `StoreBusy`, nothing
        written). Waiting for a pool connection is bounded by the busy timeout.
        """
        left = anyio.current_effective_deadline() - anyio.current_time()
        wait = min(self._busy_timeout, max(left, LOCK_SLICE))
        with anyio.CancelScope(shield=True), self._translated():
            async with self._pool.acquire(timeout=self._busy_timeout) as conn:
                for attempt in range(1, WRITE_ATTEMPTS + 1):
                    try:
                        async with conn.transaction():
                            # Bounds inside the shield: no lock or statement waits forever.
                            lock_wait = f"{max(1, int(wait * 1000))}ms"
                            timeout = f"{int(self._busy_timeout * 1000)}ms"
                            await conn.execute(f"SET LOCAL lock_timeout = '{lock_wait}'")
                            await conn.execute(f"SET LOCAL statement_timeout = '{timeout}'")
                            try:
                                return await body(conn, *args, **kwargs)
                            except (
                                asyncpg.DeadlockDetectedError,
                                asyncpg.SerializationError,
                            ) as exc:
                                raise _Retry from exc
                            except asyncpg.UniqueViolationError as exc:
                                if exc.constraint_name != "lessons_pkey":
                                    raise
                                raise _Retry from exc
                    except _Retry:
                        if attempt == WRITE_ATTEMPTS:
                            break
                        await anyio.sleep(0.005 * 2**attempt)
        raise StoreBusy(self.location, self._busy_timeout)

    async def _apply(
        self,
        conn: Connection,
        mutations: Sequence[Mutation],
        observations: list[tuple[str, int, int, int, int, str]],
        extras: tuple[list[tuple[str, int]], list[tuple[Any, ...]]],
        mark: PublishMark | None = None,
        proposals: Sequence[ProposedMutation] = (),
    ) -> PublishReceipt:
        receipt = PublishReceipt()
        if mutations:
            # The counter row first, then the lesson rows: one lock order for every writer.
            new_ids = await self._allocate_ids(conn, create_count(mutations))
            current = await self._current(conn, touched_ids(mutations))
            rows, receipt = plan_publish(mutations, current, new_ids)
            await write_changes(conn, rows)
        if observations:
            # Last, in lesson ID order: the lock order stays fixed.
            await conn.executemany(
                f"INSERT INTO lesson_effectiveness (lesson_id, {EFFECTIVENESS_COLUMNS}) "
                "SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM lessons WHERE id = $1) "
                "ON CONFLICT (lesson_id) DO UPDATE SET "
                + _ADD_COUNTS
                + " WHERE lesson_effectiveness.last_run_id IS DISTINCT FROM excluded.last_run_id",
                observations,
            )
            # The dated history beside the counters (schema 7): one event per lesson and run.
            await conn.executemany(
                "INSERT INTO lesson_effectiveness_events (lesson_id, run_id, delivered, "
                "recurred, at) SELECT $1, $2, $3, $4, $5 "
                "WHERE EXISTS (SELECT 1 FROM lessons WHERE id = $1) "
                "ON CONFLICT (lesson_id, run_id) DO NOTHING",
                event_rows(observations, utcnow().isoformat()),
            )
        consumed, candidates = extras
        if consumed:
            await conn.executemany(
                "DELETE FROM lesson_candidates WHERE lesson_id = $1 AND seq <= $2", consumed
            )
        if candidates:
            # Only for a living lesson; a repeated postmortem of one run adds nothing.
            await conn.executemany(
                "INSERT INTO lesson_candidates (lesson_id, run_id, specialist, title, "
                "recommendation, associations, score, at) "
                "SELECT $1, $2, $3, $4, $5, $6, $7, $8 "
                "WHERE EXISTS (SELECT 1 FROM lessons WHERE id = $1 AND status <> 'retired') "
                "ON CONFLICT (lesson_id, run_id, specialist, title) DO NOTHING",
                candidates,
            )
            await conn.executemany(
                "DELETE FROM lesson_candidates WHERE lesson_id = $1 AND seq NOT IN "
                "(SELECT seq FROM lesson_candidates WHERE lesson_id = $1 "
                "ORDER BY seq DESC LIMIT $2)",
                [(i, CANDIDATES_KEPT) for i in sorted({row[0] for row in candidates})],
            )
        if mark is not None:
            # Last: every writer takes the mark's row after all others (one lock order).
            await conn.execute(
                "INSERT INTO store_meta (key, value) VALUES ($1, $2) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                f"{MARK_PREFIX}{mark.key}",
                mark.token,
            )
        if proposals:
            from active_memory.store.postgres_review import insert_proposals

            proposed = await insert_proposals(conn, proposals)
            receipt = receipt.model_copy(update={"proposed": proposed})
        return receipt

    async def candidates(self, lesson_ids: Sequence[str]) -> dict[str, list[Candidate]]:
        """The pending candidates of each named lesson that has any, oldest first."""
        async with self._reading() as conn:
            rows = await conn.fetch(
                f"SELECT {CANDIDATE_COLUMNS} FROM lesson_candidates "
                "WHERE lesson_id = ANY($1::text[]) ORDER BY seq",
                sorted(set(lesson_ids)),
            )
        found: dict[str, list[Candidate]] = {}
        for row in rows:
            found.setdefault(row[1], []).append(row_to_candidate(tuple(row)))
        return found

    async def effectiveness_history(self, lesson_id: str | None = None) -> EffectivenessHistory:
        """One lesson's dated effectiveness events, or (None) every lesson's per UTC day."""
        async with self._reading() as conn:
            since = await conn.fetchval(
                "SELECT value FROM store_meta WHERE key = $1", EVENTS_SINCE_KEY
            )
            if lesson_id is None:
                rows = await conn.fetch(DAY_POINT_SQL)
            else:
                rows = await conn.fetch(EVENT_POINT_SQL.format(p="$1"), lesson_id)
        return EffectivenessHistory(
            since=since_iso(since), points=[row_to_point(tuple(row)) for row in rows]
        )

    async def effectiveness(self, lesson_ids: Sequence[str]) -> dict[str, Effectiveness]:
        """The counters of each named lesson that has any."""
        async with self._reading() as conn:
            rows = await conn.fetch(
                f"SELECT lesson_id, {EFFECTIVENESS_COLUMNS} FROM lesson_effectiveness "
                "WHERE lesson_id = ANY($1::text[])",
                sorted(set(lesson_ids)),
            )
        return {row[0]: row_to_effectiveness(tuple(row[1:])) for row in rows}

    async def _revert(
        self, conn: Connection, lesson_id: str, to_revision: int, author: Author
    ) -> None:
        current = await self._current(conn, [lesson_id])
        now = check_revert(lesson_id, to_revision, current.get(lesson_id))
        found = await conn.fetchrow(
            "SELECT status, card::text FROM lesson_history WHERE lesson_id = $1 AND revision = $2",
            lesson_id,
            to_revision,
        )
        rows = plan_revert(
            lesson_id, to_revision, now, (found[0], found[1]) if found else None, author
        )
        await write_changes(conn, rows)

    async def _import(
        self, conn: Connection, records: Sequence[Lesson | Tombstone], author: Author
    ) -> ImportReport:
        await conn.execute(
            "SELECT value FROM store_meta WHERE key = 'next_lesson_number' FOR UPDATE"
        )
        current = await self._current(conn, (r.id for r in records))
        rows, report = plan_import(records, current, author)
        await write_changes(conn, rows)
        next_number = next_number_after(records)
        if next_number is not None:
            await conn.execute(
                "UPDATE store_meta SET value = GREATEST(value, $1) "
                "WHERE key = 'next_lesson_number'",
                next_number,
            )
        return report

    async def _current(self, conn: Connection, ids: Iterable[str]) -> dict[str, Current]:
        """Lock and read each existing ID's row, in ID order (the fixed lock order)."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        rows = await conn.fetch(
            f"SELECT {LESSON_COLUMNS} FROM lessons WHERE id = ANY($1::text[]) "
            "ORDER BY id FOR UPDATE",
            wanted,
        )
        return {
            row[0]: Current(
                row[1], row[2], row_scope(row, self.location), (row[7], row[8], row[9]),
                self.location,
            )
            for row in rows
        }  # fmt: skip

    async def _allocate_ids(self, conn: Connection, count: int) -> list[str]:
        if count == 0:
            return []
        end = await conn.fetchval(
            "UPDATE store_meta SET value = value + $1 WHERE key = 'next_lesson_number' "
            "RETURNING value",
            count,
        )
        first = int(end) - count
        return [f"L-{n}" for n in range(first, first + count)]

    # --- backup --------------------------------------------------------------------

    async def backup(self, destination: Path) -> None:
        """Refused: a PostgreSQL store is backed up with the server's own tools."""
        raise UsageError(
            f"{self.location} is a PostgreSQL store; back it up with the server's tools, "
            "e.g. `pg_dump --format=custom --file=lessons.dump <database>` "
            "and restore with `pg_restore` (see docs/store.md)"
        )

    # --- helpers -------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        """`text` with the password (should a driver message carry it) masked."""
        return text.replace(self._secret, "***") if self._secret else text

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """Turn asyncpg and connection errors into our error tree, with the masked URL."""
        try:
            yield
        except (asyncpg.LockNotAvailableError, asyncpg.QueryCanceledError):
            raise StoreBusy(self.location, self._busy_timeout) from None
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
