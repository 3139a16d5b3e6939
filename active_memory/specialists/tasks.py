"""What each specialist is given: its task, built from a run record, lessons and a checkout.

- `MaintenanceTask`: one batch of a scope's lessons (`lessons`), the living lessons of the
  scope outside the batch that may absorb a retired one (`others`), the run's delivery
  evidence per lesson, and the authority to check them against: current files and
  folders (repository) or authored nodes (graph).
- `DiscoveryTask`: the evidence items the specialist may cite, the completions of the
  executions they point to (bounded), the authored nodes involved, the run's essentials.

Builders: `manifest` (which lessons maintenance must judge, or None to abstain),
`build_repository_maintenance`, `build_graph_maintenance`, `build_discovery`.

Every task serialises deterministically (`canonical_json`: keys sorted, compact, UTF-8);
`digest()` is its SHA-256, the same function the providers use to key recorded answers
(`input_digest(task.to_json()) == task.digest()`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from active_memory.checkout import Checkout
from active_memory.evidence import EvidenceItem, ScanResult, scan
from active_memory.lessons import Associations, Evidence, GraphScope, Lesson, Scope
from active_memory.runlog.graph import Graph
from active_memory.runlog.record import Delivery, RunRecord
from active_memory.specialists.authority import (
    FileAuthority,
    FolderAuthority,
    NodeAuthority,
    TaskLimits,
    cut_utf8,
    folders_of,
    node_authority,
    read_files,
)
from active_memory.specialists.kinds import SpecialistName, kind_of
from active_memory.store.candidates import Candidate
from active_memory.store.effectiveness import Effectiveness

MaintenanceName = Literal["graph_maintenance", "repository_maintenance"]
DiscoveryName = Literal["graph_discovery", "repository_discovery"]
DEFAULT_LIMITS = TaskLimits()


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def canonical_json(value: Any) -> str:
    """Keys sorted, no whitespace, UTF-8 kept, no NaN: one spelling per value."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


class _Task(_Model):
    def to_json(self) -> dict[str, Any]:
        """The task as JSON data (what the provider gets as `input`)."""
        return self.model_dump(mode="json")

    def canonical_json(self) -> str:
        """The task's one canonical JSON spelling."""
        return canonical_json(self.to_json())

    def digest(self) -> str:
        """Lowercase hex SHA-256 of `canonical_json()`: the key of a recorded answer."""
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()


class RunEssentials(_Model):
    """The run a postmortem is about, in a few fields."""

    run_id: str
    title: str | None
    outcome: str
    repository: str | None
    graph_name: str | None
    graph_hash: str | None
    executed_nodes: tuple[str, ...]

    @classmethod
    def of(cls, record: RunRecord) -> RunEssentials:
        """The essentials of `record`; executed nodes are those with a started or settled visit."""
        executed = sorted(
            {v.node for v in record.visits() if v.started is not None or v.outcome is not None}
        )
        graph = record.graph
        return cls(
            run_id=record.run_id,
            title=record.title,
            outcome=record.outcome,
            repository=record.repository.namespace if record.repository else None,
            graph_name=graph.name if graph else None,
            graph_hash=graph.hash if graph else None,
            executed_nodes=tuple(executed),
        )


class DeliveryView(_Model):
    """One delivery of a lesson in this run: the session and the revision it received."""

    session: str
    revision: int
    at: str | None = None


class CandidateView(_Model):
    """A refused near-duplicate proposal of an earlier run: an adaptation candidate of
    the lesson it repeats, with its text similarity to that lesson (0-100)."""

    run_id: str
    specialist: str
    title: str
    recommendation: str
    associations: Associations
    similarity: float

    @classmethod
    def of(cls, candidate: Candidate) -> CandidateView:
        """The task's view of a stored candidate."""
        return cls(
            run_id=candidate.run_id,
            specialist=candidate.specialist,
            title=candidate.title,
            recommendation=candidate.recommendation,
            associations=candidate.associations,
            similarity=round(candidate.score, 1),
        )


class SuppliedLesson(_Model):
    """A lesson maintenance must decide on, with the run's deliveries of it, its
    effectiveness counters over earlier postmortems (all zero: never observed) and its
    pending adaptation candidates (refused near-duplicates, oldest first)."""

    id: str
    revision: int
    status: str
    scope: Scope
    title: str
    recommendation: str
    associations: Associations
    evidence: Evidence
    deliveries: tuple[DeliveryView, ...] = ()
    effectiveness: Effectiveness = Effectiveness()
    candidates: tuple[CandidateView, ...] = ()


class LessonRef(_Model):
    """A living lesson of the scope outside the batch: a possible `canonical` target."""

    id: str
    revision: int
    scope: Scope
    title: str


class MaintenanceTask(_Task):
    """One batch of one maintenance specialist (SPEC §6)."""

    specialist: MaintenanceName
    run: RunEssentials
    lessons: tuple[SuppliedLesson, ...]
    others: tuple[LessonRef, ...] = ()
    files: tuple[FileAuthority, ...] = ()
    folders: tuple[FolderAuthority, ...] = ()
    nodes: tuple[NodeAuthority, ...] = ()

    def supplied(self) -> dict[str, SuppliedLesson]:
        """The batch by lesson ID."""
        return {lesson.id: lesson for lesson in self.lessons}


class CompletionView(_Model):
    """An execution's final text (bounded) that an evidence item points to."""

    execution: str
    node: str
    text: str
    truncated: bool = False


class DiscoveryTask(_Task):
    """What one discovery specialist may propose from (SPEC §4, §6)."""

    specialist: DiscoveryName
    run: RunEssentials
    evidence: tuple[EvidenceItem, ...]
    receipts_omitted: dict[str, int] = {}
    """Per evidence ID, how many of its receipts were left out (`TaskLimits.receipts_max`)."""
    completions: tuple[CompletionView, ...] = ()
    nodes: tuple[NodeAuthority, ...] = ()
    rejected: tuple[dict[str, str], ...] = ()
    """Proposals a person rejected in this scope (manual review): not to be proposed again."""

    def to_json(self) -> dict[str, Any]:
        """The task as the specialist sees it; `rejected` only when there are some (a
        task without any reads exactly as before manual review existed)."""
        data = super().to_json()
        if not self.rejected:
            data.pop("rejected", None)
        return data

    def evidence_by_id(self) -> dict[str, EvidenceItem]:
        """The citable evidence by ID."""
        return {item.id: item for item in self.evidence}


Task = MaintenanceTask | DiscoveryTask


# --- builders -----------------------------------------------------------------------


def manifest(
    name: SpecialistName, record: RunRecord, lessons: Iterable[Lesson]
) -> list[Lesson] | None:
    """The lessons of `name`'s scope that this run delivered, sorted by ID; None to abstain.

    A record without delivery evidence (`deliveries` absent) gives None: maintenance
    abstains (SPEC §6). A lesson counts when its ID was delivered (any revision: the
    current one is judged). Graph lessons must also be of the run's graph, for a node that
    executed, and unqualified or qualified with the run's repository. `init` supplies
    every lesson of the scope instead of calling this.
    """
    kind = kind_of(name)
    if record.deliveries is None:
        return None
    delivered = {d.lesson for d in record.deliveries}
    run = RunEssentials.of(record)
    chosen: list[Lesson] = []
    for lesson in lessons:
        if lesson.scope.kind != kind.scope or lesson.id not in delivered:
            continue
        if isinstance(lesson.scope, GraphScope):
            scope = lesson.scope
            if scope.graph_hash != run.graph_hash or scope.node not in run.executed_nodes:
                continue
            if scope.repository not in (None, run.repository):
                continue
        elif lesson.scope.repository != run.repository:
            continue
        chosen.append(lesson)
    return sorted(chosen, key=lambda lesson: lesson.id)


def _deliveries(record: RunRecord) -> dict[str, tuple[DeliveryView, ...]]:
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


def _supplied(
    name: MaintenanceName,
    record: RunRecord,
    lessons: Sequence[Lesson],
    effectiveness: Mapping[str, Effectiveness] | None,
    candidates: Mapping[str, Sequence[Candidate]] | None = None,
) -> tuple[SuppliedLesson, ...]:
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
    delivered = _deliveries(record)
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
            deliveries=delivered.get(lesson.id, ()),
            effectiveness=(effectiveness or {}).get(lesson.id, Effectiveness()),
            candidates=tuple(CandidateView.of(c) for c in (candidates or {}).get(lesson.id, ())),
        )
        for lesson in sorted(lessons, key=lambda lesson: lesson.id)
    )


def _others(
    name: MaintenanceName, batch: Sequence[Lesson], living: Iterable[Lesson], limits: TaskLimits
) -> tuple[LessonRef, ...]:
    scope = kind_of(name).scope
    in_batch = {lesson.id for lesson in batch}
    refs = sorted(
        (
            LessonRef(id=x.id, revision=x.revision, scope=x.scope, title=x.title)
            for x in living
            if x.scope.kind == scope and x.id not in in_batch
        ),
        key=lambda ref: ref.id,
    )
    return tuple(refs[: limits.others_max])


def build_repository_maintenance(
    record: RunRecord,
    lessons: Sequence[Lesson],
    *,
    checkout: Checkout | None,
    living: Iterable[Lesson] = (),
    limits: TaskLimits = DEFAULT_LIMITS,
    effectiveness: Mapping[str, Effectiveness] | None = None,
    candidates: Mapping[str, Sequence[Candidate]] | None = None,
) -> MaintenanceTask:
    """Repository maintenance's task for one batch: the lessons (with their
    `effectiveness` counters and pending adaptation `candidates` by ID), and the current
    content of every file they cite or associate (read from `checkout`; None marks all
    unread)."""
    name: MaintenanceName = "repository_maintenance"
    paths = [
        p for x in lessons for p in (*x.associations.files, *(c.path for c in x.evidence.citations))
    ]
    folders = [f for x in lessons for f in x.associations.folders]
    return MaintenanceTask(
        specialist=name,
        run=RunEssentials.of(record),
        lessons=_supplied(name, record, lessons, effectiveness, candidates),
        others=_others(name, lessons, living, limits),
        files=read_files(checkout, paths, limits),
        folders=folders_of(checkout, folders),
    )


def build_graph_maintenance(
    record: RunRecord,
    lessons: Sequence[Lesson],
    *,
    graphs: Mapping[str, Graph] | None = None,
    living: Iterable[Lesson] = (),
    limits: TaskLimits = DEFAULT_LIMITS,
    effectiveness: Mapping[str, Effectiveness] | None = None,
    candidates: Mapping[str, Sequence[Candidate]] | None = None,
) -> MaintenanceTask:
    """Graph maintenance's task for one batch: the lessons (with their `effectiveness`
    counters and pending adaptation `candidates` by ID), and the authored node each is
    for. `graphs` maps graph hashes to graphs; by default the run's own graph."""
    name: MaintenanceName = "graph_maintenance"
    graphs = _run_graphs(record) if graphs is None else graphs
    targets = sorted(
        {(x.scope.graph_hash, x.scope.node) for x in lessons if isinstance(x.scope, GraphScope)}
    )
    return MaintenanceTask(
        specialist=name,
        run=RunEssentials.of(record),
        lessons=_supplied(name, record, lessons, effectiveness, candidates),
        others=_others(name, lessons, living, limits),
        nodes=tuple(node_authority(graphs, h, n, limits) for h, n in targets),
    )


def build_discovery(
    name: DiscoveryName,
    record: RunRecord,
    *,
    evidence: ScanResult | None = None,
    limits: TaskLimits = DEFAULT_LIMITS,
) -> DiscoveryTask:
    """A discovery task: the evidence `name` may cite (the run is scanned unless `evidence`
    is given), the completions of their executions, and the authored nodes involved."""
    kind = kind_of(name)
    result = scan(record) if evidence is None else evidence
    items = tuple(
        item
        for item in result.evidence
        if item.kind in kind.evidence_kinds and name in item.specialists
    )
    run = RunEssentials.of(record)
    graphs = _run_graphs(record)
    nodes = sorted({node for item in items for node in item.nodes})
    shown, omitted = _bounded_receipts(items, limits.receipts_max)
    return DiscoveryTask(
        specialist=name,
        run=run,
        evidence=shown,
        receipts_omitted=omitted,
        completions=_completions(record, items, limits),
        nodes=tuple(node_authority(graphs, run.graph_hash or "", n, limits) for n in nodes)
        if run.graph_hash
        else (),
    )


def _bounded_receipts(
    items: Sequence[EvidenceItem], limit: int
) -> tuple[tuple[EvidenceItem, ...], dict[str, int]]:
    """Items with at most `limit` receipts each: the first and the latest half survive,
    as in the run record's own receipt cap, so the exploration's span stays visible."""
    shown: list[EvidenceItem] = []
    omitted: dict[str, int] = {}
    for item in items:
        receipts = item.receipts
        if len(receipts) > limit:
            head = (limit + 1) // 2
            kept = receipts[:head] + receipts[len(receipts) - (limit - head) :]
            omitted[item.id] = len(receipts) - len(kept)
            item = item.model_copy(update={"receipts": kept})
        shown.append(item)
    return tuple(shown), omitted


def _run_graphs(record: RunRecord) -> dict[str, Graph]:
    graph = record.graph
    if graph is None or graph.ir is None or graph.hash is None:
        return {}
    return {graph.hash: graph.ir}


def _completions(
    record: RunRecord, items: Sequence[EvidenceItem], limits: TaskLimits
) -> tuple[CompletionView, ...]:
    executions: dict[str, str] = {}
    for item in items:
        refs = [
            *item.executions,
            *(r for rnd in item.rounds for r in (*rnd.prefix, *rnd.verifiers)),
        ]
        for ref in refs:
            executions.setdefault(ref.execution, ref.node)
    budget = limits.completions_total_bytes
    views: list[CompletionView] = []
    for execution in sorted(executions):
        text = record.completions.get(execution)
        if text is None or budget <= 0:
            continue
        kept, cut = cut_utf8(text, min(limits.completion_bytes, budget))
        budget -= len(kept.encode("utf-8"))
        views.append(
            CompletionView(
                execution=execution, node=executions[execution], text=kept, truncated=cut
            )
        )
    return tuple(views)
