"""Gathering a task's run-side material: the evidence it shows and which lessons each
item concerns, the run's deliveries, the supplied lessons with what the store knows of
them, the lessons of the scope, the authored nodes, and a deferral's view.

Everything here reads the run record and the lessons it is given (no file, no git, no
store: the caller passes what the store said); `files.py` gathers the code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from active_memory.evidence import EvidenceItem, ScanResult
from active_memory.lessons import GraphScope, Lesson
from active_memory.runlog.graph import Graph, GraphIndex, StepNode, VerifierNode
from active_memory.runlog.record import Delivery, RunRecord
from active_memory.specialists.kinds import SpecialistName, kind_of
from active_memory.specialists.tasks.bound import TaskLimits, cut_utf8
from active_memory.specialists.tasks.model import (
    CandidateView,
    DeferralView,
    DeliveryView,
    LessonRef,
    MaintenanceName,
    NodeAuthority,
    RunEssentials,
    ScopeLesson,
    SuppliedLesson,
)
from active_memory.store.candidates import Candidate
from active_memory.store.effectiveness import Effectiveness

# --- evidence ------------------------------------------------------------------------------


def executions_of(item: EvidenceItem) -> list[tuple[str, str]]:
    """(execution, node) of every execution an evidence item points to."""
    refs = [*item.executions, *(r for rnd in item.rounds for r in (*rnd.prefix, *rnd.verifiers))]
    return [(ref.execution, ref.node) for ref in refs]


def citable_evidence(name: SpecialistName, result: ScanResult) -> tuple[EvidenceItem, ...]:
    """The scanner's items discovery `name` may cite: of a kind it may cite, naming it."""
    kinds = kind_of(name).evidence_kinds
    return tuple(
        item for item in result.evidence if item.kind in kinds and name in item.specialists
    )


def _tokens(text: str) -> set[str]:
    """The names a text mentions: runs of word characters, `.`, `/` and `-` (a trailing
    full stop dropped), each path also by its leading folders (`a/b/c.py` names `a/b`)."""
    found: set[str] = set()
    for token in re.findall(r"[\w./-]+", text):
        token = token.rstrip(".").strip("/")
        if not token:
            continue
        found.add(token)
        parts = token.split("/")
        found.update("/".join(parts[:n]) for n in range(1, len(parts)))
    return found


class RunTexts:
    """What the final texts of each evidence item's executions mention (names and words),
    computed once per task: every lesson of a batch is matched against them."""

    def __init__(self, record: RunRecord, items: Sequence[EvidenceItem]) -> None:
        self.names: dict[str, set[str]] = {}
        self.words: dict[str, set[str]] = {}
        # The paths each item's receipts touched (every lesson of the batch asks).
        self.touched: dict[str, set[str]] = {
            item.id: {p.strip("/") for receipt in item.receipts for p in receipt.paths}
            for item in items
        }
        for item in items:
            texts = [record.completions.get(execution, "") for execution, _ in executions_of(item)]
            joined = "\n".join(texts)
            self.names[item.id] = _tokens(joined)
            self.words[item.id] = set(re.findall(r"[\w-]+", joined.casefold()))


def _inside(folder: str, path: str) -> bool:
    """`path` is `folder` or under it (both root-relative, as receipts and lessons store
    them; `folder_contains` normalises too, which costs more than a batch can afford)."""
    return not folder or path == folder or path.startswith(folder + "/")


def concerning(
    lesson: Lesson,
    items: Sequence[EvidenceItem],
    record: RunRecord,
    texts: RunTexts | None = None,
) -> list[str]:
    """IDs of the evidence items that concern `lesson`: for a graph lesson, those naming
    its node; for a repository lesson, those whose receipts touched its files or folders,
    or whose executions' final texts name one of its files, folders or identifiers, or
    hold every term of one of its keyword groups. `texts`: `RunTexts(record, items)`."""
    if isinstance(lesson.scope, GraphScope):
        node = lesson.scope.node
        return [item.id for item in items if node in item.nodes]
    texts = texts or RunTexts(record, items)
    files = list(lesson.associations.files)
    folders = [f.strip("/") for f in lesson.associations.folders]
    names = {n.strip("/") for n in (*files, *folders, *lesson.associations.identifiers)}
    groups = [[t.casefold() for t in group] for group in lesson.associations.keywords]
    found: list[str] = []
    for item in items:
        touched = texts.touched.get(item.id)
        if touched is None:  # an item the texts were not built with
            touched = {p.strip("/") for receipt in item.receipts for p in receipt.paths}
        if any(p in files or any(_inside(f, p) for f in folders) for p in touched):
            found.append(item.id)
            continue
        words = texts.words.get(item.id, set())
        if names & texts.names.get(item.id, set()) or any(
            group and all(term in words for term in group) for group in groups
        ):
            found.append(item.id)
    return found


def evidence_for(
    record: RunRecord, lessons: Sequence[Lesson], evidence: ScanResult | None
) -> tuple[list[EvidenceItem], dict[str, list[str]]]:
    """The run's evidence items that concern any of `lessons`, and per lesson their IDs."""
    items = list(evidence.evidence) if evidence is not None else []
    texts = RunTexts(record, items)
    by_lesson = {x.id: concerning(x, items, record, texts) for x in lessons}
    wanted = {i for ids in by_lesson.values() for i in ids}
    return [item for item in items if item.id in wanted], by_lesson


# --- the lessons -----------------------------------------------------------------------------


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


def scope_lessons(
    living: Iterable[Lesson], *, kind: str, relevant: Mapping[str, int], limit: int
) -> tuple[ScopeLesson, ...]:
    """The active lessons of a scope, the most relevant first (`relevant`: ID → rank),
    then by ID, at most `limit`."""
    chosen = [x for x in living if x.scope.kind == kind and x.status == "active"]
    chosen.sort(key=lambda x: (relevant.get(x.id, len(relevant)), x.id))
    return tuple(
        ScopeLesson(
            id=x.id,
            revision=x.revision,
            title=x.title,
            node=x.scope.node if isinstance(x.scope, GraphScope) else None,
            associations=x.associations,
        )
        for x in chosen[:limit]
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


# --- the graph -------------------------------------------------------------------------------


def run_graphs(record: RunRecord) -> dict[str, Graph]:
    """The run's own graph by its hash (empty when the record has none)."""
    graph = record.graph
    if graph is None or graph.ir is None or graph.hash is None:
        return {}
    return {graph.hash: graph.ir}


def node_authority(
    graphs: Mapping[str, Graph], graph_hash: str, node: str, limits: TaskLimits
) -> NodeAuthority:
    """The authored node `node` of the graph with `graph_hash`, or why it is not known."""
    graph = graphs.get(graph_hash)
    if graph is None:
        return NodeAuthority(
            graph_hash=graph_hash, node=node, found=False, reason="the graph is not available"
        )
    index = GraphIndex(graph)
    found = index.get(node)
    if found is None:
        return NodeAuthority(
            graph_hash=graph_hash, node=node, found=False, reason="the graph has no such node"
        )
    procedure = tuple(f"{a.kind} {a.name}" for a in reversed(index.ancestors(node)))
    if not isinstance(found, StepNode | VerifierNode):
        return NodeAuthority(
            graph_hash=graph_hash, node=node, found=True, kind=found.kind, procedure=procedure
        )
    instructions, cut = (None, False)
    if found.instructions is not None:
        instructions, cut = cut_utf8(found.instructions, limits.instructions_bytes)
    extra = found.model_extra or {}
    return NodeAuthority(
        graph_hash=graph_hash,
        node=node,
        found=True,
        kind=found.kind,
        worker=found.worker,
        instructions=instructions,
        instructions_truncated=cut,
        output=extra.get("output"),
        signals=dict(found.signals) if isinstance(found, VerifierNode) else {},
        procedure=procedure,
        attempts=found.attempts,
        timeout_ms=found.timeout_ms,
    )
