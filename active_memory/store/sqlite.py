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
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
    Evidence,
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
from active_memory.store.sqlite_schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

SQLITE_HEADER = b"SQLite format 3\x00"
DEFAULT_BUSY_TIMEOUT = 30.0
_NUMBERED_ID = re.compile(r"^L-(\d+)$")

_LESSON_COLUMNS = (
    "id, revision, status, scope_kind, repository, graph_hash, node, "
    "title, recommendation, associations, canonical"
)


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
        app_id = await self._scalar("PRAGMA application_id")
        version = await self._scalar("PRAGMA user_version")
        if app_id not in (0, APPLICATION_ID):
            raise StoreCorrupt(
                self.location,
                "this SQLite file belongs to another application; nothing was changed. "
                "Pass --store with a new path or an Active Memory store",
            )
        if app_id == 0:
            tables = await self._scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'table'")
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
                f"SELECT {_LESSON_COLUMNS} FROM lessons WHERE id = ?", (lesson_id,)
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
        sql = f"SELECT {_LESSON_COLUMNS} FROM lessons WHERE {' AND '.join(clauses)} ORDER BY id"
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
            f"SELECT {_LESSON_COLUMNS} FROM lessons WHERE status = 'active' "
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
        if not rows:
            return []
        evidence: dict[str, dict[str, list[Any]]] = {}
        living = [row[0] for row in rows if row[2] != "retired"]
        if living:
            ev_rows = await self._conn.execute_fetchall(
                "SELECT lesson_id, kind, value FROM lesson_evidence "
                "WHERE lesson_id IN (SELECT value FROM json_each(?)) ORDER BY seq",
                (json.dumps(living),),
            )
            for lesson_id, kind, value in ev_rows:
                slot = evidence.setdefault(lesson_id, {"run": [], "evidence": [], "citation": []})
                slot[kind].append(json.loads(value) if kind == "citation" else value)
        return [self._row_to_model(row, evidence.get(row[0])) for row in rows]

    def _row_to_model(self, row: Any, evidence: dict[str, list[Any]] | None) -> Lesson | Tombstone:
        lesson_id, revision, status, kind, repository, graph_hash, node = row[:7]
        title, recommendation, associations, canonical = row[7:]
        try:
            scope: RepositoryScope | GraphScope
            if kind == "repository":
                scope = RepositoryScope(repository=repository)
            else:
                scope = GraphScope(graph_hash=graph_hash, node=node, repository=repository or None)
            if status == "retired":
                return Tombstone(id=lesson_id, revision=revision, scope=scope, canonical=canonical)
            ev = evidence or {}
            return Lesson(
                id=lesson_id,
                revision=revision,
                scope=scope,
                status=status,
                title=title,
                recommendation=recommendation,
                associations=Associations.model_validate_json(associations),
                evidence=Evidence(
                    run_ids=ev.get("run", []),
                    evidence_ids=ev.get("evidence", []),
                    citations=ev.get("citation", []),
                ),
            )
        except ValidationError as exc:
            raise StoreCorrupt(self.location, f"lesson {lesson_id} is unreadable: {exc}") from None

    # --- writing -------------------------------------------------------------------

    async def publish(self, mutations: Sequence[Mutation]) -> PublishReceipt:
        """Apply every mutation in one revision-checked transaction, or none."""
        _check_distinct_targets(mutations)
        if not mutations:
            return PublishReceipt()
        with anyio.CancelScope(shield=True), self._translated():
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                receipt = await self._apply(mutations)
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            await self._conn.execute("COMMIT")
        return receipt

    async def _apply(self, mutations: Sequence[Mutation]) -> PublishReceipt:
        changes = [m for m in mutations if not isinstance(m, CreateLesson)]
        targets = {m.id for m in changes}
        canonicals = {m.canonical for m in changes if isinstance(m, RetireLesson) and m.canonical}
        current = await self._current(targets | canonicals)
        conflicts = [
            Conflict(m.id, m.base_revision, *_revision_status(current.get(m.id)))
            for m in changes
            if (row := current.get(m.id)) is None
            or row["revision"] != m.base_revision
            or row["status"] == "retired"
        ]
        if conflicts:
            raise RevisionConflict(conflicts)
        retiring = {m.id for m in changes if isinstance(m, RetireLesson)}
        for m in changes:
            if isinstance(m, RetireLesson) and m.canonical:
                _check_canonical(m, current, retiring)

        now = utcnow().isoformat()
        receipt: dict[str, list[tuple[str, int]]] = {
            "created": [], "adapted": [], "retired": [], "deferred": [],
        }  # fmt: skip
        lesson_rows: list[tuple[Any, ...]] = []
        updates: list[tuple[Any, ...]] = []
        history: list[tuple[Any, ...]] = []
        evidence: list[tuple[str, str, str]] = []
        dropped_evidence: list[tuple[str]] = []

        creates = [m for m in mutations if isinstance(m, CreateLesson)]
        new_ids = await self._allocate_ids(len(creates))
        for lesson_id, new in zip(new_ids, creates, strict=True):
            scope_cols = _scope_columns(new.scope)
            lesson_rows.append(
                (lesson_id, 1, "active", *scope_cols, new.card.title, new.card.recommendation,
                 new.card.associations.model_dump_json(), None, now, now)
            )  # fmt: skip
            evidence.extend(_evidence_rows(lesson_id, new.evidence))
            history.append(
                _history_row(lesson_id, 1, None, "create", "active", new.scope, new.card,
                             new.author, new.reason, now)
            )  # fmt: skip
            receipt["created"].append((lesson_id, 1))

        for m in changes:
            row = current[m.id]
            revision = m.base_revision + 1
            scope = row["scope"]
            if isinstance(m, AdaptLesson):
                updates.append(
                    (revision, "active", m.card.title, m.card.recommendation,
                     m.card.associations.model_dump_json(), None, now, m.id, m.base_revision)
                )  # fmt: skip
                evidence.extend(_evidence_rows(m.id, m.evidence))
                history.append(
                    _history_row(m.id, revision, m.base_revision, "adapt", "active", scope,
                                 m.card, m.author, m.reason, now)
                )  # fmt: skip
                receipt["adapted"].append((m.id, revision))
            elif isinstance(m, DeferLesson):
                card = row["card"]
                updates.append(
                    (revision, "deferred", card.title, card.recommendation,
                     card.associations.model_dump_json(), None, now, m.id, m.base_revision)
                )  # fmt: skip
                history.append(
                    _history_row(m.id, revision, m.base_revision, "defer", "deferred", scope,
                                 card, m.author, m.reason, now)
                )  # fmt: skip
                receipt["deferred"].append((m.id, revision))
            elif isinstance(m, RetireLesson):
                updates.append(
                    (revision, "retired", None, None, None, m.canonical, now, m.id, m.base_revision)
                )
                dropped_evidence.append((m.id,))
                reason = m.reason or (f"absorbed by {m.canonical}" if m.canonical else "")
                history.append(
                    _history_row(m.id, revision, m.base_revision, "retire", "retired", scope,
                                 None, m.author, reason, now)
                )  # fmt: skip
                receipt["retired"].append((m.id, revision))

        await self._write_rows(lesson_rows, updates, history, evidence, dropped_evidence)
        return PublishReceipt(**receipt)

    async def _write_rows(
        self,
        inserts: list[tuple[Any, ...]],
        updates: list[tuple[Any, ...]],
        history: list[tuple[Any, ...]],
        evidence: list[tuple[str, str, str]],
        dropped_evidence: list[tuple[str]],
    ) -> None:
        if inserts:
            await self._conn.executemany(
                f"INSERT INTO lessons ({_LESSON_COLUMNS}, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                inserts,
            )
        if updates:
            cursor = await self._conn.executemany(
                "UPDATE lessons SET revision = ?, status = ?, title = ?, recommendation = ?, "
                "associations = ?, canonical = ?, updated_at = ? WHERE id = ? AND revision = ?",
                updates,
            )
            # Guard against a check-then-write race; BEGIN IMMEDIATE should make it impossible.
            if cursor.rowcount != len(updates):
                raise StoreError(f"{self.location}: revision check lost a race; nothing written")
        if dropped_evidence:
            await self._conn.executemany(
                "DELETE FROM lesson_evidence WHERE lesson_id = ?", dropped_evidence
            )
        if evidence:
            await self._conn.executemany(
                "INSERT OR IGNORE INTO lesson_evidence (lesson_id, kind, value) VALUES (?, ?, ?)",
                evidence,
            )
        if history:
            await self._conn.executemany(
                "INSERT INTO lesson_history (lesson_id, revision, previous_revision, action, "
                "status, scope, card, specialist, run_id, model, reason, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                history,
            )

    async def _current(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Current revision, status, scope and card of each existing ID (inside a transaction)."""
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        rows = await self._conn.execute_fetchall(
            f"SELECT {_LESSON_COLUMNS} FROM lessons WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(wanted),),
        )
        current = {}
        for row in rows:
            model = self._row_to_model(row, None)
            current[row[0]] = {
                "revision": model.revision,
                "status": model.status,
                "scope": model.scope,
                "card": model.card() if isinstance(model, Lesson) else None,
            }
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

    async def revert(self, lesson_id: str, to_revision: int, author: Author) -> Lesson | Tombstone:
        """Make revision `to_revision` current again, recorded as a new revision."""
        with anyio.CancelScope(shield=True), self._translated():
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                await self._revert_locked(lesson_id, to_revision, author)
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            await self._conn.execute("COMMIT")
        reverted = await self.get(lesson_id)
        assert reverted is not None
        return reverted

    async def _revert_locked(self, lesson_id: str, to_revision: int, author: Author) -> None:
        current = (await self._current([lesson_id])).get(lesson_id)
        if current is None:
            raise LessonNotFound(lesson_id)
        if to_revision >= current["revision"]:
            raise UsageError(
                f"{lesson_id} is at r{current['revision']}; revert goes back to an earlier "
                "revision (see `active-memory lessons history " + lesson_id + "`)"
            )
        rows = await self._conn.execute_fetchall(
            "SELECT status, card FROM lesson_history WHERE lesson_id = ? AND revision = ?",
            (lesson_id, to_revision),
        )
        if not rows:
            raise UsageError(
                f"{lesson_id} r{to_revision} is not in this store's history "
                f"(see `active-memory lessons history {lesson_id}`)"
            )
        status, card_json = next(iter(rows))
        card = Card.model_validate_json(card_json) if card_json else None
        revision = current["revision"] + 1
        now = utcnow().isoformat()
        cols: tuple[Any, ...] = (None, None, None)
        if card is not None and status != "retired":
            cols = (card.title, card.recommendation, card.associations.model_dump_json())
        else:
            status, card = "retired", None
        await self._write_rows(
            [],
            [(revision, status, *cols, None, now, lesson_id, current["revision"])],
            [
                _history_row(
                    lesson_id,
                    revision,
                    current["revision"],
                    "revert",
                    status,
                    current["scope"],
                    card,
                    author,
                    f"revert to r{to_revision}",
                    now,
                )
            ],
            [],
            [(lesson_id,)] if status == "retired" else [],
        )

    async def import_lessons(
        self, records: Sequence[Lesson | Tombstone], author: Author
    ) -> ImportReport:
        """Add or update lessons from an export, all or nothing; never recreate a tombstone."""
        seen: set[str] = set()
        for index, record in enumerate(records, start=1):
            if record.id in seen:
                raise InvalidMutation(record.id, f"appears twice in the import (record {index})")
            seen.add(record.id)
        with anyio.CancelScope(shield=True), self._translated():
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                report = await self._import_locked(records, author)
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            await self._conn.execute("COMMIT")
        return report

    async def _import_locked(
        self, records: Sequence[Lesson | Tombstone], author: Author
    ) -> ImportReport:
        current = await self._current(r.id for r in records)
        now = utcnow().isoformat()
        inserts, updates, history, evidence, dropped = [], [], [], [], []
        added, updated, unchanged = [], [], []
        for index, record in enumerate(records, start=1):
            row = current.get(record.id)
            card = record.card() if isinstance(record, Lesson) else None
            cols: tuple[Any, ...] = (None, None, None)
            if card is not None:
                cols = (card.title, card.recommendation, card.associations.model_dump_json())
            canonical = record.canonical if isinstance(record, Tombstone) else None
            if row is not None and row["scope"] != record.scope:
                raise InvalidMutation(
                    record.id, f"record {index} has another scope than the stored lesson"
                )
            if row is None:
                inserts.append(
                    (record.id, record.revision, record.status, *_scope_columns(record.scope),
                     *cols, canonical, now, now)
                )  # fmt: skip
                added.append((record.id, record.revision))
            elif row["status"] == "retired":
                unchanged.append((record.id, f"retired at r{row['revision']}; not recreated"))
                continue
            elif row["revision"] >= record.revision:
                unchanged.append((record.id, f"store already has r{row['revision']}"))
                continue
            else:
                updates.append(
                    (record.revision, record.status, *cols, canonical, now, record.id,
                     row["revision"])
                )  # fmt: skip
                dropped.append((record.id,))
                updated.append((record.id, record.revision))
            if isinstance(record, Lesson):
                evidence.extend(_evidence_rows(record.id, record.evidence))
            previous = row["revision"] if row is not None else None
            history.append(
                _history_row(record.id, record.revision, previous, "import", record.status,
                             record.scope, card, author, "imported", now)
            )  # fmt: skip
        await self._write_rows(inserts, updates, history, evidence, dropped)
        await self._bump_id_counter(records)
        return ImportReport(added=added, updated=updated, unchanged=unchanged)

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


def _check_canonical(
    m: RetireLesson, current: dict[str, dict[str, Any]], retiring: set[str]
) -> None:
    canonical = current.get(m.canonical or "")
    if canonical is None or canonical["status"] == "retired" or m.canonical in retiring:
        raise InvalidMutation(m.id, f"canonical {m.canonical} is not a living lesson")
    if canonical["scope"] != current[m.id]["scope"]:
        raise InvalidMutation(m.id, f"canonical {m.canonical} has another scope")


def _revision_status(row: dict[str, Any] | None) -> tuple[int | None, str | None]:
    return (None, None) if row is None else (row["revision"], row["status"])


def _scope_columns(scope: RepositoryScope | GraphScope) -> tuple[str, str, str, str]:
    if isinstance(scope, RepositoryScope):
        return ("repository", scope.repository, "", "")
    return ("graph", scope.repository or "", scope.graph_hash, scope.node)


def _evidence_rows(lesson_id: str, evidence: Evidence) -> list[tuple[str, str, str]]:
    rows = [(lesson_id, "run", run) for run in evidence.run_ids]
    rows += [(lesson_id, "evidence", item) for item in evidence.evidence_ids]
    rows += [(lesson_id, "citation", c.model_dump_json()) for c in evidence.citations]
    return rows


def _history_row(
    lesson_id: str,
    revision: int,
    previous: int | None,
    action: str,
    status: str,
    scope: RepositoryScope | GraphScope,
    card: Card | None,
    author: Author,
    reason: str,
    at: str,
) -> tuple[Any, ...]:
    return (
        lesson_id, revision, previous, action, status, scope.model_dump_json(),
        card.model_dump_json() if card is not None else None,
        author.specialist, author.run_id, author.model, reason, at,
    )  # fmt: skip
