"""Matching a tool call's signals against a generation (SPEC §8 scores), bounded by the
budget it can still deliver.

| match | score | looked up as |
|---|---|---|
| exact root-relative file | 1000 | each signal path |
| containing folder | 800 | each signal path and `folders` entry, with its ancestors |
| exact whole identifier | 700 | each identifier, case-sensitive |
| command family | 600 | each family of the shell call's chain (command_family.py) |
| keyword group | 500 | each signal term; a group counts when all its terms occur |

`folders` are the other reading of a relative path (working directory or workspace
root), tried for folder matches only. A card scores its strongest match once; repeated
words add nothing. Matches are ordered by score (highest first), then lesson ID.

`iter_matches` returns a `Walk`: the matches, lazily, in exactly that order, tier by
tier (file, folder, identifier, command, keywords), each tier a merge of sorted posting
lists, a card yielded only at its first (strongest) tier. Its caller (`frame.select`)
tells it before every step how large a card may still be (`bound`), and the walk then
yields only cards that fit: each posting list skips whole blocks and pages of cards
larger than that (postings.py), so a call costs the cards it delivers, the cards
already delivered to its session that it meets again, and a constant per list it
reads, never the size of a tier. Cards that do not fit are never loaded nor looked at
one by one; `visits` counts the entries the lists returned. `match` (no bound) is the
complete list, for the reports that show every skipped card.

Folder matching works on whole path components: `src/api` is an ancestor of
`src/api/x.py` and of `src/api` itself, never of `src/apis/x.py`.
"""

from __future__ import annotations

from heapq import heapify, heappop, heapreplace

from active_memory.recall.index import COMMAND, FILE, FOLDER, IDENTIFIER, KEYWORD
from active_memory.recall.postings import SIZE_CAP, Cursor
from active_memory.recall.types import MATCH_SCORES, CardHit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from active_memory.recall.index import SnapshotIndex
    from active_memory.recall.signals import Signals
    from active_memory.recall.types import MatchKind


def ancestors(path: str) -> list[str]:
    """`a/b/c.py` → `a`, `a/b`, `a/b/c.py` (the path itself may be a folder)."""
    parts = path.split("/")
    return ["/".join(parts[: end + 1]) for end in range(len(parts))]


def tier_keys(signals: Signals) -> list[tuple[MatchKind, list[str]]]:
    """The keys each tier but the keywords looks up, in delivery order."""
    paths = list(dict.fromkeys(signals.paths))
    readings = [*paths, *signals.folders]
    folders = list(dict.fromkeys(folder for path in readings for folder in ancestors(path)))
    return [
        ("file", [FILE + path for path in paths]),
        ("folder", [FOLDER + folder for folder in folders]),
        ("identifier", [IDENTIFIER + name for name in signals.identifiers]),
        ("command", [COMMAND + family for family in signals.commands]),
    ]


class Walk:
    """The cards `signals` match in `index`, best first, only those that fit `bound`."""

    __slots__ = (
        "_cursors",
        "_heap",
        "_index",
        "_kind",
        "_previous",
        "_seen",
        "_signals",
        "_tiers",
        "lists",
        "room",
    )  # fmt: skip

    def __init__(self, index: SnapshotIndex, signals: Signals) -> None:
        self._index = index
        self._signals = signals
        self._tiers: list[tuple[MatchKind, list[str]] | None] = [
            *tier_keys(signals), None  # None: the keywords tier
        ]  # fmt: skip
        self._tiers.reverse()  # popped from the end
        self._cursors: list[Cursor] = []
        self._heap: list[tuple[int, int, int]] = []
        self._seen: set[int] = set()
        self._previous = -1
        self._kind: MatchKind = "file"
        self.room = SIZE_CAP
        self.lists = 0

    def bound(self, room: int) -> None:
        """From now on yield only cards of at most `room` bytes (room only shrinks)."""
        self.room = room

    @property
    def visits(self) -> int:
        """Posting entries returned to this walk so far (the work it did per card)."""
        return sum(cursor.visits for cursor in self._cursors)

    def __iter__(self) -> Walk:
        return self

    def __next__(self) -> CardHit:
        heap, cursors, room = self._heap, self._cursors, self.room
        while True:
            if not heap:
                if not self._tiers or room < 0:
                    raise StopIteration
                self._open_tier(self._tiers.pop())
                heap = self._heap
                continue
            ordinal, size, number = heap[0]
            cursor = cursors[number]
            following = cursor.next_fit(room)
            if following >= 0:
                heapreplace(heap, (following, cursor.size, number))
            else:
                heappop(heap)
            if size > room or ordinal == self._previous or ordinal in self._seen:
                continue  # found under a larger room, or met in another list or tier
            self._previous = ordinal
            self._seen.add(ordinal)
            card = self._index.card(ordinal)
            cited = card[3] if len(card) > 3 else None
            score = MATCH_SCORES[self._kind]
            return CardHit(card[0], card[1], score, self._kind, card[2], ordinal, cited)

    def _open_tier(self, tier: tuple[MatchKind, list[str]] | None) -> None:
        if tier is None:
            kind: MatchKind = "keywords"
            values = self._keyword_lists()
        else:
            kind, keys = tier
            values = [found for key in keys if (found := self._index.postings(key))]
        self._kind = kind
        self._previous = -1
        base = len(self._cursors)
        heap = []
        for offset, value in enumerate(values):
            cursor = Cursor(value, self._index.page)
            self._cursors.append(cursor)
            ordinal = cursor.next_fit(self.room)
            if ordinal >= 0:
                heap.append((ordinal, cursor.size, base + offset))
        self.lists += len(values)
        heapify(heap)
        self._heap = heap

    def _keyword_lists(self) -> list[Any]:
        """The lists of every keyword group whose terms all occur in the call."""
        terms = self._signals.terms
        lists: list[Any] = []
        for term in terms:
            for group, value in self._index.postings(KEYWORD + term) or ():
                if all(part in terms for part in group):
                    lists.append(value)
        return lists


def iter_matches(index: SnapshotIndex, signals: Signals) -> Walk:
    """Every card `signals` match, lazily, best first (score desc, then lesson ID)."""
    return Walk(index, signals)


def match(index: SnapshotIndex, signals: Signals) -> list[CardHit]:
    """Every card `signals` match, best first (score desc, then lesson ID)."""
    return list(Walk(index, signals))
