"""Near-duplicate proposals: found before they become lessons (docs/quality.md).

A discovery proposal is a near-duplicate of a living lesson of its scope when their
normalised title + recommendation are similar (rapidfuzz's `token_sort_ratio`, 0-100)
*and* they share an association (a file, folder, identifier or command; a file under a
folder counts), or when the text alone is almost the same. `DuplicateLimits` holds the two
thresholds; the defaults come from the corpus in `bench/duplicates_corpus.json`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

from active_memory.lessons import Associations, Card, Lesson, Scope


@dataclass(frozen=True, slots=True)
class DuplicateLimits:
    """When a proposal counts as a near-duplicate of a living lesson (scores 0-100)."""

    with_shared_association: float = 64.0
    """Text similarity that makes a duplicate when the two share an association. On the
    corpus, paraphrases score 67.8 and up, distinct lessons about the same files 60.7 and
    below: 64 sits in the gap."""
    text_alone: float = 90.0
    """Text similarity that makes a duplicate without a shared association: an almost
    verbatim copy. Distinct lessons about other files score up to 72.4 on the corpus."""

    def __post_init__(self) -> None:
        for name in ("with_shared_association", "text_alone"):
            value = getattr(self, name)
            if not 0 <= value <= 100:
                raise ValueError(f"{name} must be between 0 and 100; got {value}")


@dataclass(frozen=True, slots=True)
class Duplicate:
    """The living lesson a proposal repeats, how similar they are and what they share."""

    lesson_id: str
    revision: int
    score: float
    shared: tuple[str, ...]

    def describe(self) -> str:
        """`L-3 (r2): similarity 81/100, shared api/schema.json`."""
        shared = f", shared {', '.join(self.shared)}" if self.shared else ""
        return f"{self.lesson_id} (r{self.revision}): similarity {self.score:.0f}/100{shared}"


def text_similarity(a: Card, b: Card) -> float:
    """rapidfuzz `token_sort_ratio` of the normalised title + recommendation (0-100)."""
    return float(
        fuzz.token_sort_ratio(
            f"{a.title} {a.recommendation}",
            f"{b.title} {b.recommendation}",
            processor=default_process,
        )
    )


def shared_associations(a: Associations, b: Associations) -> tuple[str, ...]:
    """Files, folders, identifiers and commands both name; a file inside the other's
    folder counts."""
    shared = set(a.identifiers) & set(b.identifiers)
    shared |= set(a.commands) & set(b.commands)
    paths_a, paths_b = {*a.files, *a.folders}, {*b.files, *b.folders}
    shared |= paths_a & paths_b
    shared |= {p for p in paths_a if _under_any(p, b.folders)}
    shared |= {p for p in paths_b if _under_any(p, a.folders)}
    return tuple(sorted(shared))


def _under_any(path: str, folders: Iterable[str]) -> bool:
    return any(path.startswith(folder.rstrip("/") + "/") for folder in folders)


def is_duplicate(score: float, shared: Sequence[str], limits: DuplicateLimits) -> bool:
    """The rule itself, on a score and the shared associations."""
    if shared and score >= limits.with_shared_association:
        return True
    return score >= limits.text_alone


def find_duplicate(
    card: Card, scope: Scope, living: Iterable[Lesson], limits: DuplicateLimits
) -> Duplicate | None:
    """The most similar active lesson of `scope` that `card` duplicates, if any."""
    best: Duplicate | None = None
    for lesson in living:
        if lesson.status != "active" or lesson.scope != scope:
            continue
        score = text_similarity(card, lesson.card())
        shared = shared_associations(card.associations, lesson.associations)
        if is_duplicate(score, shared, limits) and (best is None or score > best.score):
            best = Duplicate(lesson.id, lesson.revision, score, shared)
    return best
