"""Each lesson judged against its own repository's checkout (docs/staleness.md).

A store holds lessons of many repositories. A lesson's cited code is compared with the
checkout of the lesson's repository on this machine (`known_checkouts.KnownCheckouts`),
never with whatever checkout a command happens to run in: judged against another
repository, every citation would read as "file gone".

`judge(lessons, known)` groups the lessons by repository and makes one `cited_now` pass
per repository (one `check_paths`, each file read once, staleness.py). A lesson whose
repository has no known checkout here, or an unqualified graph lesson (it belongs to
every repository), is *not judged*: `unjudged` says why, and nothing calls it stale.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from active_memory.checkout.citations import Checkout
from active_memory.checkout.git import GitFailed, NotACheckout
from active_memory.checkout.staleness import CitedNow, cited_now, counting
from active_memory.known_checkouts import KnownCheckouts
from active_memory.lessons import Citation, Lesson, Tombstone

log = logging.getLogger(__name__)

NO_CHECKOUT = "no checkout known"
"""Why a lesson of a repository without a checkout on this machine is not judged."""
NO_REPOSITORY = "a graph lesson of every repository"
"""Why an unqualified graph lesson's citations are not judged."""


def repository_of(lesson: Lesson | Tombstone) -> str | None:
    """The repository whose checkout a lesson's citations name: a repository lesson's,
    or a graph lesson's qualifying repository (None: it has none)."""
    return lesson.scope.repository or None


@dataclass
class Judgement:
    """Where the cited code of each judged lesson is now, and why others were not judged.

    `now`: per lesson ID, its changed and moved citations (absent: all where recorded);
    `unjudged`: per lesson ID with fingerprinted citations, why it was not compared;
    `roots`: per repository, the checkout used (None: none known)."""

    now: dict[str, CitedNow] = field(default_factory=dict)
    unjudged: dict[str, str] = field(default_factory=dict)
    roots: dict[str, Path | None] = field(default_factory=dict)
    checkouts: dict[str, Checkout] = field(default_factory=dict)

    def stale(self) -> dict[str, list[object]]:
        """Per stale lesson ID, its changed citations (`ChangedCitation`s)."""
        return {key: list(now.changed) for key, now in self.now.items() if now.changed}

    def checkout_for(self, lesson: Lesson | Tombstone) -> Checkout | None:
        """The checkout `lesson` was judged against (None: not judged)."""
        namespace = repository_of(lesson)
        return self.checkouts.get(namespace) if namespace else None


def judge(lessons: Iterable[Lesson | Tombstone], known: KnownCheckouts) -> Judgement:
    """Judge every living lesson with fingerprinted citations against its repository's
    checkout (one pass per repository)."""
    by_repository: dict[str | None, dict[str, Sequence[Citation]]] = {}
    for lesson in lessons:
        if isinstance(lesson, Lesson):
            cited = by_repository.setdefault(repository_of(lesson), {})
            cited[lesson.id] = lesson.evidence.citations
    return judge_cited(by_repository, known)


def judge_cited(
    by_repository: Mapping[str | None, Mapping[str, Sequence[Citation]]], known: KnownCheckouts
) -> Judgement:
    """`judge` of citations already grouped: per repository (None: an unqualified graph
    lesson's), per lesson ID, its citations. Lessons without fingerprinted ones are
    neither judged nor `unjudged`: there is nothing to compare."""
    judgement = Judgement()
    for namespace, every in sorted(by_repository.items(), key=lambda item: item[0] or ""):
        cited = {key: citations for key, citations in every.items() if counting(citations)}
        if not cited:
            continue
        if namespace is None:
            judgement.unjudged.update(dict.fromkeys(cited, NO_REPOSITORY))
            continue
        checkout = _checkout(judgement, namespace, known)
        if checkout is None:
            judgement.unjudged.update(dict.fromkeys(cited, f"{NO_CHECKOUT} for {namespace}"))
            continue
        try:
            judgement.now.update(cited_now(checkout, cited))
        except GitFailed as exc:  # unknown, not stale: nothing was read
            log.warning("staleness of %s not judged: %s", namespace, exc)
            judgement.unjudged.update(dict.fromkeys(cited, f"git failed in {checkout.root}"))
    return judgement


def _checkout(judgement: Judgement, namespace: str, known: KnownCheckouts) -> Checkout | None:
    if namespace in judgement.roots:
        return judgement.checkouts.get(namespace)
    root = known.root(namespace)
    judgement.roots[namespace] = root
    if root is None:
        return None
    try:
        checkout = Checkout(root)
    except NotACheckout as exc:
        log.warning("%s: the checkout of %s is not usable: %s", root, namespace, exc.reason)
        judgement.roots[namespace] = None
        return None
    judgement.checkouts[namespace] = checkout
    return checkout


def checkout_of(namespace: str | None, known: KnownCheckouts) -> Checkout | None:
    """The usable checkout of `namespace` here, or None."""
    root = known.root(namespace)
    if root is None:
        return None
    try:
        return Checkout(root)
    except NotACheckout:
        return None
