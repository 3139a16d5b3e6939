"""The prebuilt, immutable index of a frozen snapshot, and how a process reads it.

Layout of an index folder (written once, then only read):

- `meta.marshal`: format, card count, shard counts, the scope it was frozen for;
- `k<NNNN>.marshal`: one key shard, a dict from index key to postings. A key lands in
  shard `crc32(key) % key_shards`; `key_shards` is a power of two chosen so a shard
  holds about `KEYS_PER_SHARD` keys whatever the number of lessons;
- `c<NNNN>.marshal`: one card shard, a tuple of `(id, revision, rendered text)` for
  `CARDS_PER_SHARD` consecutive ordinals.

Index keys: `f\\0<file>`, `d\\0<folder>`, `i\\0<identifier>` → ordinals; `k\\0<term>` →
`(ordinal, group terms)`, each keyword group filed under its rarest term. Ordinals
number the cards in lesson-ID order (natural: `L-9` before `L-12`), so ordering
matches by (score, ordinal) orders them by ID.

A lookup opens only the shards its keys fall in (a hook process) or finds them in
memory (the recall server, `preload`): its cost depends on the tool call, not on how
many lessons there are. `marshal` is the fastest format the interpreter reads and is
only ever read back by the same code that wrote it (the format number guards that).
"""

from __future__ import annotations

import marshal
import os
import zlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

FORMAT = 1
KEYS_PER_SHARD = 64
CARDS_PER_SHARD = 32
META_FILE = "meta.marshal"

FILE, FOLDER, IDENTIFIER, KEYWORD = "f\0", "d\0", "i\0", "k\0"


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

    __slots__ = ("files", "folders", "id", "identifiers", "keywords", "revision", "text")

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
    ) -> None:
        self.id = id
        self.revision = revision
        self.text = text  # the rendered card block (frame.render_card)
        self.files = tuple(files)
        self.folders = tuple(folders)
        self.identifiers = tuple(identifiers)
        self.keywords = tuple(tuple(group) for group in keywords)


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


def _key_shard(key: str, shards: int) -> int:
    return zlib.crc32(key.encode("utf-8")) & (shards - 1)


class BuiltIndex:
    """An index in memory, before (or instead of) being written to a folder."""

    __slots__ = ("card_shards", "key_shards", "meta")

    def __init__(
        self,
        meta: dict[str, Any],
        key_shards: list[dict[str, tuple[Any, ...]]],
        card_shards: list[tuple[tuple[str, int, str], ...]],
    ) -> None:
        self.meta = meta
        self.key_shards = key_shards
        self.card_shards = card_shards


def build_index(cards: Iterable[IndexCard], scope: dict[str, Any] | None = None) -> BuiltIndex:
    """Build the index of `cards`; `scope` is kept in the meta (what it was frozen for)."""
    ordered = sorted(cards, key=lambda card: natural_key(card.id))
    postings: dict[str, dict[Any, None]] = {}

    def post(key: str, value: Any) -> None:
        postings.setdefault(key, {})[value] = None

    frequency: dict[str, int] = {}
    for card in ordered:
        for group in card.keywords:
            for term in set(group):
                frequency[term] = frequency.get(term, 0) + 1
    for ordinal, card in enumerate(ordered):
        for path in card.files:
            post(FILE + path, ordinal)
        for folder in card.folders:
            post(FOLDER + folder, ordinal)
        for identifier in card.identifiers:
            post(IDENTIFIER + identifier, ordinal)
        for group in card.keywords:
            terms = tuple(sorted(set(group)))
            if not terms:
                continue
            anchor = min(terms, key=lambda term: (frequency[term], term))
            post(KEYWORD + anchor, (ordinal, terms))
    shard_count = 1
    while shard_count * KEYS_PER_SHARD < len(postings):
        shard_count *= 2
    key_shards: list[dict[str, tuple[Any, ...]]] = [{} for _ in range(shard_count)]
    for key, values in postings.items():
        key_shards[_key_shard(key, shard_count)][key] = tuple(values)
    card_shards = [
        tuple((card.id, card.revision, card.text) for card in ordered[i : i + CARDS_PER_SHARD])
        for i in range(0, len(ordered), CARDS_PER_SHARD)
    ]
    meta = {
        "format": FORMAT,
        "cards": len(ordered),
        "key_shards": shard_count,
        "card_shards": len(card_shards),
        "cards_per_shard": CARDS_PER_SHARD,
        "scope": dict(scope or {}),
    }
    return BuiltIndex(meta, key_shards, card_shards)


def write_index(built: BuiltIndex, directory: str) -> None:
    """Write `built` into the new, empty folder `directory` (the caller renames it in)."""
    os.makedirs(directory, exist_ok=True)
    for number, shard in enumerate(built.key_shards):
        _write(os.path.join(directory, f"k{number:04x}.marshal"), shard)
    for number, cards in enumerate(built.card_shards):
        _write(os.path.join(directory, f"c{number:04x}.marshal"), cards)
    # The meta last: a folder with a meta has all its shards.
    _write(os.path.join(directory, META_FILE), built.meta)


def _write(path: str, value: Any) -> None:
    with open(path, "wb") as handle:
        handle.write(marshal.dumps(value))


class SnapshotIndex:
    """Read access to one index: postings by key, cards by ordinal; shards load lazily."""

    __slots__ = ("_cards", "_keys", "_load", "directory", "meta")

    def __init__(
        self, meta: dict[str, Any], load: Callable[[str], Any], directory: str = "<memory>"
    ) -> None:
        self.meta = meta
        self.directory = directory
        self._load = load
        self._keys: dict[int, dict[str, tuple[Any, ...]]] = {}
        self._cards: dict[int, tuple[tuple[str, int, str], ...]] = {}

    @classmethod
    def open(cls, directory: str) -> SnapshotIndex:
        """Open the index folder `directory` (reads only its meta)."""

        def load(name: str) -> Any:
            try:
                with open(os.path.join(directory, name), "rb") as handle:
                    return marshal.loads(handle.read())
            except (OSError, ValueError, EOFError, TypeError) as exc:
                raise SnapshotCorrupt(directory, f"{name}: {exc}") from None

        meta = load(META_FILE)
        _check_meta(meta, directory)
        return cls(meta, load, directory)

    @classmethod
    def from_built(cls, built: BuiltIndex) -> SnapshotIndex:
        """An index served from memory (no files), e.g. for a look-only recall."""

        def load(name: str) -> Any:
            number = int(name[1:5], 16)
            return (built.key_shards if name[0] == "k" else built.card_shards)[number]

        return cls(built.meta, load)

    @property
    def card_count(self) -> int:
        """How many cards the snapshot holds."""
        count: int = self.meta["cards"]
        return count

    def postings(self, key: str) -> tuple[Any, ...]:
        """What `key` (`index.FILE + path`, …) is filed under; () when nothing."""
        found: tuple[Any, ...] = self.postings_shard(_key_shard(key, self.meta["key_shards"])).get(
            key, ()
        )
        return found

    def card(self, ordinal: int) -> tuple[str, int, str]:
        """(id, revision, rendered text) of the card numbered `ordinal`."""
        number, offset = divmod(ordinal, self.meta["cards_per_shard"])
        shard = self._cards.get(number)
        if shard is None:
            shard = self._load(f"c{number:04x}.marshal")
            if not isinstance(shard, tuple):
                raise SnapshotCorrupt(self.directory, f"card shard {number} is not a list")
            self._cards[number] = shard
        try:
            return shard[offset]
        except IndexError:
            raise SnapshotCorrupt(self.directory, f"no card {ordinal}") from None

    def preload(self) -> None:
        """Load every shard now (a resident server), so no lookup touches the disk."""
        for number in range(self.meta["key_shards"]):
            self.postings_shard(number)
        for ordinal in range(0, self.card_count, self.meta["cards_per_shard"]):
            self.card(ordinal)

    def postings_shard(self, number: int) -> dict[str, tuple[Any, ...]]:
        """Key shard `number`, loaded if needed."""
        shard = self._keys.get(number)
        if shard is None:
            shard = self._load(f"k{number:04x}.marshal")
            if not isinstance(shard, dict):
                raise SnapshotCorrupt(self.directory, f"key shard {number} is not a table")
            self._keys[number] = shard
        return shard


def _check_meta(meta: Any, directory: str) -> None:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SnapshotCorrupt(directory, f"unknown index format (this version reads {FORMAT})")
    for field in ("cards", "key_shards", "card_shards", "cards_per_shard"):
        value = meta.get(field)
        if not isinstance(value, int) or value < (0 if field in ("cards", "card_shards") else 1):
            raise SnapshotCorrupt(directory, f"meta field {field!r} is {value!r}")
    shards = meta["key_shards"]
    if shards & (shards - 1):
        raise SnapshotCorrupt(directory, f"key_shards {shards} is not a power of two")
