"""The immutable index of one recall generation, and how a process reads it in parts.

A generation is one file, written once (writer.py), then only read. Its blobs live in
four *sections*, each with its own offset table:

- `keys`: key shards, each a dict from index key to its value. A key lands in shard
  `crc32(key) >> (32 - key_bits)` (the top bits, so keys sorted by checksum come shard
  by shard); `key_bits` is chosen so a shard holds about `KEYS_PER_SHARD` keys;
- `cards`: card shards, `CARDS_PER_SHARD` consecutive ordinals each, a card being
  `(id, revision, rendered text, cited)` or None where a removed card was. `cited` is
  None or `(date, ranges)`: the revision's date and its fingerprinted cited ranges
  `(path, first line, last line, sha256)`, which delivery checks (stale.py);
- `assoc`: aligned with `cards`, each card's `(files, folders, identifiers, keywords,
  commands)`: what the next generation is built from, read only then;
- `pages`: the pages of long posting lists (postings.py).

Index keys and their values:

- `f\\0<file>`, `d\\0<folder>`, `i\\0<identifier>`, `c\\0<command family>` → a posting
  list (postings.py: ordinals ascending, with each card's size);
- `k\\0<term>` → `((group terms, posting list), ...)`: every keyword group filed under
  its rarest term, its cards listed per distinct group, so a call reads only the lists
  of groups whose terms all occur;
- `#\\0<lesson id>` → its ordinal (the ID directory the next generation is built with).

Ordinals number the cards in natural lesson-ID order (`L-9` before `L-12`), so (score,
ordinal) orders matches by ID.

File layout: `MAGIC`, the blobs, the offset tables (per blob its start and end, native
uint64), the meta (marshal), then a 24-byte trailer: the meta's offset and length and
`MAGIC` again. Opening reads the trailer and the meta (a few hundred bytes whatever the
number of lessons); a blob costs one read of its 16 offset bytes and one of itself. So a
first delivery reads the meta, one key shard per key the call looks up, one page per
long list it walks into and the card shards of what it delivers: O(log n) blocks, never
a table proportional to the store. Offsets and arrays are native: a generation is a
machine-local cache, and one written with another byte order reads as unreadable (then
rebuilt).

Decoded blobs are kept in a `BlobCache`: unbounded for a hook process (one call), a
shared budget in bytes for the recall server, so its memory stays flat however many
generations and runs it answers.
"""

from __future__ import annotations

import marshal
import os
import sys
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

FORMAT = 5
MAGIC = b"AMGEN\x00\x05\x00"
TRAILER = 24
KEYS_PER_SHARD = 64
CARDS_PER_SHARD = 32
SECTIONS = ("keys", "cards", "assoc", "pages")

Cited = tuple[str, tuple[tuple[str, int, int, str], ...]]
"""A card's revision date and its fingerprinted cited ranges (see the module docstring)."""

FILE, FOLDER, IDENTIFIER, KEYWORD, COMMAND, ID = "f\0", "d\0", "i\0", "k\0", "c\0", "#\0"


class SnapshotCorrupt(Exception):
    """A generation cannot be read (missing blob, bad bytes, unknown format).

    Deliberately outside `active_memory.errors`: that module imports `dataclasses`, which
    the hook path does not load. Commands turn it into a usage error.
    """

    def __init__(self, directory: str, reason: str) -> None:
        super().__init__(f"{directory}: snapshot index unreadable: {reason}")
        self.directory = directory
        self.reason = reason


def natural_key(lesson_id: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key for lesson IDs that counts digits as numbers: `L-9` < `L-12` < `L-100`."""
    head = lesson_id.rstrip("0123456789")
    if head.isascii() and not any(ch.isdigit() for ch in head):  # `L-12`: the usual shape
        tail = lesson_id[len(head) :]
        return ((0, head), (1, int(tail))) if head and tail else _natural(lesson_id)
    return _natural(lesson_id)


def _natural(lesson_id: str) -> tuple[tuple[int, int | str], ...]:
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


def order_key(lesson_id: str) -> tuple[tuple[tuple[int, int | str], ...], str]:
    """The total order of lesson IDs that ordinals follow: natural, then as text (so
    `L-01` and `L-1` still have an order)."""
    return natural_key(lesson_id), lesson_id


def key_checksum(key: str) -> int:
    """The checksum that places `key` in a shard (and orders keys in a build)."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass"))


def key_shard(key: str, bits: int) -> int:
    """The shard of `key` among `2 ** bits` shards: the checksum's top bits."""
    return key_checksum(key) >> (32 - bits) if bits else 0


def key_bits_for(keys: int) -> int:
    """The shard bits for `keys` keys (about `KEYS_PER_SHARD` keys a shard)."""
    bits = 0
    while (KEYS_PER_SHARD << bits) < keys:
        bits += 1
    return bits


def card_keys(
    files: Any, folders: Any, identifiers: Any, commands: Any = ()
) -> list[str]:  # fmt: skip
    """The file, folder, identifier and command keys of one card's associations."""
    return (
        [FILE + path for path in files]
        + [FOLDER + folder for folder in folders]
        + [IDENTIFIER + name for name in identifiers]
        + [COMMAND + family for family in commands]
    )


def keyword_groups(groups: Any) -> list[tuple[str, ...]]:
    """One card's keyword groups as sorted, de-duplicated term tuples (empty ones dropped)."""
    return [terms for terms in (tuple(sorted(set(group))) for group in groups) if terms]


class BlobCache:
    """Decoded blobs, least recently used dropped first once over `budget` bytes (of
    their encoded size; 0: unbounded). Shared by every index of a resident process."""

    __slots__ = ("_items", "_used", "budget")

    def __init__(self, budget: int = 0) -> None:
        self.budget = budget
        self._items: dict[Any, tuple[Any, int]] = {}
        self._used = 0

    def get(self, key: Any) -> Any:
        """The decoded blob under `key`, or None."""
        found = self._items.get(key)
        if found is None:
            return None
        if self.budget:
            # Most recently used last; another thread may have moved it already.
            moved = self._items.pop(key, None)
            if moved is not None:
                self._items[key] = moved
        return found[0]

    def put(self, key: Any, value: Any, size: int) -> None:
        """Keep `value` (encoded `size` bytes), dropping the oldest over the budget."""
        self._items[key] = (value, size)
        self._used += size
        while self.budget and self._used > self.budget and len(self._items) > 1:
            try:
                oldest = next(iter(self._items))
                self._used -= self._items.pop(oldest)[1]
            except (StopIteration, KeyError, RuntimeError):  # another thread trimmed it
                return

    @property
    def used(self) -> int:
        """Encoded bytes of what is kept."""
        return self._used


class SnapshotIndex:
    """Read access to one generation: values by key, cards by ordinal, blobs on demand.

    Opened from a file (`open`: every read is a `pread`, so nothing is mapped and the
    page cache, not this process, holds the file) or from bytes (`from_bytes`).
    """

    __slots__ = ("_cache", "_file", "_read", "_tables", "directory", "meta")

    def __init__(
        self,
        meta: dict[str, Any],
        read: Callable[[int, int], bytes],
        name: str,
        cache: BlobCache | None = None,
        file: Any = None,
    ) -> None:
        self.meta = meta
        self.directory = name
        self._read = read
        self._file = file  # kept open as long as the index is referenced
        self._cache = cache if cache is not None else BlobCache()
        self._tables: dict[str, tuple[int, int]] = meta["sections"]

    @classmethod
    def open(cls, path: str, *, cache: BlobCache | None = None) -> SnapshotIndex:
        """Open the generation file `path` (reads its trailer and meta only)."""
        try:
            handle = _Descriptor(os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)))
        except OSError as exc:
            raise SnapshotCorrupt(path, str(exc)) from None
        descriptor = handle.number

        def read(start: int, end: int) -> bytes:
            return os.pread(descriptor, end - start, start)

        try:
            meta = _meta(read, os.fstat(descriptor).st_size, path)
        except (OSError, ValueError, EOFError, TypeError) as exc:
            raise SnapshotCorrupt(path, str(exc)) from None
        return cls(meta, read, path, cache, handle)

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<memory>") -> SnapshotIndex:
        """A generation held in memory."""

        def read(start: int, end: int) -> bytes:
            return data[start:end]

        try:
            meta = _meta(read, len(data), name)
        except (ValueError, EOFError, TypeError) as exc:
            raise SnapshotCorrupt(name, str(exc)) from None
        return cls(meta, read, name)

    # --- blobs ------------------------------------------------------------------------

    def span(self, section: str, number: int) -> tuple[int, int]:
        """Where blob `number` of `section` lies in the file (start, end)."""
        table, count = self._tables[section]
        if not 0 <= number < count:
            raise SnapshotCorrupt(self.directory, f"no {section} blob {number}")
        raw = self._read(table + 16 * number, table + 16 * number + 16)
        if len(raw) != 16:
            raise SnapshotCorrupt(self.directory, "file cut short")
        start, end = memoryview(raw).cast("Q")
        return start, end

    def raw(self, section: str, number: int) -> bytes:
        """The encoded bytes of blob `number` of `section`."""
        start, end = self.span(section, number)
        data = self._read(start, end)
        if len(data) != end - start:
            raise SnapshotCorrupt(self.directory, "file cut short")
        return data

    def raw_range(self, start: int, end: int) -> bytes:
        """Bytes `start:end` of the file (a later generation copies blobs unchanged)."""
        data = self._read(start, end)
        if len(data) != end - start:
            raise SnapshotCorrupt(self.directory, "file cut short")
        return data

    def load(self, section: str, number: int) -> Any:
        """Blob `number` of `section`, decoded (kept in the blob cache)."""
        key = (self.directory, section, number)
        found = self._cache.get(key)
        if found is not None:
            return found
        data = self.raw(section, number)
        try:
            value = marshal.loads(data)
        except (ValueError, EOFError, TypeError) as exc:
            raise SnapshotCorrupt(self.directory, f"{section} blob {number}: {exc}") from None
        self._cache.put(key, value, len(data))
        return value

    def count(self, section: str) -> int:
        """How many blobs `section` holds."""
        return self._tables[section][1]

    # --- keys, pages and cards ----------------------------------------------------------

    def key_shard(self, number: int) -> dict[str, Any]:
        """Key shard `number`."""
        shard = self.load("keys", number)
        if not isinstance(shard, dict):
            raise SnapshotCorrupt(self.directory, f"key shard {number} is not a table")
        return shard

    def postings(self, key: str) -> Any:
        """What `key` (`index.FILE + path`, …) is filed under; None when nothing."""
        if not self._tables["keys"][1]:
            return None
        return self.key_shard(key_shard(key, self.meta["key_bits"])).get(key)

    def page(self, number: int) -> Any:
        """Page `number` of a long posting list, ready to search (`postings.prepare`)."""
        key = (self.directory, "page", number)
        found = self._cache.get(key)
        if found is None:
            from active_memory.recall.postings import prepare

            data = self.raw("pages", number)
            try:
                found = prepare(marshal.loads(data))
            except (ValueError, EOFError, TypeError, IndexError) as exc:
                raise SnapshotCorrupt(self.directory, f"page {number}: {exc}") from None
            self._cache.put(key, found, len(data))
        return found

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

    def card(self, ordinal: int) -> tuple[Any, ...]:
        """(id, revision, rendered text, cited) of the card numbered `ordinal`."""
        card = self.card_or_hole(ordinal)
        if card is None:
            raise SnapshotCorrupt(self.directory, f"no card {ordinal}")
        return card

    def card_or_hole(self, ordinal: int) -> tuple[Any, ...] | None:
        """The card numbered `ordinal`, or None where a removed card was."""
        number, offset = divmod(ordinal, CARDS_PER_SHARD)
        shard = self.load("cards", number)
        try:
            card: tuple[Any, ...] | None = shard[offset]
        except (IndexError, TypeError):
            raise SnapshotCorrupt(self.directory, f"no card {ordinal}") from None
        return card

    def cards(self) -> list[tuple[str, int, str]]:
        """Every card's (id, revision, rendered text), in lesson-ID order."""
        found: list[tuple[str, int, str]] = []
        for number in range(self.count("cards")):
            found += [(c[0], c[1], c[2]) for c in self.load("cards", number) if c is not None]
        return found


class _Descriptor:
    """An open file descriptor, closed when nothing refers to it any more (an index may
    be shared by threads of a server: it is never closed under a reader)."""

    __slots__ = ("number",)

    def __init__(self, number: int) -> None:
        self.number = number

    def __del__(self) -> None:
        try:  # noqa: SIM105 - at interpreter exit `os` may be gone
            os.close(self.number)
        except (OSError, AttributeError, TypeError):
            pass


class OlderFormat(SnapshotCorrupt):
    """A generation written by an earlier version (a run pinned to one pins again)."""


def _meta(read: Callable[[int, int], bytes], size: int, name: str) -> dict[str, Any]:
    """The meta of a generation of `size` bytes, checked."""
    magic = read(0, len(MAGIC))
    if magic[:6] == MAGIC[:6] and magic != MAGIC:
        raise OlderFormat(name, f"a generation of format {magic[6]}; this version reads {FORMAT}")
    if size < len(MAGIC) + TRAILER or magic != MAGIC:
        raise SnapshotCorrupt(name, f"not a generation of format {FORMAT}")
    trailer = read(size - TRAILER, size)
    if trailer[16:] != MAGIC:
        raise SnapshotCorrupt(name, "no trailer (a file cut short)")
    start = int.from_bytes(trailer[:8], "little")
    length = int.from_bytes(trailer[8:16], "little")
    if start + length > size - TRAILER:
        raise SnapshotCorrupt(name, "meta out of range")
    meta = marshal.loads(read(start, start + length))
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SnapshotCorrupt(name, f"unknown index format (this version reads {FORMAT})")
    if meta.get("byteorder") != sys.byteorder:
        raise SnapshotCorrupt(name, "written on a machine of another byte order")
    sections = meta.get("sections")
    if not isinstance(sections, dict) or set(sections) != set(SECTIONS):
        raise SnapshotCorrupt(name, "sections missing")
    for section, (table, count) in sections.items():
        if not (isinstance(table, int) and isinstance(count, int)) or count < 0:
            raise SnapshotCorrupt(name, f"section {section} is unreadable")
        if table + 16 * count > size - TRAILER:
            raise SnapshotCorrupt(name, f"section {section} lies outside the file")
    for field in ("cards", "key_bits"):
        value = meta.get(field)
        if not isinstance(value, int) or value < 0:
            raise SnapshotCorrupt(name, f"meta field {field!r} is {value!r}")
    return meta
