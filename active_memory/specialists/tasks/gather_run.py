"""Gathering what a task shows of the run: its essentials and what each execution was
asked, its failed tool calls, the evidence and which of it concerns a lesson, and the
authored nodes involved.

Everything here reads the run record (no file, no git, no store); `gather_lessons.py`
gathers the lessons, `gather_files.py` the code.
"""

from __future__ import annotations

import bisect
import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from active_memory.evidence import EvidenceItem, ScanResult
from active_memory.lessons import GraphScope, Lesson
from active_memory.runlog.graph import Graph, GraphIndex, StepNode, VerifierNode
from active_memory.runlog.receipts import relative_path
from active_memory.runlog.record import ErrorOutcome, NodeCompleted, NodeStarted, RunRecord
from active_memory.specialists.kinds import SpecialistName, kind_of
from active_memory.specialists.tasks.bound import TaskLimits, cut_utf8
from active_memory.specialists.tasks.model import (
    NodeAuthority,
    RequestView,
    RunEssentials,
)

# --- the run ---------------------------------------------------------------------------------


def run_essentials(record: RunRecord, limits: TaskLimits) -> RunEssentials:
    """The essentials of `record`, with what its executions were asked (`requests`)."""
    graph = record.graph
    shown, omitted = requests(record, limits)
    return RunEssentials(
        run_id=record.run_id,
        title=record.title,
        outcome=record.outcome,
        repository=record.repository.namespace if record.repository else None,
        graph_name=graph.name if graph else None,
        graph_hash=graph.hash if graph else None,
        executed_nodes=executed_nodes(record),
        requests=shown,
        requests_omitted=omitted,
    )


def executed_nodes(record: RunRecord) -> tuple[str, ...]:
    """The nodes with a started or settled visit, sorted."""
    visits = record.visits()
    return tuple(sorted({v.node for v in visits if v.started is not None or v.outcome is not None}))


def input_text(value: object) -> str:
    """An execution's input as text: a string as it is, a prompt object's `prompt` or
    `text`, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("prompt", "text"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def requests(record: RunRecord, limits: TaskLimits) -> tuple[tuple[RequestView, ...], int]:
    """What each execution was asked (its `node_started` input, when it has one), each
    cut to `request_bytes`; within `requests_total_bytes` the first one, then the latest
    that fit (a session's first prompt says what it is about, the latest what it came to).
    Returns the views in run order and how many were left out."""
    found: list[RequestView] = []
    for stored in record.events:
        event = stored.event
        if not isinstance(event, NodeStarted) or event.input is None:
            continue
        text = input_text(event.input).strip()
        if not text:
            continue
        kept, cut = cut_utf8(text, limits.request_bytes)
        ref = event.reference
        found.append(RequestView(execution=ref.execution, node=ref.node, text=kept, truncated=cut))
    if not found:
        return (), 0
    left = limits.requests_total_bytes
    chosen: set[int] = set()
    for index in (0, *range(len(found) - 1, 0, -1)):
        cost = len(found[index].text.encode("utf-8"))
        if cost > left:
            if index == 0:
                continue
            break
        chosen.add(index)
        left -= cost
    shown = tuple(view for index, view in enumerate(found) if index in chosen)
    return shown, len(found) - len(shown)


# --- tool failures ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FailedCall:
    """What one failed tool call of the run touched (SPEC §3 `tool_failures`): its own
    paths, its command line and working folder, and the same of the call that resolved
    it, when one did (`resolved_by`)."""

    paths: tuple[str, ...] = ()
    command: str = ""
    cwd: str = ""
    resolved_paths: tuple[str, ...] = ()
    resolved_command: str = ""
    at: datetime | None = None
    family: str = ""


def _field(entry: object, name: str) -> Any:
    # A record read before its model knew `tool_failures` keeps the entries as JSON
    # objects (the record's extra fields); a model that knows them gives attributes.
    if isinstance(entry, Mapping):
        return entry.get(name)
    return getattr(entry, name, None)


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable):
        return tuple(x for x in value if isinstance(x, str) and x)
    return ()


def failed_calls(record: RunRecord) -> list[FailedCall]:
    """The run's failed tool calls, in record order, from its `tool_failures` when the
    record carries them (an importer that sees tool results fills them; a record without
    them has none: receipts hold no results, so a failing call cannot be told apart)."""
    entries = getattr(record, "tool_failures", None)
    if not isinstance(entries, Iterable) or isinstance(entries, str | bytes | Mapping):
        return []
    found: list[FailedCall] = []
    for entry in entries:
        resolved = _field(entry, "resolved_by")
        command = _field(entry, "command")
        cwd = _field(entry, "cwd")
        again = _field(resolved, "command") if resolved is not None else None
        family = _field(entry, "family")
        found.append(
            FailedCall(
                paths=_strings(_field(entry, "paths")),
                command=command if isinstance(command, str) else "",
                cwd=cwd if isinstance(cwd, str) else "",
                resolved_paths=_strings(_field(resolved, "paths")) if resolved is not None else (),
                resolved_command=again if isinstance(again, str) else "",
                at=_time(_field(entry, "at")),
                family=family if isinstance(family, str) else "",
            )
        )
    return found


PATH_TOKEN = re.compile(
    r"(?<![\w/.:-])((?:[\w.-]+/)+[\w.-]+|\.?[\w-]+\.[A-Za-z][A-Za-z0-9]{0,7}|"
    r"Makefile|GNUmakefile|Dockerfile|Justfile|justfile|Rakefile|Gemfile|Procfile)(?![\w/-])"
)
"""What looks like a path in a text: a folder path, a file name with an extension, or
a well-known extensionless file."""


def command_paths(command: str, cwd: str, checkout: str | None) -> list[str]:
    """The root-relative paths a command line may name (unverified): its arguments that
    look like paths (a slash, an extension or a well-known file name, `path:12` read as
    `path`), against its working folder first, then against the root."""
    try:
        words = shlex.split(command)
    except ValueError:  # an unbalanced quote: words as written
        words = command.split()
    found: list[str] = []
    for word in words:
        word = word.rpartition("=")[2] if word.startswith("-") else word
        word = re.sub(r"(?::\d+)+$", "", word.strip("\"'`,;()"))
        if not word or "://" in word or not PATH_TOKEN.fullmatch(word.lstrip("/") or "-"):
            continue
        if word.startswith("/"):
            relative = relative_path(word, checkout)
            found.extend([relative] if relative else [])
            continue
        for base in dict.fromkeys([cwd.strip("/"), ""]):
            joined = relative_path(f"{base}/{word}" if base else word, None)
            if joined:
                found.append(joined)
    return list(dict.fromkeys(found))


def _time(value: Any) -> datetime | None:
    """A recorded time as an aware datetime (naive read as UTC), or None."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def failure_times(record: RunRecord) -> list[tuple[datetime, str]]:
    """When the run failed, and what: each failed tool call with a time (its family, or
    its command's first word), and each execution that settled with a `timeout` or a
    `crash` (`timeout <node>`), in time order."""
    found: list[tuple[datetime, str]] = []
    for call in failed_calls(record):
        if call.at is not None:
            found.append((call.at, call.family or (call.command.split() or ["a tool call"])[0]))
    for stored in record.events:
        event = stored.event
        if isinstance(event, NodeCompleted) and stored.at is not None:
            outcome = event.completion.outcome
            if isinstance(outcome, ErrorOutcome) and outcome.code in ("timeout", "crash"):
                found.append((stored.at, f"{outcome.code} {event.completion.reference.node}"))
    return sorted(found, key=lambda pair: pair[0])


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


def execution_paths(record: RunRecord) -> dict[str, set[str]]:
    """The paths each execution touched, by execution: the receipts of its node recorded
    while it ran (from its start to its settling; receipts name nodes, not executions)
    and the paths its failed tool calls named."""
    settled: dict[str, datetime] = {}
    for stored in record.events:
        event = stored.event
        if isinstance(event, NodeCompleted) and stored.at is not None:
            settled[event.completion.reference.execution] = stored.at
    by_node: dict[str, list[tuple[datetime, tuple[str, ...]]]] = {}
    for receipt in record.receipts:
        if receipt.node is not None and receipt.at is not None and receipt.paths:
            by_node.setdefault(receipt.node, []).append((receipt.at, receipt.paths))
    for receipts in by_node.values():
        receipts.sort(key=lambda pair: pair[0])
    found: dict[str, set[str]] = {}
    for visit in record.visits():
        start, end = visit.started_at, settled.get(visit.execution)
        of_node = by_node.get(visit.node)
        if start is None or end is None or not of_node:
            continue
        low = bisect.bisect_left(of_node, start, key=lambda pair: pair[0])
        high = bisect.bisect_right(of_node, end, key=lambda pair: pair[0])
        found[visit.execution] = {p.strip("/") for _, paths in of_node[low:high] for p in paths}
    for failure in record.tool_failures:
        if failure.execution is not None:
            found.setdefault(failure.execution, set()).update(p.strip("/") for p in failure.paths)
    return found


class RunTexts:
    """What the final texts of each evidence item's executions mention (names and words),
    and what paths each item touched, computed once per task: every lesson of a batch is
    matched against them."""

    def __init__(self, record: RunRecord, items: Sequence[EvidenceItem]) -> None:
        self.names: dict[str, set[str]] = {}
        self.words: dict[str, set[str]] = {}
        # The paths each item touched (every lesson of the batch asks): its receipts, and
        # what its executions touched while they ran (a timed-out execution's files).
        by_execution = execution_paths(record) if items else {}
        self.touched: dict[str, set[str]] = {
            item.id: {p.strip("/") for receipt in item.receipts for p in receipt.paths}.union(
                *(by_execution.get(execution, ()) for execution, _ in executions_of(item))
            )
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
    hold every term of one of its keyword groups, or whose failing family is one of its
    `commands`. `texts`: `RunTexts(record, items)`."""
    if isinstance(lesson.scope, GraphScope):
        node = lesson.scope.node
        return [item.id for item in items if node in item.nodes]
    texts = texts or RunTexts(record, items)
    files = list(lesson.associations.files)
    folders = [f.strip("/") for f in lesson.associations.folders]
    names = {n.strip("/") for n in (*files, *folders, *lesson.associations.identifiers)}
    groups = [[t.casefold() for t in group] for group in lesson.associations.keywords]
    commands = set(lesson.associations.commands)
    found: list[str] = []
    for item in items:
        if item.family is not None and item.family in commands:
            found.append(item.id)
            continue
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
