"""Derive a run's effectiveness observations of lessons from its record and evidence.

For each lesson the run delivered, or whose scope the run touched without delivering it,
one `RunObservation`: delivered or not, and whether the costly evidence the lesson was
written against recurred in this run. Pure: no I/O, no clock, no model.
See docs/quality.md ("Effectiveness") for the measure and its limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from active_memory.evidence.model import EvidenceItem, EvidenceKind
from active_memory.evidence.repeated_failures import run_signatures
from active_memory.lessons import GraphScope, Lesson
from active_memory.runlog.record import NodeStarted, RunRecord
from active_memory.store.effectiveness import Effectiveness, RunObservation

# The evidence ID's kind part (`ev-<tc|rr|ex>-…`) says what a lesson was written against.
_KIND_OF_PREFIX: dict[str, EvidenceKind] = {
    "ev-tc-": "timeout_crash",
    "ev-rr-": "rejected_rounds",
    "ev-ex-": "exploration",
    "ev-tf-": "tool_failures",
}
_GRAPH_KINDS: frozenset[EvidenceKind] = frozenset({"timeout_crash", "rejected_rounds"})


def written_against(lesson: Lesson) -> frozenset[EvidenceKind]:
    """The evidence kinds a lesson cites; when it cites none, those of its scope
    (a graph lesson: timeouts/crashes and rejected rounds; a repository lesson:
    exploration). A repository lesson with a `commands` association is also written
    against repeated tool failures (of those families)."""
    kinds = {
        kind
        for evidence_id in lesson.evidence.evidence_ids
        for prefix, kind in _KIND_OF_PREFIX.items()
        if evidence_id.startswith(prefix)
    }
    if isinstance(lesson.scope, GraphScope):
        return frozenset(kinds & _GRAPH_KINDS) or _GRAPH_KINDS
    if lesson.associations.commands:
        kinds.add("tool_failures")
    return frozenset(kinds) or frozenset({"exploration"})


def failures_written_against(
    lesson: Lesson, written: Mapping[str, frozenset[tuple[str, str]]]
) -> frozenset[tuple[str, str]]:
    """The `(family, normalised error)` pairs of the `ev-tf-` items the lesson cites, as
    the store kept them (schema 9; `LessonStore.written_against`); empty for a lesson
    published before, or citing none."""
    return frozenset(
        pair
        for evidence_id in lesson.evidence.evidence_ids
        for pair in written.get(evidence_id, ())
    )


def observe(
    record: RunRecord,
    evidence: Sequence[EvidenceItem],
    lessons: Iterable[Lesson],
    written: Mapping[str, frozenset[tuple[str, str]]] | None = None,
) -> list[RunObservation]:
    """One observation per lesson the run delivered or touched, in lesson ID order.

    `written` holds the failures the cited `ev-tf-` items were made of (see
    `failures_written_against`). A record without delivery evidence (`deliveries`
    absent) observes nothing: it cannot tell a delivered lesson from one that was not.
    """
    if record.deliveries is None:
        return []
    delivered = {d.lesson for d in record.deliveries}
    started = {
        stored.event.reference.node
        for stored in record.events
        if isinstance(stored.event, NodeStarted)
    }
    paths = {path for receipt in record.receipts for path in receipt.paths}
    shown = {(s.family, s.error) for s in run_signatures(record)} if record.tool_failures else set()
    observations = []
    for lesson in sorted(lessons, key=lambda lesson: lesson.id):
        touched = lesson.id in delivered or _touched(lesson, record, started, paths)
        if touched:
            observations.append(
                RunObservation(
                    lesson_id=lesson.id,
                    run_id=record.run_id,
                    delivered=lesson.id in delivered,
                    recurred=_recurred(
                        lesson,
                        evidence,
                        record,
                        failures_written_against(lesson, written or {}),
                        shown,
                    ),
                )
            )
    return observations


def _touched(lesson: Lesson, record: RunRecord, started: set[str], paths: set[str]) -> bool:
    """Whether the run reached the lesson's scope: its node ran, or its files were used."""
    scope = lesson.scope
    namespace = record.repository.namespace if record.repository else None
    if isinstance(scope, GraphScope):
        if record.graph is None or record.graph.hash != scope.graph_hash:
            return False
        if scope.repository is not None and scope.repository != namespace:
            return False
        return scope.node in started
    if scope.repository != namespace:
        return False
    return any(_on_lesson_files(lesson, path) for path in paths)


def _recurred(
    lesson: Lesson,
    evidence: Sequence[EvidenceItem],
    record: RunRecord,
    failures: frozenset[tuple[str, str]],
    shown: set[tuple[str, str]],
) -> bool:
    """Whether an evidence item of a kind the lesson was written against came back on its
    node (graph lesson) or on its files (repository lesson). A lesson whose tool failures
    the store kept (`failures`) recurs when the run shows one of them again, by family
    and normalised error (`shown`: counted failures only, no red-green cycle), with no
    receipt needed; one published before schema 9 by a repeated tool failure of its
    family (one of its `commands`) or on its failed calls' paths."""
    if failures & shown:
        return True
    kinds = written_against(lesson)
    for item in evidence:
        if item.kind not in kinds:
            continue
        if item.kind == "tool_failures" and not isinstance(lesson.scope, GraphScope):
            if failures:  # kept with the lesson: only its own failures count (above)
                continue
            if item.family in lesson.associations.commands or any(
                _on_lesson_files(lesson, path)
                for failure in record.tool_failures
                if failure.family == item.family
                for path in failure.paths
            ):
                return True
            continue
        if isinstance(lesson.scope, GraphScope):
            if lesson.scope.node in item.nodes:
                return True
        elif any(_on_lesson_files(lesson, p) for r in item.receipts for p in r.paths):
            return True
    return False


def _on_lesson_files(lesson: Lesson, path: str) -> bool:
    """`path` is one of the lesson's files or lies inside one of its folders."""
    associations = lesson.associations
    if path in associations.files:
        return True
    return any(path.startswith(folder.rstrip("/") + "/") for folder in associations.folders)


def effectiveness_order(
    lesson_id: str, counters: Effectiveness
) -> tuple[int, float, int, int, str]:
    """Sort key of `lessons list --sort effectiveness`: delivered lessons first, the
    highest recurrence rate when delivered first, then the most delivered; then lessons
    never delivered, the most runs that touched them first; ties by ID."""
    if counters.runs_delivered:
        rate = counters.recurrence_when_delivered or 0.0
        return (0, -rate, -counters.runs_delivered, 0, lesson_id)
    return (1, 0.0, 0, -counters.runs_touched_not_delivered, lesson_id)
