"""The task builders: each gathers, then chooses within the bound, then renders.

1. **gather** (`gather_run.py`, `gather_lessons.py`, `gather_files.py`): what the run
   shows (essentials, requests, evidence, nodes), the lessons with what the store knows
   of them, the files in groups of relevance with their first bytes and the listing
   around them;
2. **choose** (`choose.py`): completion and file budgets cut until the rendered task is
   within `max_bytes` (`fit`), the files shown within theirs (each group in turn, small
   files before large ones);
3. **render** (`render.py`): `rendered_size` measures each candidate as the prompt shows
   it; the task returned is the one measured last.

Builders: `build_repository_maintenance`, `build_graph_maintenance`, `build_discovery`;
`with_rejected` adds the proposals a person rejected to a discovery task.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from active_memory.checkout import Checkout
from active_memory.evidence import ScanResult, scan
from active_memory.lessons import GraphScope, Lesson
from active_memory.runlog.graph import Graph
from active_memory.runlog.record import RunRecord
from active_memory.specialists.kinds import kind_of
from active_memory.specialists.tasks import gather_failures as failures_of
from active_memory.specialists.tasks import gather_files as code
from active_memory.specialists.tasks import gather_lessons as lessons_of
from active_memory.specialists.tasks import gather_run as run_of
from active_memory.specialists.tasks.bound import DEFAULT_LIMITS, TaskLimits
from active_memory.specialists.tasks.choose import (
    Budgets,
    episodes_floor,
    evidence_views,
    failure_views,
    failures_floor,
    file_costs,
    file_views,
    fit,
    scope_lessons_within,
)
from active_memory.specialists.tasks.gather_failure_context import failure_context_files
from active_memory.specialists.tasks.model import (
    DeferralView,
    DiscoveryName,
    DiscoveryTask,
    FileAuthority,
    LessonRef,
    MaintenanceName,
    MaintenanceTask,
    SuppliedLesson,
)
from active_memory.specialists.tasks.render import rendered_size
from active_memory.store.candidates import Candidate
from active_memory.store.effectiveness import Effectiveness
from active_memory.store.review import Proposal


class _FileViews:
    """The gathered files' views per file budget (a fit asks for a few budgets, often
    the same one again)."""

    def __init__(self, gathered: code.GatheredFiles, limits: TaskLimits) -> None:
        self.gathered = gathered
        self._limits = limits
        self._costs = file_costs(gathered.files)
        self._views: dict[int, tuple[FileAuthority, ...]] = {}

    def __call__(self, budget: int) -> tuple[FileAuthority, ...]:
        if budget not in self._views:
            files = self.gathered.files
            self._views[budget] = file_views(files, self._limits, budget, self._costs)
        return self._views[budget]


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
    cache: code.CodeCache | None = None,
    refs: dict[str, LessonRef] | None = None,
) -> MaintenanceTask:
    """Repository maintenance's task for one batch: the run's `evidence` items that
    concern the lessons (with their completions), the lessons (with their `effectiveness`
    counters, pending adaptation `candidates` and `deferrals` by ID), and the current
    content of every file they associate or cite, then of the files of the run's failed
    tool calls that touched them (and of the calls that resolved those), then of the
    root's build and tool configuration, then of the files the evidence concerning them
    touched or names, with a listing of their folders (read from `checkout`; None marks
    all unread); within `max_bytes` rendered bytes."""
    name: MaintenanceName = "repository_maintenance"
    # Gather.
    cache = code.code_cache(checkout, cache)  # git's answers, shared by a postmortem's batches
    run = run_of.run_essentials(record, limits)
    items, by_lesson = run_of.evidence_for(record, lessons, evidence)
    supplied = lessons_of.supplied_lessons(
        name, record, lessons, effectiveness, candidates, deferrals, by_lesson
    )
    # The run's failures that concern the lessons (files, folders, command families),
    # and what of them and of the evidence came after a lesson was delivered.
    scanned = list(evidence.evidence) if evidence is not None else items
    concerning = failures_of.concerning_failures(record, lessons, scanned, by_lesson)
    others = lessons_of.other_lessons(name, lessons, living, limits, refs)
    ordered = sorted(lessons, key=lambda lesson: lesson.id)
    # The lessons' own files, then the files of the run's failures that touched them and
    # what resolved those, then the root's build files, then the other files the
    # evidence concerning them touched or named.
    own = [p for x in ordered for p in lessons_of.lesson_paths(x)]
    failed = code.failure_files(record, cache, touching=lessons_of.touches_any(lessons))
    touched = code.receipt_paths(items) + code.mentioned_files(record, items, cache)
    build_files = code.manifests(cache, [*own, *failed])
    groups = (own, failed, build_files, touched)
    views = _FileViews(code.read_files(checkout, groups, limits, cache), limits)
    folders = code.folders_of(checkout, [f for x in lessons for f in x.associations.folders])

    # Choose, measuring each candidate as rendered.
    def assemble(budgets: Budgets) -> MaintenanceTask:
        shown, omitted = failure_views(concerning.failures, budgets.failures)
        return MaintenanceTask(
            specialist=name,
            run=run,
            evidence=evidence_views(record, items, limits, budgets.completions)[0],
            failures=shown,
            failures_omitted=omitted,
            lessons=with_failures(supplied, concerning, {f.id for f in shown}),
            others=others[: budgets.listed],
            files=views(budgets.files),
            listing=views.gathered.listing,
            folders=folders,
        )

    return fit(assemble, rendered_size, max_bytes, limits, len(others),
               failures_floor(concerning.failures))  # fmt: skip


def with_failures(
    supplied: tuple[SuppliedLesson, ...],
    concerning: failures_of.ConcerningFailures,
    shown: set[str],
) -> tuple[SuppliedLesson, ...]:
    """The supplied lessons with the IDs of the shown failures that concern each, and of
    those and their evidence that came after this run first delivered it."""
    if not concerning.by_lesson and not concerning.after_delivery:
        return supplied
    out = []
    for lesson in supplied:
        ids = tuple(i for i in concerning.by_lesson.get(lesson.id, ()) if i in shown)
        after = tuple(
            i
            for i in concerning.after_delivery.get(lesson.id, ())
            if i in shown or i in lesson.run_evidence
        )
        if ids or after:
            lesson = lesson.model_copy(update={"run_failures": ids, "failed_after_delivery": after})
        out.append(lesson)
    return tuple(out)


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
    # Gather.
    graphs = run_of.run_graphs(record) if graphs is None else graphs
    targets = sorted(
        {(x.scope.graph_hash, x.scope.node) for x in lessons if isinstance(x.scope, GraphScope)}
    )
    run = run_of.run_essentials(record, limits)
    items, by_lesson = run_of.evidence_for(record, lessons, evidence)
    supplied = lessons_of.supplied_lessons(
        name, record, lessons, effectiveness, candidates, deferrals, by_lesson
    )
    others = lessons_of.other_lessons(name, lessons, living, limits, refs)
    nodes = tuple(run_of.node_authority(graphs, h, n, limits) for h, n in targets)
    # The timeouts and crashes of a lesson's node that came after this run delivered it.
    after = failures_of.concerning_failures(record, (), items, by_lesson)
    lessons_of_batch = with_failures(supplied, after, set())

    # Choose, measuring each candidate as rendered.
    def assemble(budgets: Budgets) -> MaintenanceTask:
        return MaintenanceTask(
            specialist=name,
            run=run,
            evidence=evidence_views(record, items, limits, budgets.completions)[0],
            lessons=lessons_of_batch,
            others=others[: budgets.listed],
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
    cache: code.CodeCache | None = None,
) -> DiscoveryTask:
    """A discovery task: the evidence `name` may cite (the run is scanned unless `evidence`
    is given) with the completions of their executions under each; for repository
    discovery the current files of the run's failed tool calls and their resolutions,
    the root's build and tool configuration and the files the evidence touched or names,
    with a listing of their folders (read from `checkout`); the authored nodes involved;
    and the active lessons of its scope (`living`: the ones the run delivered first, with
    when, then the most related); within `max_bytes` rendered bytes."""
    # Gather.
    kind = kind_of(name)
    cache = code.code_cache(checkout, cache)
    run = run_of.run_essentials(record, limits)
    items = run_of.citable_evidence(name, scan(record) if evidence is None else evidence)
    graphs = run_of.run_graphs(record)
    node_names = sorted({node for item in items for node in item.nodes})
    nodes = (
        tuple(run_of.node_authority(graphs, run.graph_hash, n, limits) for n in node_names)
        if run.graph_hash
        else ()
    )
    groups: tuple[list[str], ...] = ()
    episodes = failures_of.episodes(record, items)
    if name == "repository_discovery":
        # The files of the run's failures and their resolutions (and the files edited
        # before an episode was resolved, and those that explain a failure that names
        # none: gather_failure_context.py), then the root's build files, then what the
        # evidence touched (the most touched first) or named.
        edited = [p for episode in episodes.values() for p in episode.edited]
        context = failure_context_files(record, items, cache)
        failed = list(dict.fromkeys([*code.failure_files(record, cache), *edited, *context]))
        touched = code.receipt_paths(items) + code.mentioned_files(record, items, cache)
        groups = (failed, code.manifests(cache, failed), touched)
    scope = [x for x in living if lessons_of.in_run_scope(x, run)]
    paths = [p for group in groups for p in group]
    relevant = lessons_of.related(scope, paths, node_names)
    known = lessons_of.scope_lessons(
        scope,
        record,
        kind=kind.scope,
        relevant=relevant,
        failures=run_of.failure_times(record),
    )
    # Graph tasks get no code view (graph lessons are about a node's procedure).
    reader = checkout if name == "repository_discovery" else None
    views = _FileViews(code.read_files(reader, groups, limits, cache), limits)

    # Choose, measuring each candidate as rendered.
    lessons, omitted = scope_lessons_within(known, limits)

    def assemble(budgets: Budgets) -> DiscoveryTask:
        shown, left_out = evidence_views(
            record,
            items,
            limits,
            budgets.completions,
            episodes=episodes,
            failure_budget=budgets.failures,
        )
        return DiscoveryTask(
            specialist=name,
            run=run,
            evidence=shown,
            evidence_omitted=left_out,
            files=views(budgets.files),
            listing=views.gathered.listing,
            nodes=nodes,
            lessons=lessons[: budgets.listed],
            lessons_omitted=omitted + len(lessons) - budgets.listed,
        )

    floor = episodes_floor(items, episodes)
    return fit(assemble, rendered_size, max_bytes, limits, len(lessons), floor)


REJECTED_SHOWN = 10
REJECTED_MAX_BYTES = 4096
"""Rejected proposals of its scope a discovery task shows: the latest 10 that fit in
this many bytes."""


def with_rejected(task: DiscoveryTask, rejected: Sequence[Proposal]) -> DiscoveryTask:
    """`task` with the latest proposals a person rejected in its scope (docs/review.md):
    the run's repository for repository discovery, the run's graph for graph discovery."""
    run = task.run
    if task.specialist == "repository_discovery":
        wanted = ("repository", run.repository or "")
    else:
        wanted = ("graph", run.graph_hash or "")

    def keep(key: tuple[str, str, str, str]) -> bool:
        return key[0] == wanted[0] and key[1 if wanted[0] == "repository" else 2] == wanted[1]

    examples = [
        {"title": p.mutation.card.title, "recommendation": p.mutation.card.recommendation,
         "rejected_because": p.decision_reason or ""}
        for p in rejected
        if keep(p.scope_key)
    ][-REJECTED_SHOWN:]  # fmt: skip
    # The task was fitted to its prompt bound without them: they add at most this much.
    while examples and len(json.dumps(examples).encode()) > REJECTED_MAX_BYTES:
        examples.pop(0)
    return task.model_copy(update={"rejected": tuple(examples)}) if examples else task
