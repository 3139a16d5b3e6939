"""`search_lessons`: which lessons a query matches, scored by recall's table (docs/mcp.md).

A query is words (paths, identifiers, command words, plain words). A lesson scores the
strongest association any word matches, with the scores recall gives a tool call
(`recall.types.MATCH_SCORES`, SPEC §8: file 1000, folder 800, identifier 700, command
600, keywords 500), once; then 3 per query word in its title and 1 per word in its
recommendation, which only order lessons of the same match (a lesson found by its text
alone scores just those). What counts as a match:

- file: a word that is the file's root-relative path, its name, or its name without
  the extension;
- folder: a word that is the folder, a path inside it (whole components: `src/api` is
  not `src/apis`), or the folder's last component;
- identifier: the whole identifier (case-sensitive, as in recall);
- command: every word of the family in the query (`why does mix test fail`);
- keywords: every term of a group in the query (recall's rule).

Excluded paths (`exclude` settings) never match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, get_args

from active_memory.lessons import Lesson

Scope = Literal["repository", "graph", "repository_and_graph", "all"]
SCOPES: tuple[str, ...] = get_args(Scope)
MAX_RESULTS = 10
TEXT_SCORES = {"title": 3, "recommendation": 1}
_WORD = re.compile(r"[A-Za-z0-9_./-]+")


def score_lesson(lesson: Lesson, words: Sequence[str], exclude: tuple[str, ...]) -> tuple[int, str]:
    """How well `words` match `lesson` (see the module), and what matched best."""
    from active_memory.exclusion import is_excluded

    # Imported here, not at the top: the `recall` package is large, and the server must
    # answer a client's `initialize` fast (Codex 0.171 starts a turn without a server's
    # tools when they are late).
    from active_memory.recall.types import MATCH_SCORES

    card = lesson.associations
    lower = [word.lower() for word in words]
    given = set(lower)
    hits: list[tuple[int, str]] = []
    for path in card.files:
        if is_excluded(path, exclude):
            continue
        name = path.rsplit("/", 1)[-1].lower()
        if given & {path.lower(), name, name.rsplit(".", 1)[0]}:
            hits.append((MATCH_SCORES["file"], f"file:{path}"))
    for folder in card.folders:
        if is_excluded(folder, exclude):
            continue
        base = folder.lower().rstrip("/")
        if any(w == base or w.startswith(base + "/") or w == base.rsplit("/", 1)[-1]
               for w in lower):  # fmt: skip
            hits.append((MATCH_SCORES["folder"], f"folder:{folder}"))
    for identifier in card.identifiers:
        if identifier in words:
            hits.append((MATCH_SCORES["identifier"], f"identifier:{identifier}"))
    for family in card.commands:
        if all(part.lower() in given for part in family.split(" ")):
            hits.append((MATCH_SCORES["command"], f"command:{family}"))
    for group in card.keywords:
        if all(term.lower() in given for term in group):
            hits.append((MATCH_SCORES["keywords"], f"keyword:{' '.join(group)}"))
    strongest = max(hits, key=lambda hit: hit[0]) if hits else (0, "")
    title, body = _words(lesson.title), _words(lesson.recommendation)
    text = sum(TEXT_SCORES["title"] for w in given if w in title)
    text += sum(TEXT_SCORES["recommendation"] for w in given if w in body)
    if not strongest[0] and text:
        strongest = (0, "title" if given & title else "recommendation")
    return strongest[0] + text, strongest[1]


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text)}


def search(
    lessons: Sequence[Lesson], query: str, exclude: tuple[str, ...], limit: int = MAX_RESULTS
) -> list[dict[str, Any]]:
    """The short index of `lessons` matching `query`, best first (score, then ID)."""
    words = list(dict.fromkeys(_WORD.findall(query)))
    scored = []
    for lesson in lessons:
        score, match = score_lesson(lesson, words, exclude)
        if score:
            scored.append((score, lesson.id, lesson.title, match))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [
        {"id": lesson_id, "title": title, "score": score, "match": match}
        for score, lesson_id, title, match in scored[:limit]
    ]


def in_scope(lesson: Lesson, namespace: str | None, scope: Scope) -> bool:
    """Whether `lesson` belongs to this repository and the asked scope (`all` is
    `repository_and_graph`, kept for clients that send it)."""
    if namespace is None:
        return False
    kind = lesson.scope.kind
    if scope in ("repository", "graph") and kind != scope:
        return False
    # A graph lesson bound to no repository is the graph's, for every repository.
    return lesson.scope.repository == namespace or (
        kind == "graph" and lesson.scope.repository is None
    )
