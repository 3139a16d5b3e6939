"""A complete generation, streamed: memory bounded whatever the scope's size, and a build
that was killed resumes where it stopped.

Four phases, all through files in the scope's `build/` folder (the builder holds the
scope's builder lock, so only one process works there):

A. **Read** the scope's active lessons page by page in ID order (`reader.page`: each page
   its own short read), render each page's cards, sort them into lesson-ID order and
   write them as one *run* file; `manifest` records after each run the version the first
   page was read at (`base`), the last ID read and the runs written. A build killed in A
   resumes after its last whole run, however much later (the runs stay valid: phase B
   catches up with whatever changed since `base`).
B. **Catch up**: the scope's changes since `base`, read in one transaction
   (`reader.changes_since`), become *override* runs: a changed lesson's latest row, or
   its removal. The result is exactly the scope at the version B read (`version`).
C. **Merge** the runs in lesson-ID order (an override wins over a page's copy), number
   the cards, write card and association shards to the generation as they come, and
   spill each card's postings `(checksum, key, ordinal, size, terms)` to sorted runs of
   at most `POSTINGS_RUN` entries.
D. **Index**: merge the posting runs in (checksum, key) order; encode each key's list
   (long ones into pages, postings.py), write the key values to a temporary stream,
   then the key shards (the checksum's top bits, so they come shard by shard).

Memory is a page of lessons, a posting run and one key's list at a time (the hot
folder's 300,000 entries are 2 MB of arrays), never the scope. C and D start over when
killed (they only read files A and B wrote). Keyword groups are filed under their
rarest term in their page (generation.anchors): a sample of the whole, which only
decides which key holds a group, never whether it is found.
"""

from __future__ import annotations

import heapq
import marshal
import os
import shutil
import time

from active_memory.atomic_files import write_atomically
from active_memory.recall import postings
from active_memory.recall.generation import anchors, card_size
from active_memory.recall.index import (
    CARDS_PER_SHARD,
    FORMAT,
    ID,
    KEYWORD,
    card_keys,
    key_bits_for,
    key_checksum,
    keyword_groups,
    order_key,
)
from active_memory.recall.writer import GenerationWriter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from contextlib import AbstractContextManager
    from typing import Any, Protocol

    from active_memory.recall.generation import Record

    class ScopeReader(Protocol):
        """Where a complete build reads its scope from (building.py: the store)."""

        def page(self, after: str | None, limit: int) -> tuple[int, str | None, list[Record]]:
            """(version, last ID read, the records of the next page after ID `after`)."""

        def changes_since(
            self, since: int
        ) -> AbstractContextManager[tuple[int, int, Iterable[tuple[str, Record | None]]]]:
            """(version, the scope's latest change, each changed ID with its record or
            None) since `since`, in one read."""


PAGE_ROWS = 20_000
"""Lessons per page read and per run (about 20-40 MB while a page is sorted)."""
POSTINGS_RUN = 150_000
"""Posting entries held before a sorted run is spilled."""
BATCH = 512
"""Items per marshal record in a run file."""
MANIFEST = "manifest"
WORK_STALE_SECONDS = 7 * 24 * 3600.0
"""Work older than this is not resumed (the store has moved on too far)."""


def work_folder(path: str) -> str:
    """The `build/` folder beside the generation being built at `path`."""
    return os.path.join(os.path.dirname(path), "build")


def build(
    work: str,
    reader: ScopeReader,
    meta: dict[str, Any],
    path_for: str | Callable[[int], str],
    *,
    matched: bool,
    progress: Callable[[str], None] | None = None,
) -> tuple[str, int, int]:
    """Build the complete generation of `reader`'s scope; (its path, version, latest).

    `path_for(version)` names the file (a string: that file); `meta` gives the scope
    (its `version` and `since` are set here). Resumes the work left in `work`.
    """
    note = progress or (lambda message: None)
    manifest = _resume(work, meta)
    _read_pages(work, reader, manifest, matched, note)
    overrides, version, latest = _catch_up(work, reader, manifest)
    path = path_for if isinstance(path_for, str) else path_for(version)
    with GenerationWriter(path) as writer:
        runs = [os.path.join(work, name) for name in manifest["runs"]]
        spilled, summary = _merge_cards(work, writer, runs, overrides, note)
        keys, bits = _index(work, writer, spilled, note)
        writer.finish(
            {
                **meta,
                **summary,
                "keys": keys,
                "key_bits": bits,
                "version": version,
                "since": latest,
                "pages_dead": 0,
            }
        )
    shutil.rmtree(work, ignore_errors=True)
    return path, version, latest


# --- A: pages into runs (resumable) -------------------------------------------------


def _resume(work: str, meta: dict[str, Any]) -> dict[str, Any]:
    """The manifest of the work to continue, or a fresh one (stale or foreign work is
    dropped)."""
    identity = [FORMAT, repr(sorted(meta.get("scope", {}).items()))]
    try:
        with open(os.path.join(work, MANIFEST), "rb") as handle:
            manifest = marshal.load(handle)
        fresh = time.time() - float(manifest["started"]) < WORK_STALE_SECONDS
        if manifest.get("identity") == identity and fresh:
            _drop_unlisted(work, manifest)
            return dict(manifest)
    except (OSError, ValueError, EOFError, TypeError, KeyError):
        pass
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    return {"identity": identity, "started": time.time(), "base": None, "after": None,
            "runs": [], "read": False}  # fmt: skip


def _drop_unlisted(work: str, manifest: dict[str, Any]) -> None:
    """Remove what a killed build wrote after its last manifest (C, D and partial runs)."""
    keep = {MANIFEST, *manifest["runs"]}
    for name in os.listdir(work):
        if name not in keep:
            try:  # noqa: SIM105 - gone already is fine
                os.unlink(os.path.join(work, name))
            except OSError:
                pass


def _save(work: str, manifest: dict[str, Any]) -> None:
    write_atomically(os.path.join(work, MANIFEST), marshal.dumps(manifest))


def _read_pages(
    work: str, reader: ScopeReader, manifest: dict[str, Any], matched: bool,
    note: Callable[[str], None],
) -> None:  # fmt: skip
    while not manifest["read"]:
        version, last, records = reader.page(manifest["after"], PAGE_ROWS)
        if manifest["base"] is None:
            manifest["base"] = version
        if not records:
            manifest["read"] = True
            _save(work, manifest)
            return
        filed = anchors(records)
        entries = sorted(
            (order_key(record[0]), record[0], record, _filed(record, filed)) for record in records
        )
        name = f"run-{len(manifest['runs']):05d}"
        # Synced: the manifest (synced) will name it, and a resumed build trusts it.
        _write_run(os.path.join(work, name), ((r[2], r[3]) for r in entries), sync=True)
        manifest["runs"] = [*manifest["runs"], name]
        manifest["after"] = last
        _save(work, manifest)
        note(f"read {len(manifest['runs']) * PAGE_ROWS:,} lessons")


def _filed(record: Record, filed: dict[tuple[str, ...], str]) -> tuple[str, ...]:
    """The anchor of each of the record's keyword groups (aligned with keyword_groups)."""
    return tuple(filed[terms] for terms in keyword_groups(record[7]))


def _write_run(path: str, items: Iterable[Any], *, sync: bool = False) -> None:
    """Write `items` as a run: length-prefixed marshal batches, then an empty batch."""

    def chunks() -> Iterator[bytes]:
        batch: list[Any] = []
        for item in items:
            batch.append(item)
            if len(batch) == BATCH:
                yield _frame(batch)
                batch = []
        if batch:
            yield _frame(batch)
        yield _frame([])  # the end: a run without it was cut short

    write_atomically(path, chunks(), sync=sync)


def _frame(batch: list[Any]) -> bytes:
    data = marshal.dumps(batch)
    return len(data).to_bytes(8, "little") + data


def _read_run(path: str) -> Iterator[Any]:
    # Length-prefixed: `marshal.load` on a file reads it in tiny pieces (ten times slower).
    with open(path, "rb", buffering=1 << 20) as handle:
        while True:
            prefix = handle.read(8)
            data = handle.read(int.from_bytes(prefix, "little")) if len(prefix) == 8 else b""
            try:
                batch = marshal.loads(data)
            except (EOFError, ValueError, TypeError):
                raise OSError(f"{path}: run file cut short") from None
            if not batch:
                return
            yield from batch


# --- B: what changed while the pages were read ------------------------------------


def _catch_up(
    work: str, reader: ScopeReader, manifest: dict[str, Any]
) -> tuple[list[str], int, int]:
    """Override runs of every change since `base`; (their paths, version, latest)."""
    names: list[str] = []
    with reader.changes_since(int(manifest["base"])) as (version, latest, items):
        if version < int(manifest["base"]):
            # The store went back in time (restored, recreated): nothing read is valid.
            shutil.rmtree(work, ignore_errors=True)
            raise StoreWentBack(f"the store's version {version} is below {manifest['base']}")
        batch: list[tuple[str, Any]] = []
        for item in items:
            batch.append(item)
            if len(batch) == PAGE_ROWS:
                names.append(_override_run(work, len(names), batch))
                batch = []
        if batch:
            names.append(_override_run(work, len(names), batch))
    return [os.path.join(work, name) for name in names], version, latest


class StoreWentBack(Exception):
    """The store's version fell below the work's base: the build starts over."""


def _override_run(work: str, number: int, batch: list[tuple[str, Any]]) -> str:
    records = [record for _, record in batch if record is not None]
    filed = anchors(records)
    entries = sorted(
        (order_key(lesson_id), lesson_id, record,
         _filed(record, filed) if record is not None else ())
        for lesson_id, record in batch
    )  # fmt: skip
    name = f"override-{number:05d}"
    _write_run(os.path.join(work, name), ((r[1], r[2], r[3]) for r in entries))
    return name


# --- C: cards in order, postings spilled --------------------------------------------


def _merged(runs: list[str], overrides: list[str]) -> Iterator[tuple[Any, ...]]:
    """Every surviving (record, anchors) in lesson-ID order: an override's row (or its
    removal) replaces the page's copy."""

    def base(path: str) -> Iterator[tuple[Any, ...]]:
        for record, filed in _read_run(path):
            yield order_key(record[0]), 0, record, filed

    def changed(path: str) -> Iterator[tuple[Any, ...]]:
        for lesson_id, record, filed in _read_run(path):
            yield order_key(lesson_id), 1, record, filed

    streams = [base(path) for path in runs] + [changed(path) for path in overrides]
    pending: tuple[Any, ...] | None = None
    for item in heapq.merge(*streams, key=lambda entry: (entry[0], entry[1])):
        if pending is not None and pending[0] != item[0] and pending[2] is not None:
            yield pending[2], pending[3]
        pending = item
    if pending is not None and pending[2] is not None:
        yield pending[2], pending[3]


def _merge_cards(
    work: str, writer: GenerationWriter, runs: list[str], overrides: list[str],
    note: Callable[[str], None],
) -> tuple[list[str], dict[str, Any]]:  # fmt: skip
    spilled: list[str] = []
    buffer: list[tuple[Any, ...]] = []
    cards: list[Any] = []
    assoc: list[Any] = []
    ordinal = 0
    smallest = 0
    last_id = None
    for record, filed in _merged(runs, overrides):
        size = card_size(record)
        smallest = size if not ordinal else min(smallest, size)
        last_id = record[0]
        cards.append(record[:4])
        assoc.append(record[4:9])
        if len(cards) == CARDS_PER_SHARD:
            writer.add_value("cards", tuple(cards))
            writer.add_value("assoc", tuple(assoc))
            cards, assoc = [], []
        _postings_of(record, filed, ordinal, size, buffer)
        if len(buffer) >= POSTINGS_RUN:
            spilled.append(_spill(work, len(spilled), buffer))
            buffer = []
        ordinal += 1
        if not ordinal % 100_000:
            note(f"numbered {ordinal:,} cards")
    if cards:
        writer.add_value("cards", tuple(cards))
        writer.add_value("assoc", tuple(assoc))
    if buffer:
        spilled.append(_spill(work, len(spilled), buffer))
    summary = {"cards": ordinal, "live": ordinal, "min_card": smallest, "last_id": last_id}
    return spilled, summary


def _postings_of(
    record: Record, filed: tuple[str, ...], ordinal: int, size: int, out: list[Any]
) -> None:
    for key in dict.fromkeys(card_keys(record[4], record[5], record[6], record[8])):
        out.append((key_checksum(key), key, ordinal, size, None))
    for terms, anchor in zip(keyword_groups(record[7]), filed, strict=True):
        key = KEYWORD + anchor
        out.append((key_checksum(key), key, ordinal, size, terms))
    key = ID + record[0]
    out.append((key_checksum(key), key, ordinal, 0, None))


def _spill(work: str, number: int, buffer: list[Any]) -> str:
    # Plain tuple order: no key of one kind is another kind's, and a key lists an ordinal
    # twice only for two keyword groups (whose terms tuples then compare).
    buffer.sort()
    path = os.path.join(work, f"postings-{number:05d}")
    _write_run(path, buffer)
    return path


# --- D: key values and shards -------------------------------------------------------


def _index(
    work: str, writer: GenerationWriter, spilled: list[str], note: Callable[[str], None]
) -> tuple[int, int]:
    """Write the key shards of the spilled postings; (key count, shard bits)."""

    def add_page(blob: bytes) -> int:
        return writer.add("pages", blob)

    merged = heapq.merge(*(_read_run(path) for path in spilled))
    values = os.path.join(work, "keys")
    count = 0

    def stream() -> Iterator[Any]:
        nonlocal count
        for item in _key_values(merged, add_page):
            count += 1
            yield item

    _write_run(values, stream())
    bits = key_bits_for(count)
    note(f"indexed {count:,} keys")
    shard: dict[str, Any] = {}
    number = 0
    for checksum, key, value in _read_run(values):
        target = checksum >> (32 - bits) if bits else 0
        while number < target:
            writer.add_value("keys", shard)
            shard, number = {}, number + 1
        shard[key] = value
    while number < (1 << bits):
        writer.add_value("keys", shard)
        shard, number = {}, number + 1
    os.unlink(values)
    return count, bits


def _key_values(
    merged: Iterable[tuple[Any, ...]], add_page: Callable[[bytes], int]
) -> Iterator[tuple[int, str, Any]]:
    """(checksum, key, stored value) of every key, in (checksum, key) order."""
    current: str | None = None
    checksum = 0
    ordinals: list[int] = []
    sizes: list[int] = []
    groups: dict[tuple[str, ...], tuple[list[int], list[int]]] = {}
    for entry_checksum, key, ordinal, size, terms in merged:
        if key != current:
            if current is not None:
                yield checksum, current, _value(current, ordinals, sizes, groups, add_page)
            current, checksum = key, entry_checksum
            ordinals, sizes, groups = [], [], {}
        if terms is not None:
            found = groups.setdefault(tuple(terms), ([], []))
            target_ordinals, target_sizes = found
        else:
            target_ordinals, target_sizes = ordinals, sizes
        if not target_ordinals or target_ordinals[-1] != ordinal:
            target_ordinals.append(ordinal)
            target_sizes.append(size)
    if current is not None:
        yield checksum, current, _value(current, ordinals, sizes, groups, add_page)


def _value(
    key: str,
    ordinals: list[int],
    sizes: list[int],
    groups: dict[tuple[str, ...], tuple[list[int], list[int]]],
    add_page: Callable[[bytes], int],
) -> Any:
    if key.startswith(ID):
        return ordinals[0]
    if key.startswith(KEYWORD):
        return tuple(
            (terms, postings.encode(found[0], found[1], add_page))
            for terms, found in sorted(groups.items())
        )
    return postings.encode(ordinals, sizes, add_page)
