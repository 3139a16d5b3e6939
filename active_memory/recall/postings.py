"""Posting lists: the ordinals filed under one index key, each with its card's size.

A list holds ordinals in ascending order (lesson-ID order, so delivery order within a
tier) and, beside each, the UTF-8 size of that card (capped at `SIZE_CAP`: no budget
is larger). The bounded walk asks a list for *the next entry whose card fits what is
left of the budget* (`Cursor.next_fit`), so a card that cannot fit is never looked at
one by one, whatever its list's length.

Encoding (values inside a generation's key shards, read back by `marshal`):

- a short list (at most `INLINE_MAX` entries) is `(ordinals, sizes)`: two byte strings,
  native `uint32` ordinals and `uint16` sizes. `marshal` reads a byte string back as one
  copy, never one object per entry;
- a longer list is paged: pages of at most `PAGE` entries, each a blob of the
  generation's page section holding `(ordinals, sizes)` as above, and inline a
  directory `(count, firsts, mins, refs)`: per page its first ordinal, its smallest
  card and its blob number (the same native arrays). A popular folder's list of
  300,000 entries is 293 pages; a walk reads the directory and then only the pages
  holding a card that fits.

Searching: a page (or a short list) keeps the minimum size of every block of `BLOCK`
entries, and the directory's page minima are grouped the same way, so `next_fit`
skips any block, page or group of pages whose smallest card is over the room left:
O(`BLOCK` * levels) comparisons and at most one page read per entry it returns.
Cursors only move forward; the room passed in may only shrink (a budget is spent,
never refilled, within one walk).
"""

from __future__ import annotations

import marshal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

INLINE_MAX = 128
PAGE = 1024
BLOCK = 32
SIZE_CAP = 0xFFFF
"""Sizes are stored as uint16; a card this large never fits a budget (16 KiB at most)."""


def _blocks(sizes: Any, count: int) -> list[int]:
    """The minimum of each run of `BLOCK` sizes."""
    return [min(sizes[start : start + BLOCK]) for start in range(0, count, BLOCK)]


def _scan(sizes: Any, blocks: list[int], position: int, count: int, room: int) -> int:
    """The first index at or after `position` whose size is at most `room`, else -1."""
    while position < count:
        if not position % BLOCK and blocks[position // BLOCK] > room:
            position += BLOCK  # a whole block of cards too large for the room
            continue
        if sizes[position] <= room:
            return position
        position += 1
    return -1


class Cursor:
    """A forward walk over one posting list that returns only entries that fit.

    `next_fit(room)` returns the ordinal of the next entry whose card is at most `room`
    bytes and moves past it (its size is then `size`), or -1 when no later entry fits.
    `visits` counts the entries returned. `load(ref)` returns a page as `prepare` makes
    it (the index keeps it so prepared).
    """

    __slots__ = (
        "_blocks", "_count", "_groups", "_load", "_mins", "_ordinals", "_page", "_pages",
        "_position", "_refs", "_sizes", "size", "visits",
    )  # fmt: skip

    def __init__(self, value: Sequence[Any], load: Callable[[int], Any]) -> None:
        self.size = 0
        self.visits = 0
        self._load = load
        self._position = 0
        if len(value) == 2:  # inline
            self._pages = 0
            self._page = 0
            self._open_arrays(value[0], value[1])
            self._mins = self._refs = None
            self._groups: list[int] = []
        else:
            self._mins = memoryview(value[2]).cast("H")
            self._refs = memoryview(value[3]).cast("I")
            self._pages = len(self._mins)
            self._groups = _blocks(self._mins, self._pages)
            self._page = -1
            self._count = 0

    def _open_arrays(self, ordinals: bytes, sizes: bytes) -> None:
        self._ordinals = memoryview(ordinals).cast("I")
        self._sizes = memoryview(sizes).cast("H")
        self._count = len(self._sizes)
        self._blocks = _blocks(self._sizes, self._count) if self._count > BLOCK else []
        self._position = 0

    def next_fit(self, room: int) -> int:
        """The next ordinal whose card is at most `room` bytes (then `size`), else -1."""
        while True:
            if self._count:
                found = (
                    _scan(self._sizes, self._blocks, self._position, self._count, room)
                    if self._blocks
                    else self._short_scan(room)
                )
                if found >= 0:
                    self._position = found + 1
                    self.size = self._sizes[found]
                    self.visits += 1
                    ordinal: int = self._ordinals[found]
                    return ordinal
                self._position = self._count
            if not self._pages:
                return -1
            page = _scan(self._mins, self._groups, self._page + 1, self._pages, room)
            if page < 0:
                self._page = self._pages
                self._count = 0
                return -1
            self._page = page
            self._ordinals, self._sizes, self._blocks = self._load(self._refs[page])  # type: ignore[index]
            self._count = len(self._sizes)
            self._position = 0

    def _short_scan(self, room: int) -> int:
        sizes = self._sizes
        for position in range(self._position, self._count):
            if sizes[position] <= room:
                return position
        return -1


def prepare(page: Any) -> tuple[Any, Any, list[int]]:
    """A stored page ready to search: its arrays as memoryviews and its block minima."""
    ordinals = memoryview(page[0]).cast("I")
    sizes = memoryview(page[1]).cast("H")
    return ordinals, sizes, _blocks(sizes, len(sizes))


def encode(ordinals: Sequence[int], sizes: Sequence[int], add_page: Callable[[bytes], int]) -> Any:
    """The stored value of a list (ascending `ordinals`, their card `sizes`).

    A list longer than `INLINE_MAX` is paged: `add_page(blob)` stores a page and
    returns its blob number.
    """
    from array import array

    ordinal_array = array("I", ordinals)
    size_array = array("H", (min(size, SIZE_CAP) for size in sizes))
    count = len(ordinal_array)
    if count <= INLINE_MAX:
        return (ordinal_array.tobytes(), size_array.tobytes())
    firsts, mins, refs = array("I"), array("H"), array("I")
    for start in range(0, count, PAGE):
        page_ordinals = ordinal_array[start : start + PAGE]
        page_sizes = size_array[start : start + PAGE]
        refs.append(add_page(marshal.dumps((page_ordinals.tobytes(), page_sizes.tobytes()))))
        firsts.append(page_ordinals[0])
        mins.append(min(page_sizes))
    return (count, firsts.tobytes(), mins.tobytes(), refs.tobytes())


def entries(value: Sequence[Any], load: Callable[[int], Any]) -> tuple[list[int], list[int]]:
    """Every (ordinal, size) of a stored list, as two lists (a whole read: builds only)."""
    if len(value) == 2:
        return list(memoryview(value[0]).cast("I")), list(memoryview(value[1]).cast("H"))
    ordinals: list[int] = []
    sizes: list[int] = []
    for ref in memoryview(value[3]).cast("I"):
        page_ordinals, page_sizes, _ = load(ref)
        ordinals += page_ordinals
        sizes += page_sizes
    return ordinals, sizes


def page_refs(value: Sequence[Any]) -> list[int]:
    """The page blobs a stored list refers to (none when it is inline)."""
    return [] if len(value) == 2 else list(memoryview(value[3]).cast("I"))


def count(value: Sequence[Any]) -> int:
    """How many entries a stored list holds."""
    return len(value[1]) // 2 if len(value) == 2 else int(value[0])


def patch(
    value: Sequence[Any] | None,
    removed: set[int],
    upserted: dict[int, int],
    load: Callable[[int], Any],
    add_page: Callable[[bytes], int],
) -> tuple[Any, list[int]]:
    """A stored list with `removed` ordinals dropped and `upserted` ones (ordinal → size)
    set: (the new value, None when empty; the page blobs no longer referred to).

    A paged list rewrites only the pages an edit falls in (an ordinal belongs to the
    last page whose first ordinal is not above it); every other page keeps its blob.
    """
    if value is None or len(value) == 2:
        ordinals, sizes = entries(value, load) if value is not None else ([], [])
        merged = _apply(ordinals, sizes, removed, upserted)
        if not merged:
            return None, []
        return encode([o for o, _ in merged], [s for _, s in merged], add_page), []
    from array import array
    from bisect import bisect_right

    firsts = list(memoryview(value[1]).cast("I"))
    mins = list(memoryview(value[2]).cast("H"))
    refs = list(memoryview(value[3]).cast("I"))
    edits: dict[int, tuple[set[int], dict[int, int]]] = {}
    for ordinal in removed | set(upserted):
        page = max(0, bisect_right(firsts, ordinal) - 1)
        page_removed, page_upserted = edits.setdefault(page, (set(), {}))
        if ordinal in upserted:
            page_upserted[ordinal] = upserted[ordinal]
        else:
            page_removed.add(ordinal)
    total = int(value[0])
    new_firsts, new_mins, new_refs = array("I"), array("H"), array("I")
    dropped: list[int] = []
    for page, ref in enumerate(refs):
        if page not in edits:
            new_firsts.append(firsts[page])
            new_mins.append(mins[page])
            new_refs.append(ref)
            continue
        page_ordinals, page_sizes, _ = load(ref)
        merged = _apply(list(page_ordinals), list(page_sizes), *edits[page])
        total += len(merged) - len(page_ordinals)
        dropped.append(ref)
        for start in range(0, len(merged), PAGE):
            part = merged[start : start + PAGE]
            chunk_ordinals = array("I", (o for o, _ in part))
            chunk_sizes = array("H", (min(s, SIZE_CAP) for _, s in part))
            new_refs.append(add_page(marshal.dumps((chunk_ordinals.tobytes(),
                                                    chunk_sizes.tobytes()))))  # fmt: skip
            new_firsts.append(chunk_ordinals[0])
            new_mins.append(min(chunk_sizes))
    if not total:
        return None, dropped
    stored = (total, new_firsts.tobytes(), new_mins.tobytes(), new_refs.tobytes())
    if total <= INLINE_MAX // 2:  # small again: back inline
        ordinals, sizes = entries(stored, load)
        return (encode(ordinals, sizes, add_page), dropped + list(new_refs))
    return stored, dropped


def _apply(
    ordinals: list[int], sizes: list[int], removed: set[int], upserted: dict[int, int]
) -> list[tuple[int, int]]:
    found = {o: s for o, s in zip(ordinals, sizes, strict=True) if o not in removed}
    found.update(upserted)
    return sorted(found.items())
