"""Building one recall generation from the previous one and the store's changes (pure).

A generation's *source* is the list of its cards in lesson-ID order, each
`(id, revision, rendered card, cited, files, folders, identifiers, keywords, commands)`
(`cited`: index.py). The next
generation's source is the previous one with the changed rows applied: an `active` row
replaces (or adds) its card, any other status removes it. The store is read only for
the rows that changed (`LessonStore.changes`), never the whole scope again. New lessons
almost always take the next number (`L-<n+1>`), so the merged source stays in order by
appending; only an ID that sorts before the last one costs a sort.

Rows come from the store as plain tuples (store/changes.py `CHANGE_COLUMNS`); the
associations are JSON the store validated when it wrote them, decoded here with the C
half of `json` only. A graph scope's cards carry no associations (they are appended to
instructions, not matched).

`build` then makes the next generation incrementally where it can (see there): a change
of a few lessons re-encodes a few shards and copies every other blob as bytes. Builds
run with the cyclic collector paused: they allocate many small containers and no
cycles, so collections would only cost.
"""

from __future__ import annotations

import gc
import marshal

from active_memory.cited_text import latest
from active_memory.recall import jsonio
from active_memory.recall.frame import render_card
from active_memory.recall.index import (
    KEYS_PER_SHARD,
    KEYWORD,
    BuiltIndex,
    Cited,
    IndexCard,
    SnapshotIndex,
    build_index,
    card_keys,
    key_shard,
    keyword_groups,
    natural_key,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
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
        return (lesson_id, int(revision), text, None, (), (), (), (), ())
    cited = cited_of(lesson_id, row[6], row[7]) if len(row) > 7 else None
    try:
        value = jsonio.loads(associations or "{}")
    except ValueError as exc:
        raise StoredRowUnreadable(f"lesson {lesson_id}: associations: {exc}") from None
    if not isinstance(value, dict):
        raise StoredRowUnreadable(f"lesson {lesson_id}: associations are not an object")
    return (
        lesson_id,
        int(revision),
        text,
        cited,
        tuple(value.get("files") or ()),
        tuple(value.get("folders") or ()),
        tuple(value.get("identifiers") or ()),
        tuple(tuple(group) for group in value.get("keywords") or ()),
        tuple(value.get("commands") or ()),
    )


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


def next_source(
    previous: Iterable[Record], rows: Iterable[Sequence[Any]], *, matched: bool
) -> list[Record]:
    """`previous` with `rows` applied, in lesson-ID order."""
    merged: dict[str, Record] = {record[0]: record for record in previous}
    last = natural_key(next(reversed(merged))) if merged else None
    added: list[Record] = []
    for row in rows:
        record = record_of(row, matched=matched)
        lesson_id = str(row[0])
        if record is None:
            merged.pop(lesson_id, None)
        elif lesson_id in merged:
            merged[lesson_id] = record
        else:
            added.append(record)
    added.sort(key=lambda record: natural_key(record[0]))
    in_order = not added or last is None or natural_key(added[0][0]) > last
    merged.update((record[0], record) for record in added)
    records = list(merged.values())
    if not in_order:
        records.sort(key=lambda record: natural_key(record[0]))
    return records


def full(records: Sequence[Record], scope: dict[str, Any]) -> BuiltIndex:
    """The complete generation of `records` (in lesson-ID order)."""
    with _collector_paused():
        cards = [
            IndexCard(
                record[0],
                record[1],
                record[2],
                cited=record[3],
                files=record[4],
                folders=record[5],
                identifiers=record[6],
                keywords=record[7],
                commands=record[8],
            )
            for record in records
        ]
        return build_index(cards, scope, ordered=True)


def source_of(index: SnapshotIndex) -> list[Record]:
    """Every record of a generation, in lesson-ID order (for a complete rebuild)."""
    key_shards, card_shards = index.meta["key_shards"], index.meta["card_shards"]
    records: list[Record] = []
    for number in range(card_shards):
        cards = index.load(key_shards + number)
        associations = index.load(key_shards + card_shards + number)
        for card, assoc in zip(cards, associations, strict=True):
            if card is not None:
                # A format 2 card has no `cited`, a format 3 source no `commands` (neither
                # is built upon; both kept readable).
                commands = assoc[4] if len(assoc) > 4 else ()
                cited = card[3] if len(card) > 3 else None
                records.append((*card[:3], cited, *assoc[:4], commands))
    return records


def build(
    previous: SnapshotIndex | None,
    rows: Sequence[Sequence[Any]],
    scope: dict[str, Any],
    *,
    matched: bool,
) -> BuiltIndex:
    """The next generation: `previous` with the changed `rows` applied.

    Incremental when it can be: ordinals stay put (a removed card leaves a hole, a new
    one is appended when its ID sorts after every other), so only the card, association
    and key shards the changes touch are re-encoded; every other blob is copied from the
    previous file as bytes. Complete rebuild when there is no previous generation, when
    an ID would sort in the middle, when holes exceed a quarter of the cards, or when
    the keys outgrow the shard count.
    """
    if previous is None:
        return full(next_source((), rows, matched=matched), scope)
    with _collector_paused():
        built = _incremental(previous, rows, scope, matched=matched)
    if built is None:
        return full(next_source(source_of(previous), rows, matched=matched), scope)
    return built


def _incremental(
    previous: SnapshotIndex, rows: Sequence[Sequence[Any]], scope: dict[str, Any], *, matched: bool
) -> BuiltIndex | None:
    meta = previous.meta
    key_shards, card_shards = meta["key_shards"], meta["card_shards"]
    per = meta["cards_per_shard"]
    directory: dict[str, int] = previous.load(key_shards + 2 * card_shards)
    cards_count, live, last_id = meta["cards"], meta["live"], meta["last_id"]
    min_card = meta["min_card"]
    cards: dict[int, list[Any]] = {}
    assocs: dict[int, list[Any]] = {}

    def shard_of(blobs: dict[int, list[Any]], base: int, number: int) -> list[Any]:
        found = blobs.get(number)
        if found is None:
            found = list(previous.load(base + number)) if number < card_shards else []
            blobs[number] = found
        return found

    removed: dict[int, tuple[Any, ...]] = {}  # ordinal → its old associations
    added: dict[int, tuple[Any, ...]] = {}  # ordinal → its new associations
    for row in rows:
        lesson_id = str(row[0])
        record = record_of(row, matched=matched)
        ordinal = directory.get(lesson_id)
        if ordinal is None:
            if record is None:
                continue
            if last_id is not None and natural_key(lesson_id) <= natural_key(last_id):
                return None  # an ID in the middle: ordinals would move
            ordinal, cards_count, last_id = cards_count, cards_count + 1, lesson_id
            directory[lesson_id] = ordinal
            live += 1
        else:
            number, offset = divmod(ordinal, per)
            old = shard_of(assocs, key_shards + card_shards, number)[offset]
            if old is not None:
                removed[ordinal] = old
            if record is None:
                del directory[lesson_id]
                live -= 1
        number, offset = divmod(ordinal, per)
        card_shard = shard_of(cards, key_shards, number)
        assoc_shard = shard_of(assocs, key_shards + card_shards, number)
        while len(card_shard) <= offset:
            card_shard.append(None)
            assoc_shard.append(None)
        if record is None:
            card_shard[offset] = assoc_shard[offset] = None
        else:
            card_shard[offset] = record[:4]
            assoc_shard[offset] = record[4:]
            added[ordinal] = record[4:]
            size = len(record[2].encode("utf-8"))
            min_card = size if min_card == 0 else min(min_card, size)
    if cards_count - live > cards_count // 4 + 64:
        return None  # too many holes: compact
    keys: dict[int, dict[str, tuple[Any, ...]]] = {}
    key_count = meta["keys"]

    def key_table(key: str) -> dict[str, tuple[Any, ...]]:
        number = key_shard(key, key_shards)
        table = keys.get(number)
        if table is None:
            table = dict(previous.postings_shard(number))
            keys[number] = table
        return table

    for ordinal, (files, folders, identifiers, groups, commands) in removed.items():
        for key in card_keys(files, folders, identifiers, commands):
            table = key_table(key)
            left = tuple(value for value in table.get(key, ()) if value != ordinal)
            key_count -= _store(table, key, left)
        for terms in keyword_groups(groups):
            for term in terms:  # whichever term it was filed under
                table = key_table(KEYWORD + term)
                found = table.get(KEYWORD + term, ())
                left = tuple(entry for entry in found if entry[0] != ordinal)
                if len(left) != len(found):
                    key_count -= _store(table, KEYWORD + term, left)
    for ordinal, (files, folders, identifiers, groups, commands) in added.items():
        for key in dict.fromkeys(card_keys(files, folders, identifiers, commands)):
            table = key_table(key)
            key_count += _store(table, key, _insert(table.get(key, ()), ordinal))
        for terms in keyword_groups(groups):
            anchor = min(terms, key=lambda term: (len(key_table(KEYWORD + term).get(
                KEYWORD + term, ())), term))  # fmt: skip
            table = key_table(KEYWORD + anchor)
            key_count += _store(
                table, KEYWORD + anchor, _insert(table.get(KEYWORD + anchor, ()), (ordinal, terms))
            )
    if key_count > key_shards * KEYS_PER_SHARD * 4:
        return None  # the keys outgrew the shards: rebuild with more
    new_card_shards = -(-cards_count // per)
    blobs: list[bytes | tuple[int, int]] = [
        marshal.dumps(keys[number]) if number in keys else previous.blob_range(number)
        for number in range(key_shards)
    ]
    for base, changed in ((key_shards, cards), (key_shards + card_shards, assocs)):
        blobs += [
            marshal.dumps(tuple(changed[number]))
            if number in changed
            else previous.blob_range(base + number)
            for number in range(new_card_shards)
        ]
    blobs.append(marshal.dumps(directory))
    new_meta = {
        **{name: value for name, value in meta.items() if name != "offsets"},
        "cards": cards_count,
        "live": live,
        "keys": key_count,
        "card_shards": new_card_shards,
        "min_card": min_card,
        "last_id": last_id,
        "scope": dict(scope),
    }
    return BuiltIndex(new_meta, blobs, previous)


def _store(table: dict[str, tuple[Any, ...]], key: str, values: tuple[Any, ...]) -> int:
    """Set or drop `key`; returns the change in the number of keys (-1, 0, 1)."""
    had = key in table
    if values:
        table[key] = values
        return 0 if had else 1
    table.pop(key, None)
    return -1 if had else 0


def _insert(values: tuple[Any, ...], value: Any) -> tuple[Any, ...]:
    """`values` (sorted) with `value` in its place, once."""
    import bisect

    position = bisect.bisect_left(values, value)
    if position < len(values) and values[position] == value:
        return values
    return (*values[:position], value, *values[position:])


class _collector_paused:
    """Pause the cyclic collector: a build allocates many containers and no cycles."""

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            gc.enable()
