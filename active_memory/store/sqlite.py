"""The default lesson store: one SQLite file, WAL, on aiosqlite.

Every write is one `BEGIN IMMEDIATE` transaction run under a shielded cancel scope:
aiosqlite cannot cancel a statement already queued in its worker thread, so a write
is never the thing a deadline interrupts. Its only bound is the busy timeout.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import anyio
from pydantic import ValidationError

from active_memory.errors import (
    Conflict,
    InvalidMutation,
    LessonNotFound,
    RevisionConflict,
    StoreBusy,
    StoreCorrupt,
    StoreError,
    StoreMissing,
    StoreTooNew,
    StoreUnavailable,
    UsageError,
)
from active_memory.lessons import (
    AdaptLesson,
    Associations,
    Author,
    Card,
    CreateLesson,
    DeferLesson,
    GraphScope,
    HistoryEntry,
    Lesson,
    Mutation,
    PublishReceipt,
    RepositoryScope,
    RetireLesson,
    Tombstone,
    utcnow,
)
from active_memory.store.protocol import ImportReport, LessonQuery
from active_memory.store.sqlite_rows import (
    LESSON_COLUMNS,
    ChangeSet,
    collector_paused,
    load_evidence,
    row_scope,
    row_to_model,
)
from active_memory.store.sqlite_schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

SQLITE_HEADER = b"SQLite format 3\x00"
DEFAULT_BUSY_TIMEOUT = 30.0
_NUMBERED_ID = re.compile(r"^L-(\d+)$")

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class _Current:
    """What a write transaction needs to know of a lesson as it stands.

    The card stays as its raw columns until asked for: only a defer needs it, and
    validating every target's card would lengthen the time the write lock is held.
    """

    revision: int
    status: str
    scope: RepositoryScope | GraphScope
    columns: tuple[str | None, str | None, str | None]
    location: str

    def card(self) -> Card:
        """The lesson's current card (a retired lesson has none)."""
        title, recommendation, associations = self.columns
        try:
            return Card(
                title=title or "",
                recommendation=recommendation or "",
                associations=Associations.model_validate_json(associations or "{}"),
            )
        except ValidationError as exc:
            raise StoreCorrupt(self.location, f"a stored card is unreadable: {exc}") from None


class SqliteStore:
    """A `LessonStore` in one SQLite file. Open it with `SqliteStore.open(path)`."""

    def __init__(self, path: Path, conn: aiosqlite.Connection, busy_timeout: float) -> None:
        self._path = path
        self._conn = conn
        self._busy_timeout = busy_timeout

    @property
    def location(self) -> str:
        """The store's file path."""
        return str(self._path)

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
        try:
            conn = await aiosqlite.connect(str(path), isolation_level=None, timeout=busy_timeout)
        except sqlite3.Error as exc:
            raise StoreUnavailable(str(path), f"cannot open the store: {exc}") from None
        store = cls(path, conn, busy_timeout)
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
        await self._conn.execute("PRAGMA journal_mode = WAL")
        # FULL: a published lesson survives power loss, not only a process crash.
        await self._conn.execute("PRAGMA synchronous = FULL")

    async def _migrate(self) -> None:
        version = await self._schema_version()
        if version == SCHEMA_VERSION:
            return
        with anyio.CancelScope(shield=True):
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have migrated while we waited for the lock.
                version = await self._schema_version()
                for script in MIGRATIONS[version:]:
                    for statement in _statements(script):
                        await self._conn.execute(statement)
                await self._conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                await self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            await self._conn.execute("COMMIT")

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

    async def select(self, query: LessonQuery | None = None) -> list[Lesson | Tombstone]:
        """Lessons matching `query` (default: every living lesson), ordered by ID."""
        query = query or LessonQuery()
        clauses, params = [], []
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
        sql = f"SELECT {LESSON_COLUMNS} FROM lessons WHERE {' AND '.join(clauses)} ORDER BY id"
        with self._translated():
            rows = await self._conn.execute_fetchall(sql, params)
            return await self._hydrate(list(rows))

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

    async def history(self, lesson_id: str) -> list[HistoryEntry]:
        """Every recorded revision of a lesson, oldest first."""
        with self._translated():
            rows = await self._conn.execute_fetchall(
                "SELECT lesson_id, revision, previous_revision, action, status, card, "
                "specialist, run_id, model, reason, at FROM lesson_history "
                "WHERE lesson_id = ? ORDER BY seq",
                (lesson_id,),
            )
        entries = []
        for row in rows:
            try:
                entries.append(
                    HistoryEntry(
                        lesson_id=row[0],
                        revision=row[1],
                        previous_revision=row[2],
                        action=row[3],
                        status=row[4],
                        card=Card.model_validate_json(row[5]) if row[5] else None,
                        author=Author(specialist=row[6], run_id=row[7], model=row[8]),
                        reason=row[9],
                        at=row[10],
                    )
                )
            except ValidationError as exc:
                raise StoreCorrupt(
                    self.location, f"history of {lesson_id} r{row[1]} is unreadable: {exc}"
                ) from None
        return entries

    async def _hydrate(self, rows: list[Any]) -> list[Lesson | Tombstone]:
        """Turn lesson rows into models, loading their evidence in one query."""
        living = [row[0] for row in rows if row[2] != "retired"]
        evidence = await load_evidence(self._conn, living)
        with collector_paused():
            return [row_to_model(row, evidence.get(row[0]), self.location) for row in rows]

    # --- writing -------------------------------------------------------------------

    async def publish(self, mutations: Sequence[Mutation]) -> PublishReceipt:
        """Apply every mutation in one revision-checked transaction, or none."""
        _check_distinct_targets(mutations)
        if not mutations:
            return PublishReceipt()
        return await self._in_write_transaction(self._apply, mutations)

    async def revert(self, lesson_id: str, to_revision: int, author: Author) -> Lesson | Tombstone:
        """Make revision `to_revision` current again, recorded as a new revision."""
        await self._in_write_transaction(self._revert, lesson_id, to_revision, author)
        reverted = await self.get(lesson_id)
        assert reverted is not None
        return reverted

    async def import_lessons(
        self, records: Sequence[Lesson | Tombstone], author: Author
    ) -> ImportReport:
        """Add or update lessons from an export, all or nothing; never recreate a tombstone."""
        seen: set[str] = set()
        for index, record in enumerate(records, start=1):
            if record.id in seen:
                raise InvalidMutation(record.id, f"appears twice in the import (record {index})")
            seen.add(record.id)
        return await self._in_write_transaction(self._import, records, author)

    async def _in_write_transaction(self, body: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run `body` inside BEGIN IMMEDIATE … COMMIT, shielded; roll back on any error."""
        with anyio.CancelScope(shield=True), self._translated():
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                result = await body(*args)
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            await self._conn.execute("COMMIT")
        return result

    async def _apply(self, mutations: Sequence[Mutation]) -> PublishReceipt:
        changes = [m for m in mutations if not isinstance(m, CreateLesson)]
        canonicals = {m.canonical for m in changes if isinstance(m, RetireLesson) and m.canonical}
        current = await self._current({m.id for m in changes} | canonicals)
        conflicts = [
            Conflict(m.id, m.base_revision, *_revision_status(current.get(m.id)))
            for m in changes
            if (row := current.get(m.id)) is None
            or row.revision != m.base_revision
            or row.status == "retired"
        ]
        if conflicts:
            raise RevisionConflict(conflicts)
        retiring = {m.id for m in changes if isinstance(m, RetireLesson)}
        for m in changes:
            if isinstance(m, RetireLesson) and m.canonical:
                _check_canonical(m, current, retiring)

        rows = ChangeSet(now=utcnow().isoformat())
        receipt = PublishReceipt(created=[], adapted=[], retired=[], deferred=[])
        creates = [m for m in mutations if isinstance(m, CreateLesson)]
        for lesson_id, new in zip(await self._allocate_ids(len(creates)), creates, strict=True):
            rows.insert(lesson_id, 1, "active", new.scope, new.card)
            rows.add_evidence(lesson_id, new.evidence)
            rows.record(lesson_id, 1, None, "create", "active", new.scope, new.card,
                        new.author, new.reason)  # fmt: skip
            receipt.created.append((lesson_id, 1))
        for m in changes:
            now = current[m.id]
            revision = m.base_revision + 1
            card: Card | None
            if isinstance(m, AdaptLesson):
                status, card, canonical, reason = "active", m.card, None, m.reason
                rows.add_evidence(m.id, m.evidence)
                receipt.adapted.append((m.id, revision))
            elif isinstance(m, DeferLesson):
                status, card, canonical, reason = "deferred", now.card(), None, m.reason
                receipt.deferred.append((m.id, revision))
            else:
                status, card, canonical = "retired", None, m.canonical
                reason = m.reason or (f"absorbed by {m.canonical}" if m.canonical else "")
                receipt.retired.append((m.id, revision))
            rows.update(m.id, m.base_revision, revision, status, card, canonical)
            rows.record(m.id, revision, m.base_revision, m.action, status, now.scope, card,
                        m.author, reason)  # fmt: skip
        await rows.write(self._conn, self.location)
        return receipt

    async def _revert(self, lesson_id: str, to_revision: int, author: Author) -> None:
        now = (await self._current([lesson_id])).get(lesson_id)
        if now is None:
            raise LessonNotFound(lesson_id)
        see = f"(see `active-memory lessons history {lesson_id}`)"
        if to_revision >= now.revision:
            raise UsageError(
                f"{lesson_id} is at r{now.revision}; revert goes back to an earlier revision {see}"
            )
        found = list(
            await self._conn.execute_fetchall(
                "SELECT status, card FROM lesson_history WHERE lesson_id = ? AND revision = ?",
                (lesson_id, to_revision),
            )
        )
        if not found:
            raise UsageError(f"{lesson_id} r{to_revision} is not in this store's history {see}")
        status, card_json = found[0]
        card = Card.model_validate_json(card_json) if card_json and status != "retired" else None
        status = status if card is not None else "retired"
        revision = now.revision + 1
        rows = ChangeSet(now=utcnow().isoformat())
        rows.update(lesson_id, now.revision, revision, status, card)
        rows.record(lesson_id, revision, now.revision, "revert", status, now.scope, card, author,
                    f"revert to r{to_revision}")  # fmt: skip
        await rows.write(self._conn, self.location)

    async def _import(self, records: Sequence[Lesson | Tombstone], author: Author) -> ImportReport:
        current = await self._current(r.id for r in records)
        rows = ChangeSet(now=utcnow().isoformat())
        report = ImportReport(added=[], updated=[], unchanged=[])
        for index, record in enumerate(records, start=1):
            now = current.get(record.id)
            card = record.card() if isinstance(record, Lesson) else None
            canonical = record.canonical if isinstance(record, Tombstone) else None
            if now is not None and now.scope != record.scope:
                raise InvalidMutation(
                    record.id, f"record {index} has another scope than the stored lesson"
                )
            if now is None:
                rows.insert(record.id, record.revision, record.status, record.scope, card,
                            canonical)  # fmt: skip
                report.added.append((record.id, record.revision))
            elif now.status == "retired":
                report.unchanged.append((record.id, f"retired at r{now.revision}; not recreated"))
                continue
            elif now.revision >= record.revision:
                report.unchanged.append((record.id, f"store already has r{now.revision}"))
                continue
            else:
                rows.update(record.id, now.revision, record.revision, record.status, card,
                            canonical)  # fmt: skip
                # An imported lesson brings its own evidence in place of the old.
                rows.dropped_evidence.append((record.id,))
                report.updated.append((record.id, record.revision))
            if isinstance(record, Lesson):
                rows.add_evidence(record.id, record.evidence)
            rows.record(record.id, record.revision, now.revision if now else None, "import",
                        record.status, record.scope, card, author, "imported")  # fmt: skip
        await rows.write(self._conn, self.location)
        await self._bump_id_counter(records)
        return report

    async def _current(self, ids: Iterable[str]) -> dict[str, _Current]:
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
            current[lesson_id] = _Current(
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
        numbers = [int(m.group(1)) for r in records if (m := _NUMBERED_ID.match(r.id))]
        if numbers:
            await self._conn.execute(
                "UPDATE store_meta SET value = max(CAST(value AS INTEGER), ?) "
                "WHERE key = 'next_lesson_number'",
                (max(numbers) + 1,),
            )

    # --- backup --------------------------------------------------------------------

    async def backup(self, destination: Path) -> None:
        """Copy the store with SQLite's online backup, then move it into place atomically."""
        destination = await anyio.to_thread.run_sync(_backup_destination, destination)
        partial = destination.with_name(f".{destination.name}.partial-{os.getpid()}")
        try:
            with self._translated():
                target = await aiosqlite.connect(str(partial))
                try:
                    await self._conn.backup(target)
                    result = await target.execute_fetchall("PRAGMA integrity_check")
                finally:
                    await target.close()
            if [tuple(r) for r in result] != [("ok",)]:
                raise StoreCorrupt(str(destination), "the copy failed its integrity check")
            os.replace(partial, destination)
        finally:
            partial.unlink(missing_ok=True)

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
    def _translated(self) -> Iterator[None]:
        """Turn sqlite3 errors into our error tree, with the store's location."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "locked" in text or "busy" in text:
                raise StoreBusy(self.location, self._busy_timeout) from None
            if "readonly" in text or "unable to open" in text or "disk I/O" in text:
                raise StoreUnavailable(self.location, text) from None
            raise StoreError(f"{self.location}: {text}") from exc
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if "malformed" in text or "not a database" in text or "corrupt" in text:
                raise StoreCorrupt(
                    self.location,
                    f"the store is damaged ({text}); restore a backup "
                    "(`active-memory backup` makes them)",
                ) from None
            raise StoreError(f"{self.location}: {text}") from exc


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
        return path
    if not create:
        raise StoreMissing(str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreUnavailable(str(path), f"cannot create its folder: {exc.strerror}") from None
    return path


def _backup_destination(location: str | Path) -> Path:
    destination = Path(location).expanduser()
    if destination.exists():
        raise UsageError(f"{destination} already exists; choose a new backup path")
    if not destination.parent.is_dir():
        raise UsageError(f"{destination.parent} is not a folder; create it first")
    return destination


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


def _check_distinct_targets(mutations: Sequence[Mutation]) -> None:
    seen: set[str] = set()
    for m in mutations:
        if isinstance(m, CreateLesson):
            continue
        if m.id in seen:
            raise InvalidMutation(m.id, "has more than one mutation in one publish")
        seen.add(m.id)


def _check_canonical(m: RetireLesson, current: dict[str, _Current], retiring: set[str]) -> None:
    canonical = current.get(m.canonical or "")
    if canonical is None or canonical.status == "retired" or m.canonical in retiring:
        raise InvalidMutation(m.id, f"canonical {m.canonical} is not a living lesson")
    if canonical.scope != current[m.id].scope:
        raise InvalidMutation(m.id, f"canonical {m.canonical} has another scope")


def _revision_status(row: _Current | None) -> tuple[int | None, str | None]:
    return (None, None) if row is None else (row.revision, row.status)
