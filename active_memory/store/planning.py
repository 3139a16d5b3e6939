"""What a write transaction decides, the same for every backend.

A backend reads the current state of the lessons a write touches (locked), hands it here,
and gets back either an error (nothing is written) or the rows to write. Keeping the
decisions in one place keeps the SQLite and PostgreSQL stores' rules identical.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice

from pydantic import ValidationError

from active_memory.errors import (
    Conflict,
    InvalidMutation,
    LessonNotFound,
    RevisionConflict,
    StoreCorrupt,
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
    Lesson,
    Mutation,
    PublishReceipt,
    RepositoryScope,
    RetireLesson,
    Tombstone,
    utcnow,
)
from active_memory.store.models import ImportReport
from active_memory.store.rows import ChangeSet

_NUMBERED_ID = re.compile(r"^L-(\d+)$")


@dataclass(frozen=True, slots=True)
class Current:
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


def check_distinct_targets(mutations: Sequence[Mutation]) -> None:
    """Refuse two mutations of one lesson in one publish."""
    seen: set[str] = set()
    for m in mutations:
        if isinstance(m, CreateLesson):
            continue
        if m.id in seen:
            raise InvalidMutation(m.id, "has more than one mutation in one publish")
        seen.add(m.id)


def check_distinct_records(
    records: Sequence[Lesson | Tombstone], seen: set[str] | None = None, first: int = 1
) -> None:
    """Refuse an import that names one ID twice (`seen`: IDs of earlier chunks, which
    start at record number `first`)."""
    seen = set() if seen is None else seen
    for index, record in enumerate(records, start=first):
        if record.id in seen:
            raise InvalidMutation(record.id, f"appears twice in the import (record {index})")
        seen.add(record.id)


def touched_ids(mutations: Sequence[Mutation]) -> set[str]:
    """Every existing lesson a publish reads: its targets and the canonicals it names."""
    ids: set[str] = set()
    for m in mutations:
        if isinstance(m, CreateLesson):
            continue
        ids.add(m.id)
        if isinstance(m, RetireLesson) and m.canonical:
            ids.add(m.canonical)
    return ids


IMPORT_CHUNK = 1000
"""Records an import plans and writes at a time, inside its one transaction."""


def chunks(
    records: Iterable[Lesson | Tombstone], size: int | None = None
) -> Iterator[tuple[int, list[Lesson | Tombstone]]]:
    """(number of the chunk's first record, the chunk) over a possibly one-pass iterable."""
    remaining, first = iter(records), 1
    while chunk := list(islice(remaining, size or IMPORT_CHUNK)):
        yield first, chunk
        first += len(chunk)


def create_count(mutations: Sequence[Mutation]) -> int:
    """How many new IDs a publish needs."""
    return sum(isinstance(m, CreateLesson) for m in mutations)


def plan_publish(
    mutations: Sequence[Mutation], current: dict[str, Current], new_ids: Sequence[str]
) -> tuple[ChangeSet, PublishReceipt]:
    """Check every mutation against `current`; the rows to write and the receipt.

    Raises `RevisionConflict` naming every stale, retired or unknown target, or
    `InvalidMutation` for a canonical that cannot absorb a lesson.
    """
    changes = [m for m in mutations if not isinstance(m, CreateLesson)]
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
    for lesson_id, new in zip(new_ids, creates, strict=True):
        rows.insert(lesson_id, 1, "active", new.scope, new.card)
        rows.add_evidence(lesson_id, new.evidence)
        rows.record(lesson_id, 1, None, "create", "active", new.scope, new.card,
                    new.author, new.reason)  # fmt: skip
        receipt.created.append((lesson_id, 1))
    for m in changes:
        now = current[m.id]
        revision = m.base_revision + 1
        card: Card | None
        status: str
        if isinstance(m, AdaptLesson):
            status, card, canonical, reason = m.status or "active", m.card, None, m.reason
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
    return rows, receipt


def check_revert(lesson_id: str, to_revision: int, now: Current | None) -> Current:
    """Refuse a revert of an unknown lesson, or to the current or a later revision."""
    if now is None:
        raise LessonNotFound(lesson_id)
    if to_revision >= now.revision:
        raise UsageError(
            f"{lesson_id} is at r{now.revision}; revert goes back to an earlier revision "
            f"{_see_history(lesson_id)}"
        )
    return now


def plan_revert(
    lesson_id: str,
    to_revision: int,
    now: Current,
    found: tuple[str, str | None] | None,
    author: Author,
) -> ChangeSet:
    """The rows that make revision `to_revision` (its history `(status, card)`) current."""
    if found is None:
        raise UsageError(
            f"{lesson_id} r{to_revision} is not in this store's history {_see_history(lesson_id)}"
        )
    status, card_json = found
    card = Card.model_validate_json(card_json) if card_json and status != "retired" else None
    status = status if card is not None else "retired"
    revision = now.revision + 1
    rows = ChangeSet(now=utcnow().isoformat())
    rows.update(lesson_id, now.revision, revision, status, card)
    rows.record(lesson_id, revision, now.revision, "revert", status, now.scope, card, author,
                f"revert to r{to_revision}")  # fmt: skip
    return rows


def plan_import(
    records: Sequence[Lesson | Tombstone],
    current: dict[str, Current],
    author: Author,
    report: ImportReport,
    first: int = 1,
) -> ChangeSet:
    """Add new IDs, update older living ones, leave newer ones and tombstones alone, and
    say so in `report` (an import in chunks adds each to the same report).

    A record whose scope differs from the stored lesson refuses the whole import.
    """
    rows = ChangeSet(now=utcnow().isoformat())
    for index, record in enumerate(records, start=first):
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
    return rows


def next_number_after(records: Sequence[Lesson | Tombstone]) -> int | None:
    """The lowest `L-<n>` number clear of every imported numbered ID, or None."""
    numbers = [int(m.group(1)) for r in records if (m := _NUMBERED_ID.match(r.id))]
    return max(numbers) + 1 if numbers else None


def _see_history(lesson_id: str) -> str:
    return f"(see `active-memory lessons history {lesson_id}`)"


def _check_canonical(m: RetireLesson, current: dict[str, Current], retiring: set[str]) -> None:
    canonical = current.get(m.canonical or "")
    if canonical is None or canonical.status == "retired" or m.canonical in retiring:
        raise InvalidMutation(m.id, f"canonical {m.canonical} is not a living lesson")
    if canonical.scope != current[m.id].scope:
        raise InvalidMutation(m.id, f"canonical {m.canonical} has another scope")


def _revision_status(row: Current | None) -> tuple[int | None, str | None]:
    return (None, None) if row is None else (row.revision, row.status)
