"""Matching a tool call's signals against a snapshot index (SPEC §8 scores).

| match | score | looked up as |
|---|---|---|
| exact root-relative file | 1000 | each signal path |
| containing folder | 800 | each signal path and `folders` entry, with its ancestors |
| exact whole identifier | 700 | each identifier, case-sensitive |
| keyword group | 500 | each signal term; a group counts when all its terms occur |

`folders` are the other reading of a relative path (working directory or workspace
root), tried for folder matches only. A card scores its strongest match once; repeated
words add nothing. Matches are ordered by score (highest first), then lesson ID. Folder
matching works on whole path components: `src/api` is an ancestor of `src/api/x.py` and
of `src/api` itself, never of `src/apis/x.py`.
"""

from __future__ import annotations

from active_memory.recall.index import FILE, FOLDER, IDENTIFIER, KEYWORD
from active_memory.recall.types import MATCH_SCORES, CardHit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from active_memory.recall.index import SnapshotIndex
    from active_memory.recall.signals import Signals
    from active_memory.recall.types import MatchKind


def ancestors(path: str) -> list[str]:
    """`a/b/c.py` → `a`, `a/b`, `a/b/c.py` (the path itself may be a folder)."""
    parts = path.split("/")
    return ["/".join(parts[: end + 1]) for end in range(len(parts))]


def match(index: SnapshotIndex, signals: Signals) -> list[CardHit]:
    """Every card `signals` match, best first (score desc, then lesson ID)."""
    best: dict[int, tuple[int, MatchKind]] = {}

    def offer(ordinal: int, kind: MatchKind) -> None:
        score = MATCH_SCORES[kind]
        current = best.get(ordinal)
        if current is None or current[0] < score:
            best[ordinal] = (score, kind)

    for path in signals.paths:
        for ordinal in index.postings(FILE + path):
            offer(ordinal, "file")
        for folder in ancestors(path):
            for ordinal in index.postings(FOLDER + folder):
                offer(ordinal, "folder")
    for path in signals.folders:
        for folder in ancestors(path):
            for ordinal in index.postings(FOLDER + folder):
                offer(ordinal, "folder")
    for identifier in signals.identifiers:
        for ordinal in index.postings(IDENTIFIER + identifier):
            offer(ordinal, "identifier")
    terms = signals.terms
    for term in terms:
        for ordinal, group in index.postings(KEYWORD + term):
            if ordinal not in best and all(part in terms for part in group):
                offer(ordinal, "keywords")
    ordered = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))
    hits: list[CardHit] = []
    for ordinal, (score, kind) in ordered:
        lesson_id, revision, text = index.card(ordinal)
        hits.append(CardHit(lesson_id, revision, score, kind, text, ordinal))
    return hits
