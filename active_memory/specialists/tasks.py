"""What each specialist is given: its task, built from a run record, lessons and a checkout.

- `MaintenanceTask`: the run's essentials, the run's evidence items that concern the
  batch's lessons (with the final texts of their executions underneath), one batch of a
  scope's lessons (`lessons`: each with its deliveries, effectiveness, adaptation
  candidates, the IDs of the evidence concerning it and, when deferred, its deferral), the
  living lessons outside the batch that may absorb a retired one (`others`), and the
  authority to check them against: current files (numbered lines), a `git ls-files`
  excerpt around them and folders (repository), or authored nodes (graph).
- `DiscoveryTask`: the run's essentials, the evidence items the specialist may cite with
  their completions underneath, the current files the evidence names (repository), the
  authored nodes involved, and the active lessons of its scope (not to be repeated).

Builders: `manifest` (which lessons maintenance must judge, or None to abstain),
`build_repository_maintenance`, `build_graph_maintenance`, `build_discovery`. Given
`max_bytes`, a builder fits the task's views (file contents, completions, listings) so
that `rendered_size(task)` (the task as the prompt shows it) stays within the bound.

`task_text(task)` is the rendering the prompt shows: indented JSON in the models' field
order (run first, lessons after the evidence). `canonical_json` (keys sorted, compact,
UTF-8) and `digest()` (its SHA-256) identify a task: the providers key recorded answers by
the same function (`input_digest(task.to_json()) == task.digest()`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
)

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
    folders_of,
    node_authority,
)
from active_memory.specialists.choosing import (
    fit,
    manifests,
    mentioned_files,
    receipt_paths,
    related,
)
from active_memory.specialists.kinds import SpecialistName, kind_of
from active_memory.specialists.views import (
    CodeCache,
    CodeSource,
    CompletionView,
    DeferralView,
    EvidenceView,
    FolderListing,
    RunTexts,
    ScopeLesson,
    code_cache,
    concerning,
    evidence_views,
    scope_lessons,
)
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


def task_text(task: _Task) -> str:
    """A task's JSON as the prompt shows it: indented, in field order (the reading order:
    run, evidence with its executions, lessons, then the code), UTF-8 kept. pydantic's
    serializer: fast enough to measure a task several times while fitting it."""
    # The task a builder measured last is the one it returns and the prompt then shows:
    # its text is kept for that one task (tasks are frozen; identity, not equality).
    last = _LAST_TEXT[0]
    if last is not None and last[0] is task:
        return last[1]
    text = task.model_dump_json(indent=2)
    _LAST_TEXT[0] = (task, text)
    return text


_LAST_TEXT: list[tuple[_Task, str] | None] = [None]


def rendered_size(task: _Task) -> int:
    """UTF-8 bytes of `task_text(task)`: what the model receives of the task."""
    return len(task_text(task).encode("utf-8"))


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


class ChangedCodeView(_Model):
    """A citation of a stale lesson: what changed, and how: a unified diff from the text
    recorded at publish to the lines now (`diff`), or, for a lesson published before
    texts were recorded, the cited lines as they are now (`now`) and a `note` saying the
    recorded text is unknown. `note` also says when the diff was cut."""

    path: str
    lines: tuple[int, int] | None
    why: str  # "lines changed", "lines gone", "file gone"
    now: tuple[str, ...] = ()
    diff: tuple[str, ...] = ()
    note: str = ""

    @model_serializer(mode="wrap")
    def _without_empty(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in ("diff", "note"):
                if not data.get(name):
                    data.pop(name, None)
            if "diff" in data:
                data.pop("now", None)  # the diff holds the lines now
        return data


class SuppliedLesson(_Model):
    """A lesson maintenance must decide on, with the run's deliveries of it, the IDs of
    this run's evidence items that concern it (`run_evidence`, shown in the task's
    `evidence`), its effectiveness counters over earlier postmortems (all zero: never
    observed), its pending adaptation candidates (refused near-duplicates, oldest first)
    and, when it is deferred, why and since when (`deferral`)."""

    id: str
    revision: int
    status: str
    scope: Scope
    title: str
    recommendation: str
    associations: Associations
    evidence: Evidence
    deferral: DeferralView | None = None
    deliveries: tuple[DeliveryView, ...] = ()
    run_evidence: tuple[str, ...] = ()
    effectiveness: Effectiveness = Effectiveness()
    candidates: tuple[CandidateView, ...] = ()
    cited_code_changed: tuple[ChangedCodeView, ...] = ()
    """Its citations whose code changed since it was published, with the lines now."""
    offered: Literal["cited code changed"] | None = None
    """Why a lesson the run did not deliver is supplied: its cited code changed
    (`manifest`'s stale offer; docs/staleness.md)."""

    @field_serializer("evidence", mode="wrap")
    def _without_recorded_text(
        self, value: Evidence, handler: SerializerFunctionWrapHandler
    ) -> Any:
        # The text recorded at publish is shown as a diff (`cited_code_changed`), never
        # as is: tasks of lessons with recorded text stay as they were.
        return handler(value.without_excerpts())

    @model_serializer(mode="wrap")
    def _without_unchanged(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Only a stale lesson carries the field: other tasks (and their recorded-answer
        # digests) stay as they were.
        data = handler(self)
        if isinstance(data, dict):
            if not self.cited_code_changed:
                data.pop("cited_code_changed", None)
            if self.offered is None:
                data.pop("offered", None)
        return data


class LessonRef(_Model):
    """A living lesson of the scope outside the batch: a possible `canonical` target."""

    id: str
    revision: int
    scope: Scope
    title: str


class MaintenanceTask(_Task):
    """One batch of one maintenance specialist (SPEC §6), in reading order."""

    specialist: MaintenanceName
    run: RunEssentials
    evidence: tuple[EvidenceView, ...] = ()
    lessons: tuple[SuppliedLesson, ...]
    others: tuple[LessonRef, ...] = ()
    files: tuple[FileAuthority, ...] = ()
    listing: tuple[FolderListing, ...] = ()
    folders: tuple[FolderAuthority, ...] = ()
    nodes: tuple[NodeAuthority, ...] = ()

    def supplied(self) -> dict[str, SuppliedLesson]:
        """The batch by lesson ID."""
        return {lesson.id: lesson for lesson in self.lessons}


class DiscoveryTask(_Task):
    """What one discovery specialist may propose from (SPEC §4, §6), in reading order."""

    specialist: DiscoveryName
    run: RunEssentials
    evidence: tuple[EvidenceView, ...]
    files: tuple[FileAuthority, ...] = ()
    listing: tuple[FolderListing, ...] = ()
    nodes: tuple[NodeAuthority, ...] = ()
    lessons: tuple[ScopeLesson, ...] = ()
    """The active lessons of this scope: a proposal that repeats one is refused."""
    rejected: tuple[dict[str, str], ...] = ()
    """Proposals a person rejected in this scope (manual review): not to be proposed again."""

    @model_serializer(mode="wrap")
    def _without_empty_rejected(self, handler: SerializerFunctionWrapHandler) -> Any:
        # `rejected` only when there are some: a task without any reads (and digests,
        # for recorded answers) exactly as before manual review existed.
        data = handler(self)
        if isinstance(data, dict) and not self.rejected:
            data.pop("rejected", None)
        return data

    def evidence_by_id(self) -> dict[str, EvidenceItem]:
        """The citable evidence by ID."""
        return {item.id: item for item in self.evidence}

    @property
    def completions(self) -> tuple[CompletionView, ...]:
        """Every completion shown, across the evidence items."""
        return tuple(c for item in self.evidence for c in item.completions)


Task = MaintenanceTask | DiscoveryTask


# --- builders -----------------------------------------------------------------------


STALE_OFFERED_MAX = 16
"""Stale lessons the run did not deliver offered to one maintenance (docs/staleness.md)."""


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
    run = RunEssentials.of(record)
    chosen: list[Lesson] = []
    for lesson in lessons:
        deferred = lesson.status == "deferred"
        wanted = deferred or lesson.id in delivered or lesson.id in offered
        if lesson.scope.kind != kind.scope or not wanted:
            continue
        if isinstance(lesson.scope, GraphScope):
            scope = lesson.scope
            if scope.graph_hash != run.graph_hash:
                continue
            if not deferred and scope.node not in run.executed_nodes:
                continue
            if scope.repository not in (None, run.repository):
                continue
        elif lesson.scope.repository != run.repository:
            continue
        chosen.append(lesson)
    if record.deliveries is None and not chosen:
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
    candidates: Mapping[str, Sequence[Candidate]] | None,
    deferrals: Mapping[str, DeferralView] | None,
    run_evidence: Mapping[str, Sequence[str]],
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


def _others(
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


def _paths_of(lesson: Lesson) -> list[str]:
    return [*lesson.associations.files, *(c.path for c in lesson.evidence.citations)]


def _evidence_for(
    record: RunRecord, lessons: Sequence[Lesson], evidence: ScanResult | None
) -> tuple[list[EvidenceItem], dict[str, list[str]]]:
    """The run's evidence items that concern any of `lessons`, and per lesson their IDs."""
    items = list(evidence.evidence) if evidence is not None else []
    texts = RunTexts(record, items)
    by_lesson = {x.id: concerning(x, items, record, texts) for x in lessons}
    wanted = {i for ids in by_lesson.values() for i in ids}
    return [item for item in items if item.id in wanted], by_lesson


def build_repository_maintenance(
    record: RunRecord,
    lessons: Sequence[Lesson],
    *,
    checkout: Checkout | None,
    living: Iterable[Lesson] = (),
    limits: TaskLimits = DEFAULT_LIMITS,
    effectiveness: Mapping[str, Effectiveness] | None = None,
    candidates: Mapping[str, Sequence[Candidate]] | None = None,
    evidence: ScanResult | None = None,
    deferrals: Mapping[str, DeferralView] | None = None,
    max_bytes: int | None = None,
    cache: CodeCache | None = None,
    refs: dict[str, LessonRef] | None = None,
) -> MaintenanceTask:
    """Repository maintenance's task for one batch: the run's `evidence` items that
    concern the lessons (with their completions), the lessons (with their `effectiveness`
    counters, pending adaptation `candidates` and `deferrals` by ID), and the current
    content of every file they associate or cite, then of the files those evidence items
    touched or name, then the root's build files, with a listing of their folders (read
    from `checkout`; None marks all unread); within `max_bytes` rendered bytes."""
    name: MaintenanceName = "repository_maintenance"
    cache = code_cache(checkout, cache)  # git's answers, shared by a postmortem's batches
    items, by_lesson = _evidence_for(record, lessons, evidence)
    supplied = _supplied(name, record, lessons, effectiveness, candidates, deferrals, by_lesson)
    others = _others(name, lessons, living, limits, refs)
    ordered = sorted(lessons, key=lambda lesson: lesson.id)
    # The lessons' own files first, then those the evidence concerning them touched or
    # named (what this run did to them), then the root's build files.
    named = [p for x in ordered for p in _paths_of(x)]
    named += receipt_paths(items) + mentioned_files(record, items, cache)
    paths = list(dict.fromkeys(named))
    paths += manifests(cache, paths)
    folders = folders_of(checkout, [f for x in lessons for f in x.associations.folders])
    run = RunEssentials.of(record)
    source = CodeSource(checkout, paths, limits, cache)

    def assemble(completion_budget: int, file_budget: int, kept: int) -> MaintenanceTask:
        files, listing = source.view(file_budget)
        return MaintenanceTask(
            specialist=name,
            run=run,
            evidence=evidence_views(record, items, limits, completion_budget),
            lessons=supplied,
            others=others[:kept],
            files=files,
            listing=listing,
            folders=folders,
        )

    return fit(assemble, rendered_size, max_bytes, limits, len(others))


def build_graph_maintenance(
    record: RunRecord,
    lessons: Sequence[Lesson],
    *,
    graphs: Mapping[str, Graph] | None = None,
    living: Iterable[Lesson] = (),
    limits: TaskLimits = DEFAULT_LIMITS,
    effectiveness: Mapping[str, Effectiveness] | None = None,
    candidates: Mapping[str, Sequence[Candidate]] | None = None,
    evidence: ScanResult | None = None,
    deferrals: Mapping[str, DeferralView] | None = None,
    max_bytes: int | None = None,
    refs: dict[str, LessonRef] | None = None,
) -> MaintenanceTask:
    """Graph maintenance's task for one batch: the run's `evidence` items naming the
    lessons' nodes (with their completions), the lessons (with their `effectiveness`
    counters, pending adaptation `candidates` and `deferrals` by ID), and the authored
    node each is for; within `max_bytes` rendered bytes. `graphs` maps graph hashes to
    graphs; by default the run's own graph."""
    name: MaintenanceName = "graph_maintenance"
    graphs = _run_graphs(record) if graphs is None else graphs
    targets = sorted(
        {(x.scope.graph_hash, x.scope.node) for x in lessons if isinstance(x.scope, GraphScope)}
    )
    items, by_lesson = _evidence_for(record, lessons, evidence)
    supplied = _supplied(name, record, lessons, effectiveness, candidates, deferrals, by_lesson)
    others = _others(name, lessons, living, limits, refs)
    nodes = tuple(node_authority(graphs, h, n, limits) for h, n in targets)
    run = RunEssentials.of(record)

    def assemble(completion_budget: int, file_budget: int, kept: int) -> MaintenanceTask:
        return MaintenanceTask(
            specialist=name,
            run=run,
            evidence=evidence_views(record, items, limits, completion_budget),
            lessons=supplied,
            others=others[:kept],
            nodes=nodes,
        )

    return fit(assemble, rendered_size, max_bytes, limits, len(others))


def build_discovery(
    name: DiscoveryName,
    record: RunRecord,
    *,
    evidence: ScanResult | None = None,
    limits: TaskLimits = DEFAULT_LIMITS,
    checkout: Checkout | None = None,
    living: Iterable[Lesson] = (),
    max_bytes: int | None = None,
    cache: CodeCache | None = None,
) -> DiscoveryTask:
    """A discovery task: the evidence `name` may cite (the run is scanned unless `evidence`
    is given) with the completions of their executions under each, the current files the
    receipts touched with a listing of their folders (repository discovery, read from
    `checkout`), the authored nodes involved, and the active lessons of its scope
    (`living`, the most related first); within `max_bytes` rendered bytes."""
    kind = kind_of(name)
    cache = code_cache(checkout, cache)
    result = scan(record) if evidence is None else evidence
    items = tuple(
        item
        for item in result.evidence
        if item.kind in kind.evidence_kinds and name in item.specialists
    )
    run = RunEssentials.of(record)
    graphs = _run_graphs(record)
    node_names = sorted({node for item in items for node in item.nodes})
    nodes = (
        tuple(node_authority(graphs, run.graph_hash, n, limits) for n in node_names)
        if run.graph_hash
        else ()
    )
    paths: list[str] = []
    if name == "repository_discovery":
        paths = list(dict.fromkeys(receipt_paths(items) + mentioned_files(record, items, cache)))
        paths += manifests(cache, paths)
    scope = [x for x in living if _in_run_scope(x, run)]
    relevant = related(scope, paths, node_names)
    lessons = scope_lessons(
        scope, kind=kind.scope, relevant=relevant, limit=limits.scope_lessons_max
    )
    source = CodeSource(checkout, paths, limits, cache)

    def assemble(completion_budget: int, file_budget: int, kept: int) -> DiscoveryTask:
        files, listing = source.view(file_budget)
        return DiscoveryTask(
            specialist=name,
            run=run,
            evidence=evidence_views(record, items, limits, completion_budget),
            files=files,
            listing=listing,
            nodes=nodes,
            lessons=lessons[:kept],
        )

    return fit(assemble, rendered_size, max_bytes, limits, len(lessons))


def _in_run_scope(lesson: Lesson, run: RunEssentials) -> bool:
    if isinstance(lesson.scope, GraphScope):
        return lesson.scope.graph_hash == run.graph_hash
    return lesson.scope.repository == run.repository


def _run_graphs(record: RunRecord) -> dict[str, Graph]:
    graph = record.graph
    if graph is None or graph.ir is None or graph.hash is None:
        return {}
    return {graph.hash: graph.ir}
