"""The run-time half of rule 2 (SPEC §4): distinct rejected review rounds.

Rounds are told apart by the verifiers alone: the k-th instance of each of the round's
verifiers in one map scope belongs to round k (a retry, `attempt > 1`, joins the instance
before it). Everything is ordered by event `sequence`, never by file order or wall-clock
time, so equal-time facts cannot change the result.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from active_memory.evidence.layout import (
    LoopLayout,
    PathStep,
    classify_loop,
    enclosed_loops,
    maps_and_loops,
)
from active_memory.evidence.model import (
    GRAPH_DISCOVERY,
    REPOSITORY_DISCOVERY,
    EvidenceItem,
    ExecutionRefOut,
    Round,
    Skip,
    evidence_id,
)
from active_memory.runlog.graph import Graph, GraphIndex, guard_selectors, nodes_in_order
from active_memory.runlog.record import (
    ErrorOutcome,
    RunRecord,
    VerifiedOutcome,
    VerifierOutcome,
    Visit,
)

Scope = tuple[int, ...]


@dataclass(slots=True)
class _Instance:
    """One structural visit of a verifier: its first attempt and any retries."""

    attempts: list[Visit]

    @property
    def started(self) -> int | None:
        return self.attempts[0].started

    @property
    def settled(self) -> int | None:
        return self.attempts[-1].settled

    @property
    def outcome(self) -> VerifiedOutcome | VerifierOutcome | ErrorOutcome | None:
        return self.attempts[-1].outcome


@dataclass(slots=True)
class _Round:
    number: int
    instances: dict[str, _Instance | None]
    start: int | None = None
    end: int | None = None
    problem: str | None = None
    rejected: bool = False
    prefix: list[Visit] = field(default_factory=list)


def rejected_rounds(
    record: RunRecord, visits: list[Visit]
) -> tuple[list[EvidenceItem], list[Skip]]:
    """Rule 2 over one run: evidence items and what was skipped, unsorted."""
    graph = record.graph.ir if record.graph else None
    if graph is None:
        return [], _no_graph_skip(visits)
    return _Scanner(record, graph, visits).run()


def _no_graph_skip(visits: list[Visit]) -> list[Skip]:
    if any(_verdict(v.outcome) == "rejected" for v in visits):
        reason = "the run record carries no graph IR, so review loops cannot be identified"
        return [Skip(loop="(no graph)", reason=reason)]
    return []


def _related(one: Scope, other: Scope) -> bool:
    """True when one map scope contains the other (or they are equal)."""
    shorter = min(len(one), len(other))
    return one[:shorter] == other[:shorter]


def _verdict(outcome: VerifiedOutcome | VerifierOutcome | ErrorOutcome | None) -> str | None:
    return outcome.signals.get("verdict") if isinstance(outcome, VerifierOutcome) else None


def _label(outcome: VerifiedOutcome | VerifierOutcome | ErrorOutcome | None) -> str:
    if isinstance(outcome, ErrorOutcome):
        return outcome.code
    if isinstance(outcome, VerifierOutcome):
        return outcome.signals.get("verdict", "verifier")
    return "verified" if outcome is not None else "none"


class _Scanner:
    def __init__(self, record: RunRecord, graph: Graph, visits: list[Visit]) -> None:
        self.record = record
        self.index = GraphIndex(graph)
        self.visits = visits
        self.by_node_scope: dict[tuple[str, Scope], list[Visit]] = defaultdict(list)
        for visit in visits:
            self.by_node_scope[(visit.node, visit.map_indices)].append(visit)
        self.ran_nodes = {visit.node for visit in visits}
        self.items: list[EvidenceItem] = []
        self.skips: list[Skip] = []

    def run(self) -> tuple[list[EvidenceItem], list[Skip]]:
        loops, maps = maps_and_loops(self.index)
        for map_node in maps:
            inner = enclosed_loops(map_node)
            if inner and self._ran(map_node.name):
                names = ", ".join(loop.name for loop in inner)
                self.skips.append(
                    Skip(
                        map=map_node.name,
                        reason=f"encloses loop {names}: rounds are counted per map item,"
                        " never across items",
                    )
                )
        for loop in loops:
            if not self._ran(loop.name):
                continue
            inner = enclosed_loops(loop)
            if inner:
                names = ", ".join(i.name for i in inner)
                self.skips.append(
                    Skip(
                        loop=loop.name,
                        reason=f"encloses loop {names} (loops are checked innermost-first)",
                    )
                )
                continue
            self._check(classify_loop(self.index, loop))
        return self.items, self.skips

    def _ran(self, name: str) -> bool:
        node = self.index.get(name)
        return node is not None and any(n.name in self.ran_nodes for n in nodes_in_order(node))

    def _skip(self, layout: LoopLayout, reason: str, **where: object) -> None:
        self.skips.append(
            Skip.model_validate({"loop": layout.loop.name, "reason": reason, **where})
        )

    def _check(self, layout: LoopLayout) -> None:
        if self.record.seeded:
            self._skip(layout, "the run was replayed from checkpoint seeds (seeded: true)")
            return
        if layout.problem is not None:
            self._skip(layout, layout.problem)
            return
        if layout.until_problem is not None:
            self._skip(layout, layout.until_problem)
            return
        scopes = sorted(
            {v.map_indices for v in self.visits if v.node in layout.verifiers},
        )
        for scope in scopes:
            self._check_scope(layout, scope)

    def _occurrence_problem(self, layout: LoopLayout, scope: Scope) -> str | None:
        """Why this loop's visits in `scope` may belong to more than one occurrence."""
        inner = [
            v.started
            for name in layout.body_nodes
            for v in self.by_node_scope.get((name, scope), [])
            if v.started is not None
        ]
        if not inner:
            return None
        low, high = min(inner), max(inner)
        for outer in layout.enclosing_loops:
            # zeroshot requires a loop's exit guard to read a verifier that runs on every
            # iteration: the starts of those verifiers separate the outer iterations.
            markers = {
                s.name
                for s in (guard_selectors(outer.until) if outer.until is not None else ())
                if s.source == "signal" and s.name not in layout.body_nodes
            }
            if not markers:
                return (
                    f"enclosing loop {outer.name!r} has no until verifier outside this loop,"
                    " so its iterations cannot be told apart"
                )
            boundaries = [
                v.started
                for v in self.visits
                if v.node in markers
                and v.attempt == 1
                and v.started is not None
                and _related(v.map_indices, scope)
            ]
            if any(low < boundary < high for boundary in boundaries):
                return (
                    f"enclosing loop {outer.name!r} iterated while this loop ran, so its"
                    " occurrences cannot be told apart"
                )
        return None

    def _check_scope(self, layout: LoopLayout, scope: Scope) -> None:
        where = {"map_item": scope}
        unplaced = sorted(
            v.execution
            for name in layout.body_nodes
            for v in self.by_node_scope.get((name, scope), [])
            if v.started is None
        )
        if unplaced:
            self._skip(
                layout,
                f"execution {unplaced[0]} has no node_started event, so rounds cannot be ordered",
                **where,
            )
            return
        occurrence_problem = self._occurrence_problem(layout, scope)
        if occurrence_problem is not None:
            self._skip(layout, occurrence_problem, **where)
            return
        rounds = self._rounds(layout, scope)
        counted: list[_Round] = []
        for number, current in enumerate(rounds, start=1):
            if current.problem is None and current.rejected:
                previous = rounds[number - 2] if number > 1 else None
                self._attribute(layout, scope, current, previous)
            if current.problem is not None:
                self._skip(layout, current.problem, round=number, **where)
            elif current.rejected:
                counted.append(current)
        if len(counted) >= 2:
            self.items.append(self._item(layout, scope, counted))

    def _rounds(self, layout: LoopLayout, scope: Scope) -> list[_Round]:
        instances: dict[str, list[_Instance]] = {}
        for name in layout.verifiers:
            found: list[_Instance] = []
            ordered = sorted(
                self.by_node_scope.get((name, scope), []),
                key=lambda v: (v.started or 0, v.execution),
            )
            for visit in ordered:
                if visit.attempt > 1 and found:
                    found[-1].attempts.append(visit)
                else:
                    found.append(_Instance([visit]))
            instances[name] = found
        total = max(len(found) for found in instances.values())
        rounds: list[_Round] = []
        for k in range(total):
            current = _Round(
                number=k + 1,
                instances={
                    name: (found[k] if k < len(found) else None)
                    for name, found in instances.items()
                },
            )
            self._settle(current, rounds[-1] if rounds else None)
            rounds.append(current)
        return rounds

    def _settle(self, current: _Round, previous: _Round | None) -> None:
        present = [i for i in current.instances.values() if i is not None]
        starts = [i.started for i in present if i.started is not None]
        ends = [i.settled for i in present if i.settled is not None]
        current.start = min(starts) if starts else None
        current.end = max(ends) if ends else current.start
        missing = sorted(
            name for name, inst in current.instances.items() if inst is None or inst.outcome is None
        )
        if previous is not None and (
            previous.end is None or current.start is None or current.start <= previous.end
        ):
            current.problem = (
                f"ambiguous round: round {current.number}'s verification began before"
                f" round {previous.number}'s had finished"
            )
        elif missing:
            current.problem = (
                f"incomplete round: no outcome from {', '.join(missing)}"
                " (missing, unsettled or voided)"
            )
        else:
            current.rejected = any(
                _verdict(inst.outcome) == "rejected"
                for inst in current.instances.values()
                if inst is not None
            )

    def _attribute(
        self, layout: LoopLayout, scope: Scope, current: _Round, previous: _Round | None
    ) -> None:
        path = [*(layout.entry if previous is None else layout.repair), *layout.body_prefix]
        candidates = self._cut(path, scope)
        lower = previous.end if previous is not None else None
        upper = current.start
        assert upper is not None
        window = [
            v
            for (name, where), found in self.by_node_scope.items()
            if where == scope
            for v in found
            if v.started is not None and v.started < upper and (lower is None or v.started > lower)
        ]
        strangers = sorted(
            {
                v.node
                for v in window
                if v.node in layout.body_nodes
                and v.node not in layout.path_steps
                and v.node not in layout.verifiers
            }
        )
        if strangers:
            current.problem = (
                f"ambiguous round: {', '.join(strangers)} ran before the verification"
                " but is not on the round's serial path"
            )
            return
        current.prefix = sorted(
            (v for v in window if v.node in candidates),
            key=lambda v: (v.started or 0, v.execution),
        )
        if not current.prefix:
            current.problem = "no serial-prefix worker ran before this rejected round"

    def _cut(self, path: list[PathStep], scope: Scope) -> set[str]:
        """Steps of `path` from its end back to the first wrapper without a proven branch."""
        steps: set[str] = set()
        for element in reversed(path):
            if element.step is not None:
                steps.add(element.step)
            elif element.wrapper is not None and not self._proven(element.wrapper, scope):
                break
        return steps

    def _proven(self, node: str, scope: Scope) -> bool:
        # A wrapper's error branch is proven not taken only when every recorded visit
        # of its node settled without error; a missing or voided outcome proves nothing.
        found = self.by_node_scope.get((node, scope), [])
        return bool(found) and all(
            isinstance(v.outcome, VerifiedOutcome | VerifierOutcome) for v in found
        )

    def _ref(self, visit: Visit, outcome: str) -> ExecutionRefOut:
        return ExecutionRefOut(
            execution=visit.execution,
            node=visit.node,
            map_item=visit.map_indices,
            outcome=outcome,
            has_completion_text=visit.execution in self.record.completions,
        )

    def _item(self, layout: LoopLayout, scope: Scope, counted: list[_Round]) -> EvidenceItem:
        rounds: list[Round] = []
        nodes: list[str] = []
        for current in counted:
            workers: list[str] = []
            for visit in current.prefix:
                if not workers or workers[-1] != visit.node:
                    workers.append(visit.node)
            nodes.extend(n for n in workers if n not in nodes)
            verifiers = tuple(
                self._ref(inst.attempts[-1], _label(inst.outcome))
                for _, inst in sorted(current.instances.items())
                if inst is not None
            )
            prefix = tuple(self._ref(v, _label(v.outcome)) for v in current.prefix)
            rounds.append(
                Round(
                    round=current.number, workers=tuple(workers), prefix=prefix, verifiers=verifiers
                )
            )
        numbers = [current.number for current in counted]
        return EvidenceItem(
            id=evidence_id(
                self.record.run_id,
                "rejected_rounds",
                loop=layout.loop.name,
                map_item=list(scope),
                rounds=numbers,
            ),
            kind="rejected_rounds",
            nodes=tuple(nodes),
            count=len(counted),
            loop=layout.loop.name,
            map_item=scope,
            specialists=(GRAPH_DISCOVERY, REPOSITORY_DISCOVERY),
            rounds=tuple(rounds),
        )
