"""A generation's source records: what the store's change rows become, and how the next
generation is made from them (incremental.py, full_build.py).

A generation's *source* is the list of its cards in lesson-ID order, each a record
`(id, revision, rendered card, cited, files, folders, identifiers, keywords,
commands)` (`cited`: index.py). The next generation is the previous one with the
changed rows applied: an `active` row replaces (or adds) its card, any other status
removes it. The store is read only for the rows that changed (`LessonStore.changes`),
never the whole scope again, unless a complete build is needed.

Rows come from the store as plain tuples (store/changes.py `CHANGE_COLUMNS`); the
associations are JSON the store validated when it wrote them, decoded here with the C
half of `json` only. A graph scope's cards carry no associations (they are appended to
instructions, not matched).

How the next generation is made: incremental.py (a few changes), full_build.py (a
complete one, streamed), building.py (from the store), build_from_rows.py (from rows
held in memory: tests, benches).
"""

from __future__ import annotations

from active_memory.cited_text import latest
from active_memory.recall import jsonio
from active_memory.recall.frame import render_card
from active_memory.recall.index import (
    CARDS_PER_SHARD,
    Cited,
    SnapshotIndex,
    keyword_groups,
    order_key,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from typing import Any

Record = tuple["Any", ...]
"""(id, revision, card text, cited, files, folders, identifiers, keywords, commands)."""


class StoredRowUnreadable(ValueError):
    """A changed row's associations are not the JSON the store writes."""


def record_of(row: Sequence[Any], *, matched: bool) -> Record | None:
    """The source record of one changed row; None when the row leaves the scope."""
    lesson_id, revision, status, title, recommendation, associations = row[:6]
    if status != "active":
        return None
    text = render_card(str(lesson_id), int(revision), title or "", recommendation or "")
    if not matched:
        return (str(lesson_id), int(revision), text, None, (), (), (), (), ())
    cited = cited_of(lesson_id, row[6], row[7]) if len(row) > 7 else None
    try:
        value = jsonio.loads(associations or "{}")
    except ValueError as exc:
        raise StoredRowUnreadable(f"lesson {lesson_id}: associations: {exc}") from None
    if not isinstance(value, dict):
        raise StoredRowUnreadable(f"lesson {lesson_id}: associations are not an object")
    return (
        str(lesson_id),
        int(revision),
        text,
        cited,
        tuple(value.get("files") or ()),
        tuple(value.get("folders") or ()),
        tuple(value.get("identifiers") or ()),
        tuple(tuple(group) for group in value.get("keywords") or ()),
        tuple(value.get("commands") or ()),
    )


def card_size(record: Record) -> int:
    """What a record's card costs in a budget: its UTF-8 size."""
    return len(record[2].encode("utf-8"))


MAX_CITED = 16
"""Fingerprinted ranges kept per card (the latest ones); delivery checks at most these."""


def cited_of(lesson_id: object, updated_at: object, citations: object) -> Cited | None:
    """A card's revision date and its fingerprinted cited ranges, from a change row's
    `updated_at` and citations (a JSON array of `[path, first, last, sha256]`, in the
    order recorded); None when no citation has a fingerprint.

    The citations that count are `cited_text.latest`'s: a range cited again keeps its
    latest fingerprint, and a range let go (`NO_TEXT`) is left out."""
    if not citations:
        return None
    try:
        value = jsonio.loads(str(citations))
    except ValueError as exc:
        raise StoredRowUnreadable(f"lesson {lesson_id}: citations: {exc}") from None
    rows: list[tuple[str, int, int, str]] = []
    for item in value if isinstance(value, list) else ():
        if not isinstance(item, list) or len(item) != 4:
            continue
        path, first, last, digest = item
        if not isinstance(path, str) or not isinstance(digest, str) or len(digest) != 64:
            continue
        rows.append((path, int(first or 0), int(last or 0), digest))
    ranges = tuple(latest(rows))[-MAX_CITED:]
    return (str(updated_at or "")[:10], ranges) if ranges else None


def anchors(records: Iterable[Record]) -> dict[tuple[str, ...], str]:
    """For every keyword group of `records`, the term it is filed under: its rarest
    among them (then the first in order), so a popular term's key holds few groups."""
    groups = [terms for record in records for terms in keyword_groups(record[7])]
    frequency: dict[str, int] = {}
    for terms in groups:
        for term in terms:
            frequency[term] = frequency.get(term, 0) + 1
    return {terms: min(terms, key=lambda term: (frequency[term], term)) for terms in groups}


def next_source(
    previous: Iterable[Record], rows: Iterable[Sequence[Any]], *, matched: bool
) -> list[Record]:
    """`previous` with `rows` applied, in lesson-ID order."""
    merged: dict[str, Record] = {record[0]: record for record in previous}
    for row in rows:
        record = record_of(row, matched=matched)
        if record is None:
            merged.pop(str(row[0]), None)
        else:
            merged[record[0]] = record
    return sorted(merged.values(), key=lambda record: order_key(record[0]))


def source_of(index: SnapshotIndex) -> list[Record]:
    """Every record of a generation, in lesson-ID order (a complete rebuild in memory)."""
    return list(iter_source(index))


def iter_source(index: SnapshotIndex) -> Iterator[Record]:
    """Every record of a generation, in lesson-ID order, shard by shard."""
    for number in range(index.count("cards")):
        cards = index.load("cards", number)
        associations = index.load("assoc", number)
        for card, assoc in zip(cards, associations, strict=True):
            if card is not None:
                yield (*card[:4], *assoc[:5])


def shard_of(ordinal: int) -> tuple[int, int]:
    """(card shard, position in it) of `ordinal`."""
    return divmod(ordinal, CARDS_PER_SHARD)
