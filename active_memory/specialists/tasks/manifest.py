"""Which lessons a maintenance specialist must judge after a run: its manifest (SPEC §6).

`manifest(name, record, lessons, stale=...)` gives them sorted by ID, or None to abstain
(no delivery evidence and nothing else to offer); `stale_offered` names the stale
lessons it adds that the run did not deliver (at most `STALE_OFFERED_MAX`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from active_memory.lessons import GraphScope, Lesson
from active_memory.runlog.record import RunRecord
from active_memory.specialists.kinds import SpecialistName, kind_of
from active_memory.specialists.tasks.gather_run import executed_nodes

STALE_OFFERED_MAX = 16
"""Stale lessons the run did not deliver offered to one maintenance (docs/staleness.md)."""

NO_DELIVERY_EVIDENCE = (
    "the run record has no delivery evidence (`deliveries` is absent), so maintenance "
    "abstains instead of guessing"
)


def abstains(record: RunRecord, *, offered: bool = False) -> str | None:
    """SPEC §6's abstention, the one place it is decided: why maintenance must not judge
    lessons on `record`, or None when it may. A record without delivery evidence
    (`deliveries` absent, not empty) cannot say what the run received; only lessons
    offered on other grounds (`offered`: deferred or stale ones) may still be judged.
    The postmortem (`manifest`, then `orchestrator/runners.py`) and `init`'s maintenance
    both ask here."""
    if record.deliveries is None and not offered:
        return NO_DELIVERY_EVIDENCE
    return None


def manifest(
    name: SpecialistName,
    record: RunRecord,
    lessons: Iterable[Lesson],
    *,
    stale: Collection[str] = (),
) -> list[Lesson] | None:
    """The lessons of `name`'s scope that maintenance must judge now, sorted by ID; None
    to abstain.

    Three kinds: the lessons this run delivered (any revision: the current one is judged),
    every *deferred* lesson of the scope, delivered or not (a deferred lesson is never
    recalled, so it would never be delivered again: SPEC §9, 2026-12), and, for
    repository maintenance, the active lessons of `stale` (IDs of lessons whose cited
    code changed, found against the run's checkout) that the run did not deliver: at
    most `STALE_OFFERED_MAX`, lowest revision first, then ID (`stale_offered`). A record
    without delivery evidence (`deliveries` absent) offers the deferred and stale ones
    only, and gives None (abstain, SPEC §6) when there are none. Repository lessons must
    be of the run's namespace. Graph lessons must be of the run's graph and unqualified
    or qualified with the run's repository; a delivered one must also be for a node that
    executed. `init` supplies every lesson of the scope instead of calling this.
    """
    kind = kind_of(name)
    delivered = {d.lesson for d in record.deliveries or ()}
    lessons = list(lessons)
    offered = set(stale_offered(name, record, lessons, stale))
    graph_hash = record.graph.hash if record.graph else None
    repository = record.repository.namespace if record.repository else None
    executed = executed_nodes(record)
    chosen: list[Lesson] = []
    for lesson in lessons:
        deferred = lesson.status == "deferred"
        wanted = deferred or lesson.id in delivered or lesson.id in offered
        if lesson.scope.kind != kind.scope or not wanted:
            continue
        if isinstance(lesson.scope, GraphScope):
            scope = lesson.scope
            if scope.graph_hash != graph_hash:
                continue
            if not deferred and scope.node not in executed:
                continue
            if scope.repository not in (None, repository):
                continue
        elif lesson.scope.repository != repository:
            continue
        chosen.append(lesson)
    if abstains(record, offered=bool(chosen)) is not None:
        return None
    return sorted(chosen, key=lambda lesson: lesson.id)


def stale_offered(
    name: SpecialistName, record: RunRecord, lessons: Iterable[Lesson], stale: Collection[str]
) -> list[str]:
    """The IDs among `stale` that `manifest` adds for `name`: active repository lessons
    of the run's namespace that the run did not deliver, at most `STALE_OFFERED_MAX`,
    lowest revision first (the lessons maintenance has decided on least), then ID."""
    if not stale or name != "repository_maintenance" or record.repository is None:
        return []
    delivered = {d.lesson for d in record.deliveries or ()}
    namespace = record.repository.namespace
    found = [
        x
        for x in lessons
        if x.id in stale
        and x.status == "active"
        and x.scope.kind == "repository"
        and x.scope.repository == namespace
        and x.id not in delivered
    ]
    found.sort(key=lambda x: (x.revision, x.id))
    return [x.id for x in found[:STALE_OFFERED_MAX]]
