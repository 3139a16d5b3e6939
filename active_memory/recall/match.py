"""Matching a tool call's signals against a snapshot index (SPEC §8 scores).

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

`iter_matches` yields them lazily in exactly that order: tier by tier (file, folder,
identifier, command, keywords), each tier a merge of sorted posting lists (ordinals are lesson-ID
order), a card yielded only at its first (strongest) tier. A card's text is loaded only
when it is yielded, so a caller that stops once the budget is spent (ledger.py) never
loads or builds what it cannot deliver: a folder with thousands of lessons costs the few
cards that fit. `match` is the complete list, for reports that show every skipped card.

Folder matching works on whole path components: `src/api` is an ancestor of
`src/api/x.py` and of `src/api` itself, never of `src/apis/x.py`.
"""

from __future__ import annotations

from heapq import merge

from active_memory.recall.index import COMMAND, FILE, FOLDER, IDENTIFIER, KEYWORD
from active_memory.recall.types import MATCH_SCORES, CardHit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

    from active_memory.recall.index import SnapshotIndex
    from active_memory.recall.signals import Signals
    from active_memory.recall.types import MatchKind


def ancestors(path: str) -> list[str]:
    """`a/b/c.py` → `a`, `a/b`, `a/b/c.py` (the path itself may be a folder)."""
    parts = path.split("/")
    return ["/".join(parts[: end + 1]) for end in range(len(parts))]


def iter_matches(index: SnapshotIndex, signals: Signals) -> Iterator[CardHit]:
    """Every card `signals` match, lazily, best first (score desc, then lesson ID)."""
    seen: set[int] = set()
    paths = list(signals.paths)
    readings = [*paths, *signals.folders]
    folders = list(dict.fromkeys(folder for path in readings for folder in ancestors(path)))
    tiers: list[tuple[MatchKind, list[tuple[int, ...]]]] = [
        ("file", [index.postings(FILE + path) for path in dict.fromkeys(paths)]),
        ("folder", [index.postings(FOLDER + folder) for folder in folders]),
        ("identifier", [index.postings(IDENTIFIER + name) for name in signals.identifiers]),
        ("command", [index.postings(COMMAND + family) for family in signals.commands]),
    ]
    for kind, lists in tiers:
        yield from _tier(index, kind, lists, seen)
    terms = signals.terms
    groups = [
        _satisfied(postings, terms)
        for postings in (index.postings(KEYWORD + term) for term in terms)
        if postings
    ]
    yield from _tier(index, "keywords", groups, seen)


def _satisfied(postings: tuple[Any, ...], terms: set[str]) -> Iterator[int]:
    """The ordinals of the keyword groups in `postings` whose terms all occur, lazily."""
    for ordinal, group in postings:
        if all(part in terms for part in group):
            yield ordinal


def _tier(
    index: SnapshotIndex, kind: MatchKind, lists: Iterable[Iterable[int]], seen: set[int]
) -> Iterator[CardHit]:
    score = MATCH_SCORES[kind]
    present = [postings for postings in lists if postings]
    ordinals: Iterable[int] = present[0] if len(present) == 1 else merge(*present)
    previous = -1
    for ordinal in ordinals:
        if ordinal == previous or ordinal in seen:
            continue
        previous = ordinal
        seen.add(ordinal)
        card = index.card(ordinal)
        cited = card[3] if len(card) > 3 else None  # format 2: nothing cited
        yield CardHit(card[0], card[1], score, kind, card[2], ordinal, cited)


def match(index: SnapshotIndex, signals: Signals) -> list[CardHit]:
    """Every card `signals` match, best first (score desc, then lesson ID)."""
    return list(iter_matches(index, signals))
