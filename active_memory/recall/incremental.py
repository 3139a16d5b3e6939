"""The next generation from the previous one and a few changed rows: only what the
changes touch is re-encoded, every other blob is copied as bytes.

Ordinals stay put: a removed card leaves a hole, a new one is appended when its ID
sorts after every other (new lessons take the next number). So the changes touch a few
card and association shards, the key shards of their keys, and in a long posting list
only the page an ordinal falls in (postings.patch). `build` declines (returns False,
the caller then builds a complete generation, full_build.py) when an ID would sort in
the middle, when holes exceed a quarter of the cards, when the keys outgrew the shard
count, or when pages no longer referred to outnumber the live ones.
"""

from __future__ import annotations

import marshal

from active_memory.recall import postings
from active_memory.recall.generation import card_size, record_of, shard_of
from active_memory.recall.index import (
    CARDS_PER_SHARD,
    FORMAT,
    ID,
    KEYS_PER_SHARD,
    KEYWORD,
    SnapshotIndex,
    card_keys,
    key_shard,
    keyword_groups,
    order_key,
)
from active_memory.recall.writer import GenerationWriter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    Edit = tuple[set[int], dict[int, int]]

MAX_ROWS = 20_000
"""More changed rows than this are built complete (their edits would touch most shards)."""


class _Edits:
    """What the changes do to the keys: per key the ordinals removed and (re)filed."""

    def __init__(self, previous: SnapshotIndex) -> None:
        self.previous = previous
        self.lists: dict[str, Edit] = {}
        self.groups: dict[str, dict[tuple[str, ...], Edit]] = {}
        self.ids: dict[str, int | None] = {}

    def _edit(self, key: str, terms: tuple[str, ...] | None = None) -> Edit:
        if terms is None:
            return self.lists.setdefault(key, (set(), {}))
        return self.groups.setdefault(key, {}).setdefault(terms, (set(), {}))

    def remove(self, ordinal: int, assoc: Sequence[Any]) -> None:
        files, folders, identifiers, groups, commands = assoc[:5]
        for key in card_keys(files, folders, identifiers, commands):
            self._edit(key)[0].add(ordinal)
        for terms in keyword_groups(groups):
            for term in terms:  # whichever term it was filed under
                self._edit(KEYWORD + term, terms)[0].add(ordinal)

    def add(self, ordinal: int, record: Sequence[Any], size: int) -> None:
        for key in dict.fromkeys(card_keys(record[4], record[5], record[6], record[8])):
            self._edit(key)[1][ordinal] = size
        for terms in keyword_groups(record[7]):
            anchor = min(terms, key=lambda term: (self._filed(term), term))
            self._edit(KEYWORD + anchor, terms)[1][ordinal] = size

    def _filed(self, term: str) -> int:
        """How many cards are filed under `term` now (the rarest term anchors a group)."""
        found = self.previous.postings(KEYWORD + term) or ()
        return sum(postings.count(value) for _, value in found)

    def shards(self, bits: int) -> set[int]:
        keys = [*self.lists, *self.groups, *(ID + lesson_id for lesson_id in self.ids)]
        return {key_shard(key, bits) for key in keys}


def build(
    previous: SnapshotIndex,
    rows: Sequence[Sequence[Any]],
    meta: dict[str, Any],
    path: str,
    *,
    matched: bool,
) -> bool:
    """Write `previous` + `rows` to `path` incrementally; False when it should be
    complete instead (nothing is written then). `meta` gives scope, version and since."""
    old = previous.meta
    if old.get("format") != FORMAT or len(rows) > MAX_ROWS:
        return False
    cards_count, live, last_id = old["cards"], old["live"], old["last_id"]
    min_card = old["min_card"]
    edits = _Edits(previous)
    shards: dict[str, dict[int, list[Any]]] = {"cards": {}, "assoc": {}}

    def shard(section: str, number: int) -> list[Any]:
        found = shards[section].get(number)
        if found is None:
            found = list(previous.load(section, number)) if number < previous.count(section) else []
            shards[section][number] = found
        return found

    for row in rows:
        lesson_id = str(row[0])
        record = record_of(row, matched=matched)
        ordinal = edits.ids.get(lesson_id, previous.postings(ID + lesson_id))
        number, offset = shard_of(ordinal) if ordinal is not None else (0, 0)
        if ordinal is None:
            if record is None:
                continue
            if last_id is not None and order_key(lesson_id) <= order_key(last_id):
                return False  # an ID in the middle: ordinals would move
            ordinal, cards_count, last_id = cards_count, cards_count + 1, lesson_id
            number, offset = shard_of(ordinal)
            edits.ids[lesson_id] = ordinal
            live += 1
        else:
            assoc = shard("assoc", number)
            if offset < len(assoc) and assoc[offset] is not None:
                edits.remove(ordinal, assoc[offset])
            if record is None:
                edits.ids[lesson_id] = None
                live -= 1
        cards, assoc = shard("cards", number), shard("assoc", number)
        while len(cards) <= offset:
            cards.append(None)
            assoc.append(None)
        if record is None:
            cards[offset] = assoc[offset] = None
            continue
        cards[offset], assoc[offset] = record[:4], record[4:9]
        size = card_size(record)
        edits.add(ordinal, record, size)
        min_card = size if not min_card else min(min_card, size)
    if cards_count - live > cards_count // 4 + 64:
        return False  # too many holes: compact
    return _write(previous, edits, shards, path, {
        **meta, "cards": cards_count, "live": live, "last_id": last_id, "min_card": min_card,
    })  # fmt: skip


def _write(
    previous: SnapshotIndex,
    edits: _Edits,
    shards: dict[str, dict[int, list[Any]]],
    path: str,
    meta: dict[str, Any],
) -> bool:
    bits = previous.meta["key_bits"]
    base_pages = previous.count("pages")
    new_pages: list[bytes] = []

    def add_page(blob: bytes) -> int:
        new_pages.append(blob)
        return base_pages + len(new_pages) - 1

    def load(number: int) -> Any:
        if number >= base_pages:
            return postings.prepare(marshal.loads(new_pages[number - base_pages]))
        return previous.page(number)

    tables: dict[int, dict[str, Any]] = {}
    keys = previous.meta["keys"]
    dead = previous.meta.get("pages_dead", 0)
    for number in edits.shards(bits):
        tables[number] = dict(previous.key_shard(number))
    for lesson_id, ordinal in edits.ids.items():
        table = tables[key_shard(ID + lesson_id, bits)]
        keys += _store(table, ID + lesson_id, ordinal)
    for key, (removed, upserted) in edits.lists.items():
        table = tables[key_shard(key, bits)]
        value, dropped = postings.patch(table.get(key), removed, upserted, load, add_page)
        dead += len(dropped)
        keys += _store(table, key, value)
    for key, groups in edits.groups.items():
        table = tables[key_shard(key, bits)]
        found = dict(table.get(key) or ())
        for terms, (removed, upserted) in groups.items():
            if terms not in found and not upserted:
                continue  # removed under a term it was not filed under
            value, dropped = postings.patch(found.get(terms), removed, upserted, load, add_page)
            dead += len(dropped)
            if value is None:
                found.pop(terms, None)
            else:
                found[terms] = value
        keys += _store(table, key, tuple(sorted(found.items())) or None)
    pages = base_pages + len(new_pages)
    if keys > (KEYS_PER_SHARD << bits) * 4 or dead > max(64, pages - dead):
        return False  # the keys outgrew the shards, or dead pages: build it complete
    with GenerationWriter(path) as writer:
        for number in range(base_pages):
            writer.copy("pages", previous, number)
        for blob in new_pages:
            writer.add("pages", blob)
        for number in range(1 << bits):
            if number in tables:
                writer.add_value("keys", tables[number])
            else:
                writer.copy("keys", previous, number)
        card_shards = -(-meta["cards"] // CARDS_PER_SHARD)
        for section in ("cards", "assoc"):
            for number in range(card_shards):
                if number in shards[section]:
                    writer.add_value(section, tuple(shards[section][number]))
                else:
                    writer.copy(section, previous, number)
        writer.finish({**meta, "keys": keys, "key_bits": bits, "pages_dead": dead})
    return True


def _store(table: dict[str, Any], key: str, value: Any) -> int:
    """Set or drop `key`; the change in the number of keys (-1, 0, 1)."""
    had = key in table
    if value is not None:
        table[key] = value
        return 0 if had else 1
    table.pop(key, None)
    return -1 if had else 0
