"""Gathering what a task shows of the run's failed tool calls (SPEC §3 `tool_failures`).

- `episodes`: for repository discovery, each repeated-failure item's calls (SPEC §4
  item 4), per group of the item, collapsed (`FailedCallView`), and the executions they
  ran in (whose final texts the task shows under the item);
- `concerning_failures`: for repository maintenance, the run's failures, grouped by
  family and normalised error, that concern a lesson of the batch: a call touched one of
  its files or folders (a recorded path, a path its command line names, or its working
  folder), or its family is one of the lesson's command families (`lesson_families`);
  and which of them, and of the evidence concerning a lesson, came after this run first
  delivered the lesson.

Everything here reads the run record and the lessons it is given (no file, no git, no
store); choosing what fits the bound is `choose.py`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from active_memory.command_family import FILE_TOOLS, READ_ONLY_TOOLS
from active_memory.evidence import EvidenceItem
from active_memory.evidence.model import FailureResolution, evidence_id
from active_memory.evidence.repeated_failures import branches_of, failures_behind
from active_memory.evidence.signatures import signature
from active_memory.lessons import GraphScope, Lesson
from active_memory.runlog.record import NodeCompleted, RunRecord, ToolFailure
from active_memory.specialists.tasks.gather_lessons import lesson_paths
from active_memory.specialists.tasks.gather_run import command_paths, executions_of
from active_memory.specialists.tasks.model_failures import FailedCallView

# --- the calls ---------------------------------------------------------------------------


def when(at: datetime | None) -> str:
    """A recorded time as the task shows it (ISO 8601, `Z` for UTC; `""` unknown)."""
    return at.isoformat().replace("+00:00", "Z") if at is not None else ""


def collapsed(failures: Iterable[ToolFailure]) -> tuple[FailedCallView, ...]:
    """`failures` as calls, the same call (command, working folder, exit code, paths and
    execution) once, with its count and last time, in order of first failure."""
    found: dict[tuple[object, ...], list[ToolFailure]] = {}
    for failure in failures:
        key = (failure.command, failure.cwd, failure.exit_code, failure.paths, failure.execution)
        found.setdefault(key, []).append(failure)
    calls = []
    for same in found.values():
        first = same[0]
        calls.append(
            FailedCallView(
                at=when(first.at),
                command=first.command,
                cwd=first.cwd,
                exit_code=first.exit_code,
                paths=first.paths,
                count=len(same),
                last_at=when(same[-1].at) if len(same) > 1 else None,
                execution=first.execution,
            )
        )
    return tuple(calls)


def _executions(failures: Iterable[ToolFailure]) -> tuple[tuple[str, str], ...]:
    """(execution, node) of the executions `failures` ran in, in order, distinct."""
    found = {(f.execution, f.node or ""): None for f in failures if f.execution is not None}
    return tuple((execution, node) for execution, node in found)


# --- discovery: the episodes of the evidence ---------------------------------------------


EDITED_SHOWN = 12
"""Files edited between an episode's first failure and its resolution, shown per item."""

EDIT_TOOLS = FILE_TOOLS - READ_ONLY_TOOLS
"""File tools that change a file (an edit between a failure and its resolution is
likely the fix)."""


@dataclass(frozen=True, slots=True)
class Episode:
    """A repeated-failure item's calls as gathered: `calls[i]` are the collapsed calls of
    `item.failures[i]`; `executions` the (execution, node) pairs they ran in, in order;
    `edited` the files edited between the first failure and the resolution (receipts of
    file tools that write), in order of first edit."""

    calls: tuple[tuple[FailedCallView, ...], ...]
    executions: tuple[tuple[str, str], ...]
    edited: tuple[str, ...] = ()
    resolutions: tuple[FailureResolution | None, ...] = ()
    """Per group, what resolved its last failure (a group's error may have been resolved
    by another call than the item's last failure)."""


def episodes(record: RunRecord, items: Sequence[EvidenceItem]) -> dict[str, Episode]:
    """The episode of each repeated-failure item of `items` (its ID → `Episode`); its
    executions are those its calls ran in, then the one its resolution ran in."""
    found: dict[str, Episode] = {}
    windows: list[tuple[datetime, datetime, str, str]] | None = None
    for item in items:
        if item.kind != "tool_failures":
            continue
        behind = failures_behind(record, item)
        times = [f.at for group in behind for f in group if f.at is not None]
        resolved = _parsed(item.resolution.at) if item.resolution is not None else None
        executions = _executions(f for group in behind for f in group)
        if resolved is not None:
            windows = _windows(record) if windows is None else windows
            running = [(e, n) for start, end, e, n in windows if start <= resolved <= end]
            executions = tuple(dict.fromkeys([*executions, *running[-1:]]))
        found[item.id] = Episode(
            calls=tuple(collapsed(group) for group in behind),
            executions=executions,
            edited=_edited_between(record, min(times), resolved) if times and resolved else (),
            resolutions=tuple(_resolution(group[-1]) if group else None for group in behind),
        )
    return found


def _resolution(failure: ToolFailure) -> FailureResolution | None:
    last = failure.resolved_by
    if last is None:
        return None
    return FailureResolution(at=when(last.at), command=last.command, family=last.family)


def _windows(record: RunRecord) -> list[tuple[datetime, datetime, str, str]]:
    """(start, end, execution, node) of each execution with both times, in start order."""
    settled = _settled_times(record)
    found = []
    for visit in record.visits():
        end = settled.get(visit.execution)
        if visit.started_at is not None and end is not None:
            found.append((visit.started_at, end, visit.execution, visit.node))
    return sorted(found)


def _parsed(at: str) -> datetime | None:
    try:
        return datetime.fromisoformat(at) if at else None
    except ValueError:
        return None


def _edited_between(record: RunRecord, start: datetime, end: datetime) -> tuple[str, ...]:
    """The files the run's file tools wrote from `start` up to `end`."""
    found: dict[str, None] = {}
    for receipt in record.receipts:
        at = receipt.at
        if receipt.tool in EDIT_TOOLS and at is not None and start <= at <= end:
            found.update(dict.fromkeys(receipt.paths))
    return tuple(found)[:EDITED_SHOWN]


# --- maintenance: the failures that concern a lesson ---------------------------------------


def lesson_families(lesson: Lesson, run_id: str, families: Iterable[str]) -> set[str]:
    """Which of a run's failing `families` a repository lesson is about: the command
    families it associates (`associations.commands`, SPEC §5, when the lesson has them),
    and the families of the repeated-failure items (`ev-tf-`) it was written against:
    an item's ID is derived from its run and family (`evidence_id`), so the lesson's
    run IDs and this run's families tell which. `run_id` is this run's."""
    found = {c for c in getattr(lesson.associations, "commands", None) or () if isinstance(c, str)}
    cited = {i for i in lesson.evidence.evidence_ids if i.startswith("ev-tf-")}
    if cited:
        runs = list(dict.fromkeys([*lesson.evidence.run_ids, run_id]))
        for family in families:
            if any(evidence_id(run, "tool_failures", family=family) in cited for run in runs):
                found.add(family)
    return found & set(families)


@dataclass(frozen=True, slots=True)
class RunFailure:
    """Failures of one family with one normalised error that concern lessons of a batch:
    `id` (`f-1`, ...: in order of first failure), the first error as recorded, the calls
    collapsed, what resolved the last one, the qualifying item it belongs to (if any),
    the times of its failures, and the IDs of the lessons it concerns."""

    id: str
    family: str
    error: str
    count: int
    exit_codes: tuple[int, ...]
    calls: tuple[FailedCallView, ...]
    resolution: FailureResolution | None
    evidence: str | None
    times: tuple[datetime, ...]
    lessons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ConcerningFailures:
    """What maintenance is shown of the run's failures: the failures concerning the batch
    (`failures`), per lesson the IDs of those concerning it (`by_lesson`), and per lesson
    the IDs of failures and evidence items that came after this run first delivered it
    (`after_delivery`)."""

    failures: tuple[RunFailure, ...] = ()
    by_lesson: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    after_delivery: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _touches(lesson: Lesson, paths: Sequence[str]) -> bool:
    files = {p.strip("/") for p in lesson_paths(lesson)}
    folders = [f.strip("/") for f in lesson.associations.folders]
    for path in paths:
        path = path.strip("/")
        if path in files or any(f and (path == f or path.startswith(f + "/")) for f in folders):
            return True
    return False


def concerning_failures(
    record: RunRecord,
    lessons: Sequence[Lesson],
    items: Sequence[EvidenceItem] = (),
    run_evidence: Mapping[str, Sequence[str]] | None = None,
) -> ConcerningFailures:
    """The run's failures that concern a repository lesson of `lessons`, grouped by family
    and normalised error; and, for each lesson this run delivered, which of them and of
    its `run_evidence` (item IDs of `items`) came at or after its first delivery: a
    failure with a call then, an item with an execution settled then."""
    repository = [x for x in lessons if not isinstance(x.scope, GraphScope)]
    failures = record.tool_failures
    first = _first_deliveries(record)
    after: dict[str, list[str]] = {}
    if run_evidence:
        settled = _settled_times(record)
        for item in items:
            times = [settled[e] for e, _ in executions_of(item) if e in settled]
            for lesson_id, ids in run_evidence.items():
                start = first.get(lesson_id)
                if item.id in ids and start is not None and any(t >= start for t in times):
                    after.setdefault(lesson_id, []).append(item.id)
    if not failures or not repository:
        return ConcerningFailures(after_delivery={k: tuple(v) for k, v in after.items()})
    checkout = record.repository.checkout if record.repository else None
    families = {f.family for f in failures}
    by_family = {x.id: lesson_families(x, record.run_id, families) for x in repository}
    branches = branches_of(record)
    groups: dict[tuple[str, str], list[tuple[ToolFailure, set[str]]]] = {}
    for failure in failures:
        touched = [
            *failure.paths,
            *command_paths(failure.command, failure.cwd or "", checkout),
            *([failure.cwd] if failure.cwd else []),
        ]
        concerned = {
            x.id for x in repository if failure.family in by_family[x.id] or _touches(x, touched)
        }
        if concerned:
            key = (failure.family, signature(failure, branches).error)
            groups.setdefault(key, []).append((failure, concerned))
    qualified = {item.family: item.id for item in items if item.kind == "tool_failures"}
    found: list[RunFailure] = []
    by_lesson: dict[str, list[str]] = {}
    for number, ((family, _), members) in enumerate(groups.items(), start=1):
        failure_id = f"f-{number}"
        group = [f for f, _ in members]
        concerned_ids = sorted(set().union(*(ids for _, ids in members)))
        found.append(
            RunFailure(
                id=failure_id,
                family=family,
                error=group[0].error,
                count=len(group),
                exit_codes=tuple(sorted({f.exit_code for f in group if f.exit_code is not None})),
                calls=collapsed(group),
                resolution=_resolution(group[-1]),
                evidence=qualified.get(family),
                times=tuple(f.at for f in group if f.at is not None),
                lessons=tuple(concerned_ids),
            )
        )
        for lesson_id in concerned_ids:
            by_lesson.setdefault(lesson_id, []).append(failure_id)
            start = first.get(lesson_id)
            if start is not None and any(t >= start for t in found[-1].times):
                after.setdefault(lesson_id, []).append(failure_id)
    return ConcerningFailures(
        failures=tuple(found),
        by_lesson={k: tuple(v) for k, v in by_lesson.items()},
        after_delivery={k: tuple(v) for k, v in after.items()},
    )


def _first_deliveries(record: RunRecord) -> dict[str, datetime]:
    """When this run first delivered each lesson (deliveries without a time left out)."""
    first: dict[str, datetime] = {}
    for delivery in record.deliveries or ():
        if delivery.at is not None:
            known = first.get(delivery.lesson)
            first[delivery.lesson] = delivery.at if known is None else min(known, delivery.at)
    return first


def _settled_times(record: RunRecord) -> dict[str, datetime]:
    """When each execution settled (its `node_completed` event's time), by execution."""
    settled: dict[str, datetime] = {}
    for stored in record.events:
        event = stored.event
        if isinstance(event, NodeCompleted) and stored.at is not None:
            settled[event.completion.reference.execution] = stored.at
    return settled
