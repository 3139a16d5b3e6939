"""A lesson confirmed against its code without a new revision (schema 10).

When a lesson's cited code changed and a person (or, later, maintenance) judges that it
still holds, its citations are cited again where the code is now and fingerprinted anew
(docs/staleness.md, "Still valid"). Its card does not change, so its revision must not
either: a new revision would be delivered again to every session that already had the
card (SPEC §8 delivers an `(id, revision)` once per provider session).

So a keep is not a publish: `apply_keep` checks the revision it was decided on (a
`RevisionConflict` otherwise, as for any change), appends the new citations to the
lesson's evidence (a range cited again becomes its latest fingerprint), stamps a new
store change version on the lesson (recall re-reads its cited ranges, changes.py) and
records who kept it and why in `lesson_keeps`, append-only like `lesson_history`.
`merged_history` shows each keep in the lesson's history right after the revision it
kept, as action `keep` with that revision's card.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from active_memory.errors import Conflict, RevisionConflict
from active_memory.lessons import Author, Citation, HistoryEntry, utcnow
from active_memory.store.dialect import Dialect, Tx
from active_memory.store.rows import ChangeSet
from active_memory.store.writing import current_rows, stamp_version, write_changes

KEEP_COLUMNS = "lesson_id, revision, status, specialist, run_id, model, reason, at"


class KeepLesson(BaseModel):
    """Confirm lesson `id` at `base_revision`: `citations` (fingerprinted by the caller
    against the checkout now) are added to its evidence; card and revision stay."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    base_revision: Annotated[int, Field(ge=1)]
    citations: list[Citation] = Field(default_factory=list)
    author: Author
    reason: str = Field(min_length=1, max_length=640)


async def apply_keep(tx: Tx, d: Dialect, keep: KeepLesson) -> None:
    """Write `keep` inside the transaction `tx` (see the module docstring)."""
    now = (await current_rows(tx, d, [keep.id])).get(keep.id)
    if now is None or now.revision != keep.base_revision or now.status == "retired":
        found = (None, None) if now is None else (now.revision, now.status)
        raise RevisionConflict([Conflict(keep.id, keep.base_revision, *found)])
    at = utcnow().isoformat()
    changes = ChangeSet(now=at)
    changes.evidence += [(keep.id, "citation", c.model_dump_json()) for c in keep.citations]
    await write_changes(tx, d, changes)
    await stamp_version(tx, d, [keep.id])
    a = keep.author
    await tx.execute(
        f"INSERT INTO lesson_keeps ({KEEP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        keep.id, now.revision, now.status, a.specialist, a.run_id, a.model, keep.reason, at,
    )  # fmt: skip


def merged_history(entries: Sequence[HistoryEntry], keeps: Sequence[Any]) -> list[HistoryEntry]:
    """`entries` (the history, oldest first) with each keep row (`KEEP_COLUMNS`, oldest
    first) after the last entry of the revision it kept."""
    if not keeps:
        return list(entries)
    by_revision: dict[int, list[Any]] = {}
    for row in keeps:
        by_revision.setdefault(int(row[1]), []).append(row)
    last = {entry.revision: index for index, entry in enumerate(entries)}
    out: list[HistoryEntry] = []
    for index, entry in enumerate(entries):
        out.append(entry)
        if last.get(entry.revision) != index:
            continue
        for row in by_revision.pop(entry.revision, []):
            author = Author(specialist=row[3], run_id=row[4], model=row[5])
            kept = HistoryEntry(
                lesson_id=row[0], revision=row[1], previous_revision=row[1], action="keep",
                status=row[2], card=entry.card, author=author, reason=row[6], at=row[7],
            )  # fmt: skip
            out.append(kept)
    return out
