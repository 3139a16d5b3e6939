"""The prebuilt, immutable index of one recall generation, and how a process reads it.

A generation is one file (`encode_generation`), written once, then only read:

- a header: format, card count, shard counts, the smallest card's size, the scope and
  store version it holds, and the offset of every blob;
- key shards: each a dict from index key to postings. A key lands in shard
  `crc32(key) % key_shards`; `key_shards` is a power of two chosen so a shard holds
  about `KEYS_PER_SHARD` keys whatever the number of lessons;
- card shards: each a tuple of `(id, revision, rendered text, cited)` for
  `CARDS_PER_SHARD` consecutive ordinals; `cited` is None, or `(date, ranges)`: the
  revision's date (`YYYY-MM-DD`) and the fingerprinted cited ranges
  `(path, first line, last line, sha256)` (lines 0, 0: the whole file), which delivery
  checks to frame a stale card (stale.py). Formats 2 (no `cited`) and 3 (no
  `commands`) are still read; they are never built upon (generations.py rebuilds a
  scope whose current one is older);
- the source: what the next generation is built from (generation.py), read only then:
  per card `(files, folders, identifiers, keywords, commands)`.

Index keys: `f\\0<file>`, `d\\0<folder>`, `i\\0<identifier>`, `c\\0<command family>` →
ordinals; `k\\0<term>` → `(ordinal, group terms)`, each keyword group filed under its
rarest term. Ordinals
number the cards in lesson-ID order (natural: `L-9` before `L-12`), so ordering
matches by (score, ordinal) orders them by ID.

A lookup reads only the blobs its keys fall in (`pread` in a hook process; a server maps
the file once and keeps what it decoded): its cost depends on the tool call, not on how
many lessons there are. `marshal` is the fastest format the interpreter reads and is
only ever read back by the same code that wrote it (the format number guards that).
"""

from __future__ import annotations

import marshal
import os
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any

FORMAT = 4
READABLE_FORMATS = (2, 3, 4)
"""Formats 2 (before `cited`) and 3 (before `commands`) are still read: a run pinned to
one keeps working."""
KEYS_PER_SHARD = 64
CARDS_PER_SHARD = 32
MAGIC = b"AMGEN\x00\x04\x00"
_MAGICS = (b"AMGEN\x00\x02\x00", b"AMGEN\x00\x03\x00", MAGIC)

Cited = tuple[str, tuple[tuple[str, int, int, str], ...]]
"""A card's revision date and its fingerprinted cited ranges (see the module docstring)."""

FILE, FOLDER, IDENTIFIER, KEYWORD, COMMAND = "f\0", "d\0", "i\0", "k\0", "c\0"


class SnapshotCorrupt(Exception):
    """A snapshot index cannot be read (missing shard, bad bytes, unknown format).

    Deliberately outside `active_memory.errors`: that module imports `dataclasses`, which
    the hook path does not load. Commands turn it into a usage error.
    """

    def __init__(self, directory: str, reason: str) -> None:
        super().__init__(f"{directory}: snapshot index unreadable: {reason}")
        self.directory = directory
        self.reason = reason


class IndexCard:
    """What the index keeps of one lesson: identity, card text, associations."""

    __slots__ = (
        "cited", "commands", "files", "folders", "id", "identifiers", "keywords", "revision",
        "text",
    )  # fmt: skip

    def __init__(
        self,
        id: str,
        revision: int,
        text: str,
        *,
        files: Sequence[str] = (),
        folders: Sequence[str] = (),
        identifiers: Sequence[str] = (),
        keywords: Sequence[Sequence[str]] = (),
        commands: Sequence[str] = (),
        cited: Cited | None = None,
    ) -> None:
        self.id = id
        self.cited = cited
        self.revision = revision
        self.text = text  # the rendered card block (frame.render_card)
        self.files = tuple(files)
        self.folders = tuple(folders)
        self.identifiers = tuple(identifiers)
        self.keywords = tuple(tuple(group) for group in keywords)
        self.commands = tuple(commands)


def natural_key(lesson_id: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key for lesson IDs that counts digits as numbers: `L-9` < `L-12` < `L-100`."""
    parts: list[tuple[int, int | str]] = []
    run = ""
    digits = False
    for ch in lesson_id + "\0":
        is_digit = ch.isdigit()
        if run and (is_digit != digits or ch == "\0"):
            parts.append((1, int(run)) if digits else (0, run))
            run = ""
        run += ch if ch != "\0" else ""
        digits = is_digit
    return tuple(parts)


def key_shard(key: str, shards: int) -> int:
    return zlib.crc32(key.encode("utf-8")) & (shards - 1)


class BuiltIndex:
    """A generation's parts in memory: its meta and its blobs, in file order.

    Blob numbers: key shards `[0, K)`, card shards `[K, K + C)`, association shards
    (the source of the next generation, aligned with the card shards) `[K + C, K + 2C)`,
    and the ID directory (`{id: ordinal}`) at `K + 2C`. A blob is `bytes` (new) or a
    `(start, end)` range of the previous generation's blob area (copied unchanged).
    """

    __slots__ = ("blobs", "meta", "previous")

    def __init__(
        self,
        meta: dict[str, Any],
        blobs: list[bytes | tuple[int, int]],
        previous: SnapshotIndex | None = None,
    ) -> None:
        self.meta = meta
        self.blobs = blobs
        self.previous = previous

    def header(self) -> bytes:
        """`MAGIC`, the header's length and the header (meta with every blob's offset)."""
        offsets = [0]
        for blob in self.blobs:
            size = len(blob) if isinstance(blob, bytes) else blob[1] - blob[0]
            offsets.append(offsets[-1] + size)
        header = marshal.dumps({**self.meta, "offsets": tuple(offsets)})
        return MAGIC + len(header).to_bytes(8, "little") + header

    def chunks(self) -> Iterator[bytes]:
        """The file's bytes, piece by piece (unchanged blobs read from the previous)."""
        yield self.header()
        pending: tuple[int, int] | None = None
        for blob in self.blobs:
            if isinstance(blob, bytes):
                if pending is not None:
                    yield from self._copy(pending)
                    pending = None
                yield blob
            elif pending is not None and pending[1] == blob[0]:
                pending = (pending[0], blob[1])  # one read for a run of unchanged blobs
            else:
                if pending is not None:
                    yield from self._copy(pending)
                pending = blob
        if pending is not None:
            yield from self._copy(pending)

    def _copy(self, span: tuple[int, int]) -> Iterator[bytes]:
        if self.previous is None:
            raise ValueError("a blob range without a previous generation")
        start, end = span
        step = 1 << 22
        for at in range(start, end, step):
            yield self.previous.raw_range(at, min(end, at + step))

    def to_bytes(self) -> bytes:
        """The whole generation file in memory."""
        return b"".join(self.chunks())


def key_shard_count(keys: int) -> int:
    """The power of two of key shards for `keys` keys (about `KEYS_PER_SHARD` each)."""
    count = 1
    while count * KEYS_PER_SHARD < keys:
        count *= 2
    return count


def build_index(
    cards: Iterable[IndexCard], scope: dict[str, Any] | None = None, *, ordered: bool = False
) -> BuiltIndex:
    """A complete generation of `cards` (`ordered`: already in lesson-ID order); `scope`
    is kept in the meta (what the generation holds)."""
    ordered_cards = list(cards) if ordered else sorted(cards, key=lambda c: natural_key(c.id))
    postings: dict[str, list[Any]] = {}
    frequency: dict[str, int] = {}
    for card in ordered_cards:
        for group in card.keywords:
            for term in set(group):
                frequency[term] = frequency.get(term, 0) + 1
    for ordinal, card in enumerate(ordered_cards):
        for key in card_keys(card.files, card.folders, card.identifiers, card.commands):
            found = postings.get(key)
            if found is None:
                postings[key] = [ordinal]
            elif found[-1] != ordinal:
                found.append(ordinal)
        for terms in keyword_groups(card.keywords):
            anchor = min(terms, key=lambda term: (frequency[term], term))
            entries = postings.setdefault(KEYWORD + anchor, [])
            if (ordinal, terms) not in entries[-4:]:
                entries.append((ordinal, terms))
    shard_count = key_shard_count(len(postings))
    key_shards: list[dict[str, tuple[Any, ...]]] = [{} for _ in range(shard_count)]
    for key, values in postings.items():
        key_shards[key_shard(key, shard_count)][key] = tuple(values)
    step = CARDS_PER_SHARD
    card_shards = [
        tuple(
            (card.id, card.revision, card.text, card.cited) for card in ordered_cards[i : i + step]
        )
        for i in range(0, len(ordered_cards), step)
    ]
    assoc_shards = [
        tuple(
            (card.files, card.folders, card.identifiers, card.keywords, card.commands)
            for card in ordered_cards[i : i + step]
        )
        for i in range(0, len(ordered_cards), step)
    ]
    sizes = [len(card.text.encode("utf-8")) for card in ordered_cards]
    meta = {
        "format": FORMAT,
        "cards": len(ordered_cards),
        "live": len(ordered_cards),
        "keys": len(postings),
        "key_shards": shard_count,
        "card_shards": len(card_shards),
        "cards_per_shard": CARDS_PER_SHARD,
        "min_card": min(sizes) if sizes else 0,
        "last_id": ordered_cards[-1].id if ordered_cards else None,
        "scope": dict(scope or {}),
    }
    directory = {card.id: ordinal for ordinal, card in enumerate(ordered_cards)}
    blobs: list[bytes | tuple[int, int]] = [marshal.dumps(shard) for shard in key_shards]
    blobs += [marshal.dumps(shard) for shard in card_shards]
    blobs += [marshal.dumps(shard) for shard in assoc_shards]
    blobs.append(marshal.dumps(directory))
    return BuiltIndex(meta, blobs)


def card_keys(
    files: Iterable[str],
    folders: Iterable[str],
    identifiers: Iterable[str],
    commands: Iterable[str] = (),
) -> list[str]:
    """The file, folder, identifier and command keys of one card's associations."""
    return (
        [FILE + path for path in files]
        + [FOLDER + folder for folder in folders]
        + [IDENTIFIER + name for name in identifiers]
        + [COMMAND + family for family in commands]
    )


def keyword_groups(groups: Iterable[Iterable[str]]) -> list[tuple[str, ...]]:
    """One card's keyword groups as sorted, de-duplicated term tuples (empty ones dropped)."""
    return [terms for terms in (tuple(sorted(set(group))) for group in groups) if terms]


class SnapshotIndex:
    """Read access to one generation: postings by key, cards by ordinal; blobs load lazily.

    Opened from a generation file (`open`: a hook process reads only the blobs a lookup
    needs with `pread`; `mapped=True`: a resident server maps the file once and shares
    it between every run pinned to it), or from bytes in memory (`from_bytes`).
    """

    __slots__ = ("_base", "_cards", "_keys", "_read", "directory", "meta")

    def __init__(
        self, meta: dict[str, Any], read: Callable[[int, int], bytes], base: int, name: str
    ) -> None:
        self.meta = meta
        self.directory = name
        self._read = read
        self._base = base
        self._keys: dict[int, dict[str, tuple[Any, ...]]] = {}
        self._cards: dict[int, tuple[Any, ...]] = {}

    @classmethod
    def open(cls, path: str, *, mapped: bool = False) -> SnapshotIndex:
        """Open the generation file `path` (reads only its header)."""
        descriptor = -1
        try:
            descriptor = os.open(path, os.O_RDONLY)
            prefix = _read_at(descriptor, len(MAGIC) + 8, 0)
            if len(prefix) != len(MAGIC) + 8 or prefix[: len(MAGIC)] not in _MAGICS:
                raise SnapshotCorrupt(path, f"not a generation (this version reads {FORMAT})")
            size = int.from_bytes(prefix[len(MAGIC) :], "little")
            meta = marshal.loads(_read_at(descriptor, size, len(prefix)))
            _check_meta(meta, path)
            read: Callable[[int, int], bytes]
            if mapped:
                import mmap

                view = mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ)
                os.close(descriptor)
                descriptor = -1

                def read(start: int, end: int) -> bytes:
                    return view[start:end]

            elif hasattr(os, "pread"):
                handle = descriptor

                def read(start: int, end: int) -> bytes:
                    return os.pread(handle, end - start, start)

            else:  # pragma: no cover - Windows has no pread; a hook is single-threaded
                stream = os.fdopen(descriptor, "rb")
                descriptor = -1

                def read(start: int, end: int) -> bytes:
                    stream.seek(start)
                    return stream.read(end - start)

        except (OSError, ValueError, EOFError, TypeError) as exc:
            if descriptor >= 0:
                os.close(descriptor)
            raise SnapshotCorrupt(path, str(exc)) from None
        except BaseException:
            if descriptor >= 0:
                os.close(descriptor)
            raise
        return cls(meta, read, len(prefix) + size, path)

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<memory>") -> SnapshotIndex:
        """A generation held in memory (e.g. a look-only recall before it is written)."""
        if data[: len(MAGIC)] not in _MAGICS:
            raise SnapshotCorrupt(name, f"not a generation (this version reads {FORMAT})")
        size = int.from_bytes(data[len(MAGIC) : len(MAGIC) + 8], "little")
        base = len(MAGIC) + 8 + size
        try:
            meta = marshal.loads(data[len(MAGIC) + 8 : base])
        except (ValueError, EOFError, TypeError) as exc:
            raise SnapshotCorrupt(name, str(exc)) from None
        _check_meta(meta, name)
        return cls(meta, lambda start, end: data[start:end], base, name)

    @classmethod
    def from_built(cls, built: BuiltIndex) -> SnapshotIndex:
        """An index served from memory (no files)."""
        return cls.from_bytes(built.to_bytes())

    def raw_range(self, start: int, end: int) -> bytes:
        """Bytes `start:end` of the blob area (a later generation copies them unchanged)."""
        data = self._read(self._base + start, self._base + end)
        if len(data) != end - start:
            raise SnapshotCorrupt(self.directory, "file cut short")
        return data

    def blob_range(self, number: int) -> tuple[int, int]:
        """Where blob `number` lies in the blob area."""
        offsets = self.meta["offsets"]
        return offsets[number], offsets[number + 1]

    def load(self, number: int) -> Any:
        """Blob `number`, decoded."""
        try:
            return marshal.loads(self.raw_range(*self.blob_range(number)))
        except (ValueError, EOFError, TypeError, IndexError) as exc:
            raise SnapshotCorrupt(self.directory, f"blob {number}: {exc}") from None

    @property
    def card_count(self) -> int:
        """How many ordinals the generation numbers (removed cards leave holes)."""
        count: int = self.meta["cards"]
        return count

    @property
    def min_card(self) -> int:
        """A lower bound of every card's UTF-8 size in this generation."""
        size: int = self.meta.get("min_card", 0)
        return size

    def postings(self, key: str) -> tuple[Any, ...]:
        """What `key` (`index.FILE + path`, …) is filed under; () when nothing."""
        found: tuple[Any, ...] = self.postings_shard(key_shard(key, self.meta["key_shards"])).get(
            key, ()
        )
        return found

    def card(self, ordinal: int) -> tuple[Any, ...]:
        """(id, revision, rendered text, cited) of the card numbered `ordinal` (no `cited`
        in a format 2 generation)."""
        card = self.card_or_hole(ordinal)
        if card is None:
            raise SnapshotCorrupt(self.directory, f"no card {ordinal}")
        return card

    def card_or_hole(self, ordinal: int) -> tuple[Any, ...] | None:
        """The card numbered `ordinal`, or None where a removed card was."""
        number, offset = divmod(ordinal, self.meta["cards_per_shard"])
        shard = self._cards.get(number)
        if shard is None:
            shard = self.load(self.meta["key_shards"] + number)
            if not isinstance(shard, tuple):
                raise SnapshotCorrupt(self.directory, f"card shard {number} is not a list")
            self._cards[number] = shard
        try:
            card: tuple[Any, ...] | None = shard[offset]
        except IndexError:
            raise SnapshotCorrupt(self.directory, f"no card {ordinal}") from None
        return card

    def cards(self) -> list[tuple[str, int, str]]:
        """Every card's (id, revision, rendered text), in lesson-ID order."""
        found = (self.card_or_hole(ordinal) for ordinal in range(self.card_count))
        return [(card[0], card[1], card[2]) for card in found if card is not None]

    def preload(self) -> None:
        """Load every key and card shard now, so no lookup touches the file."""
        for number in range(self.meta["key_shards"]):
            self.postings_shard(number)
        for ordinal in range(0, self.card_count, self.meta["cards_per_shard"]):
            self.card_or_hole(ordinal)

    def postings_shard(self, number: int) -> dict[str, tuple[Any, ...]]:
        """Key shard `number`, loaded if needed."""
        shard = self._keys.get(number)
        if shard is None:
            shard = self.load(number)
            if not isinstance(shard, dict):
                raise SnapshotCorrupt(self.directory, f"key shard {number} is not a table")
            self._keys[number] = shard
        return shard


def _read_at(descriptor: int, size: int, offset: int) -> bytes:
    if hasattr(os, "pread"):
        return os.pread(descriptor, size, offset)
    os.lseek(descriptor, offset, os.SEEK_SET)  # pragma: no cover - Windows
    return os.read(descriptor, size)  # pragma: no cover


def _check_meta(meta: Any, directory: str) -> None:
    if not isinstance(meta, dict) or meta.get("format") not in READABLE_FORMATS:
        raise SnapshotCorrupt(directory, f"unknown index format (this version reads {FORMAT})")
    offsets = meta.get("offsets")
    if not isinstance(offsets, tuple) or len(offsets) != (
        meta.get("key_shards", 0) + 2 * meta.get("card_shards", 0) + 2
    ):
        raise SnapshotCorrupt(directory, "offsets do not match the shard counts")
    for field in ("cards", "key_shards", "card_shards", "cards_per_shard"):
        value = meta.get(field)
        if not isinstance(value, int) or value < (0 if field in ("cards", "card_shards") else 1):
            raise SnapshotCorrupt(directory, f"meta field {field!r} is {value!r}")
    shards = meta["key_shards"]
    if shards & (shards - 1):
        raise SnapshotCorrupt(directory, f"key_shards {shards} is not a power of two")
