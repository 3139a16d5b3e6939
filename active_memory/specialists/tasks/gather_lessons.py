"""Gathering what a task shows of the lessons: the run's deliveries, the supplied lessons
with what the store knows of them, the living lessons a retired one may point to, the
active lessons of a discovery's scope (the related ones first), and a deferral's view.

Everything here reads the run record and the lessons it is given (no file, no git, no
store: the caller passes what the store said).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

from active_memory.lessons import GraphScope, Lesson
from active_memory.runlog.record import Delivery, RunRecord
from active_memory.specialists.kinds import kind_of
from active_memory.specialists.tasks.bound import TaskLimits
from active_memory.specialists.tasks.model import (
    CandidateView,
    DeferralView,
    DeliveryView,
    LessonDelivery,
    LessonRef,
    MaintenanceName,
    RunEssentials,
    ScopeLesson,
    SuppliedLesson,
)
from active_memory.store.candidates import Candidate
from active_memory.store.effectiveness import Effectiveness


def deliveries(record: RunRecord) -> dict[str, tuple[DeliveryView, ...]]:
    """The run's deliveries by lesson ID, each lesson's distinct ones sorted."""
    found: dict[str, list[Delivery]] = {}
    for delivery in record.deliveries or ():
        found.setdefault(delivery.lesson, []).append(delivery)
    return {
        lesson: tuple(
            sorted(
                {
                    DeliveryView(
                        session=d.session,
                        revision=d.revision,
                        at=d.at.isoformat() if d.at is not None else None,
                    )
                    for d in items
                },
                key=lambda v: (v.session, v.revision, v.at or ""),
            )
        )
        for lesson, items in found.items()
    }


def supplied_lessons(
    name: MaintenanceName,
    record: RunRecord,
    lessons: Sequence[Lesson],
    effectiveness: Mapping[str, Effectiveness] | None,
    candidates: Mapping[str, Sequence[Candidate]] | None,
    deferrals: Mapping[str, DeferralView] | None,
    run_evidence: Mapping[str, Sequence[str]],
) -> tuple[SuppliedLesson, ...]:
    """The batch as maintenance sees it, sorted by ID; `ValueError` for a lesson of the
    other scope or a repeated ID (a bug of the caller, never a model's doing)."""
    scope = kind_of(name).scope
    seen: set[str] = set()
    for lesson in lessons:
        if lesson.scope.kind != scope:
            raise ValueError(
                f"{name} cannot be given {lesson.id}: it is a {lesson.scope.kind} lesson"
            )
        if lesson.id in seen:
            raise ValueError(f"{lesson.id} is in the batch twice")
        seen.add(lesson.id)
    delivered = deliveries(record)
    return tuple(
        SuppliedLesson(
            id=lesson.id,
            revision=lesson.revision,
            status=lesson.status,
            scope=lesson.scope,
            title=lesson.title,
            recommendation=lesson.recommendation,
            associations=lesson.associations,
            evidence=lesson.evidence,
            deferral=(
                (deferrals or {}).get(lesson.id, DeferralView(reason=""))
                if lesson.status == "deferred"
                else None
            ),
            deliveries=delivered.get(lesson.id, ()),
            run_evidence=tuple(run_evidence.get(lesson.id, ())),
            effectiveness=(effectiveness or {}).get(lesson.id, Effectiveness()),
            candidates=tuple(CandidateView.of(c) for c in (candidates or {}).get(lesson.id, ())),
        )
        for lesson in sorted(lessons, key=lambda lesson: lesson.id)
    )


def other_lessons(
    name: MaintenanceName,
    batch: Sequence[Lesson],
    living: Iterable[Lesson],
    limits: TaskLimits,
    refs: dict[str, LessonRef] | None = None,
) -> tuple[LessonRef, ...]:
    """The first `others_max` living lessons of the scope outside the batch, by ID.
    `refs`: a cache of their references by ID, shared by the batches of a postmortem."""
    scope = kind_of(name).scope
    in_batch = {lesson.id for lesson in batch}
    chosen = sorted(
        (x for x in living if x.scope.kind == scope and x.id not in in_batch), key=lambda x: x.id
    )[: limits.others_max]
    cache = {} if refs is None else refs
    found: list[LessonRef] = []
    for x in chosen:
        ref = cache.get(x.id)
        if ref is None or ref.revision != x.revision:
            # Fields of a validated lesson: no need to validate them again.
            ref = LessonRef.model_construct(
                id=x.id, revision=x.revision, scope=x.scope, title=x.title
            )
            cache[x.id] = ref
        found.append(ref)
    return tuple(found)


def lesson_paths(lesson: Lesson) -> list[str]:
    """The files a repository lesson names: its associated files, then its citations."""
    return [*lesson.associations.files, *(c.path for c in lesson.evidence.citations)]


def touches_any(lessons: Sequence[Lesson]) -> Callable[[Sequence[str]], bool]:
    """A test of root-relative paths: does one of them touch a repository lesson of
    `lessons` (one of its files or cited files, or a path inside one of its folders)?"""
    files = {p.strip("/") for x in lessons for p in lesson_paths(x)}
    folders = {f.strip("/") for x in lessons for f in x.associations.folders}

    def touches(paths: Sequence[str]) -> bool:
        for path in paths:
            path = path.strip("/")
            if path in files or any(path == f or path.startswith(f + "/") for f in folders):
                return True
        return False

    return touches


def in_run_scope(lesson: Lesson, run: RunEssentials) -> bool:
    """A lesson of the run's graph (graph scope) or of the run's repository."""
    if isinstance(lesson.scope, GraphScope):
        return lesson.scope.graph_hash == run.graph_hash
    return lesson.scope.repository == run.repository


def related(
    lessons: Sequence[Lesson], paths: Sequence[str], nodes: Sequence[str]
) -> dict[str, int]:
    """Rank of each lesson that shares a touched file or folder, or a node, with the
    evidence (0 first); unrelated lessons are not in the map."""
    touched = set(paths)
    folders = {p.rpartition("/")[0] for p in paths}
    rank: dict[str, int] = {}
    for lesson in lessons:
        if isinstance(lesson.scope, GraphScope):
            if lesson.scope.node in nodes:
                rank[lesson.id] = 0
        elif touched & set(lesson.associations.files):
            rank[lesson.id] = 0
        elif folders & {f.strip("/") for f in lesson.associations.folders}:
            rank[lesson.id] = 1
    return rank


DELIVERIES_SHOWN = 5
"""Deliveries of one scope lesson a discovery task shows: the earliest."""
FAILED_AFTER_SHOWN = 8
"""Families that failed after a delivery, shown per delivery."""


def scope_lessons(
    living: Iterable[Lesson],
    record: RunRecord,
    *,
    kind: str,
    relevant: Mapping[str, int],
    failures: Sequence[tuple[datetime, str]] = (),
) -> tuple[ScopeLesson, ...]:
    """The active lessons of a scope with their cards and, for those this run delivered,
    when relative to `failures` (`gather_run.failure_times`): the delivered ones first
    (in order of their first delivery), then the most relevant (`relevant`: ID → rank),
    then by ID."""
    delivered = _deliveries_by_lesson(record, failures)
    chosen = [x for x in living if x.scope.kind == kind and x.status == "active"]

    def order(lesson: Lesson) -> tuple[int, str, int, str]:
        shown = delivered.get(lesson.id, ())
        first = next((d.at for d in shown if d.at is not None), None)
        if shown:
            return (0, first or "~", 0, lesson.id)  # a delivery without a time sorts last
        return (1, "", relevant.get(lesson.id, len(relevant)), lesson.id)

    chosen.sort(key=order)
    return tuple(
        ScopeLesson(
            id=x.id,
            revision=x.revision,
            title=x.title,
            node=x.scope.node if isinstance(x.scope, GraphScope) else None,
            recommendation=x.recommendation,
            associations=x.associations,
            deliveries=delivered.get(x.id, ()),
        )
        for x in chosen
    )


def _deliveries_by_lesson(
    record: RunRecord, failures: Sequence[tuple[datetime, str]]
) -> dict[str, tuple[LessonDelivery, ...]]:
    """The run's deliveries by lesson: distinct, the earliest `DELIVERIES_SHOWN`, each
    placed among `failures`."""
    found: dict[str, set[tuple[str, int, datetime | None]]] = {}
    for delivery in record.deliveries or ():
        found.setdefault(delivery.lesson, set()).add(
            (delivery.session, delivery.revision, delivery.at)
        )
    views: dict[str, tuple[LessonDelivery, ...]] = {}
    for lesson, items in found.items():
        ordered = sorted(items, key=lambda d: (d[2] is None, d[2] or datetime.min, d[0], d[1]))
        views[lesson] = tuple(
            _placed(session, revision, at, failures)
            for session, revision, at in ordered[:DELIVERIES_SHOWN]
        )
    return views


def _placed(
    session: str, revision: int, at: datetime | None, failures: Sequence[tuple[datetime, str]]
) -> LessonDelivery:
    if at is None:
        return LessonDelivery(session=session, revision=revision)
    before = [what for when, what in failures if when < at]
    after = [what for when, what in failures if when >= at]
    return LessonDelivery(
        session=session,
        revision=revision,
        at=at.isoformat(),
        failures_before=len(before),
        failures_after=len(after),
        failed_after=tuple(dict.fromkeys(after))[:FAILED_AFTER_SHOWN],
    )


def deferral_of(reason: str, at: datetime | None, record: RunRecord) -> DeferralView:
    """A deferral's view; its age is measured against the run's last event (the task must
    not depend on the clock, or its digest would change from one minute to the next)."""
    end = max((s.at for s in record.events if s.at is not None), default=None)
    age = None
    if at is not None and end is not None:
        try:
            age = max(0, (end - at).days)
        except TypeError:  # one naive, one aware: no honest age
            age = None
    return DeferralView(
        reason=reason, deferred_at=at.isoformat() if at is not None else None, age_days=age
    )
