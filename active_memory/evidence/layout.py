"""The structural half of rule 2 (SPEC §4): which review loops have a supported layout.

A supported loop has a `seq` body laid out as `P + V + R`:

- `V`, the round's verifiers: a run of direct `verifier` children and `par`s with
  `join: all` whose branches are all verifiers;
- `R`, optional: one routing `choice` after them, reading only `V`'s signals and errors;
- `P`, optional: what runs before the verifiers, reachable only serially (steps, `seq`s,
  error-only choice wrappers).

A *serial path* is a list of `PathStep(step=name)` and `PathStep(wrapper=node)` elements;
a wrapper is an error-only choice (every branch guards only on one node's `error`, and
its `otherwise` continues) that counts only when the run proves its branch was not taken.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from active_memory.runlog.graph import (
    AllGuard,
    AnyGuard,
    ChoiceNode,
    FailNode,
    GraphIndex,
    GraphNode,
    Guard,
    InGuard,
    JoinAll,
    KOfNGuard,
    LoopNode,
    MapNode,
    ParNode,
    SeqNode,
    StepNode,
    SucceedNode,
    VerifierNode,
    children,
    guard_selectors,
    nodes_in_order,
)


@dataclass(frozen=True, slots=True)
class PathStep:
    """One element of a serial path: a `step` worker, or an error-only wrapper on a node."""

    step: str | None = None
    wrapper: str | None = None


@dataclass(slots=True)
class LoopLayout:
    """What rule 2 needs to know about one loop; `problem` set means unsupported."""

    loop: LoopNode
    verifiers: tuple[str, ...] = ()
    body_prefix: tuple[PathStep, ...] = ()
    repair: tuple[PathStep, ...] = ()
    entry: tuple[PathStep, ...] = ()
    body_nodes: frozenset[str] = frozenset()
    enclosing_loops: tuple[LoopNode, ...] = ()
    problem: str | None = None
    until_problem: str | None = None
    path_steps: frozenset[str] = field(default_factory=frozenset)


def error_wrapper_target(node: GraphNode) -> str | None:
    """The node an error-only choice wrapper guards, or None if `node` is not one."""
    if not isinstance(node, ChoiceNode) or not node.branches:
        return None
    if isinstance(node.otherwise, SucceedNode | FailNode):
        return None  # its otherwise ends the run: nothing continues through it
    targets: set[str] = set()
    for branch in node.branches:
        if not _plain_guard(branch.when):
            return None
        for selector in guard_selectors(branch.when):
            if selector.source != "error":
                return None
            targets.add(selector.name)
    return targets.pop() if len(targets) == 1 else None


def _plain_guard(guard: Guard) -> bool:
    # `not` and `k_of_map` could route on the absence of an error; only positive
    # error tests keep "no error recorded" equivalent to "branch not taken".
    if isinstance(guard, InGuard | KOfNGuard):
        return True
    if isinstance(guard, AllGuard | AnyGuard):
        return all(_plain_guard(inner) for inner in guard.guards)
    return False


def serial_tail(node: GraphNode) -> tuple[list[PathStep], bool]:
    """The longest tail of `node` reached only serially, and whether that is all of it."""
    if isinstance(node, StepNode):
        return [PathStep(step=node.name)], True
    if isinstance(node, SeqNode):
        path: list[PathStep] = []
        for child in reversed(node.children):
            tail, complete = serial_tail(child)
            path = tail + path
            if not complete:
                return path, False
        return path, True
    target = error_wrapper_target(node)
    if target is not None and isinstance(node, ChoiceNode):
        if node.otherwise is None:
            return [PathStep(wrapper=target)], True
        tail, complete = serial_tail(node.otherwise)
        return ([PathStep(wrapper=target), *tail] if complete else tail), complete
    return [], False


def _entry_path(index: GraphIndex, loop: LoopNode) -> list[PathStep]:
    path: list[PathStep] = []
    current: GraphNode = loop
    for parent in index.ancestors(loop.name):
        if isinstance(parent, SeqNode):
            names = [child.name for child in parent.children]
            if current.name not in names:
                return path
            position = names.index(current.name)
            for sibling in reversed(parent.children[:position]):
                tail, complete = serial_tail(sibling)
                path = tail + path
                if not complete:
                    return path
        elif isinstance(parent, ChoiceNode):
            target = error_wrapper_target(parent)
            through_otherwise = parent.otherwise is not None and (
                parent.otherwise.name == current.name
            )
            if target is None or not through_otherwise:
                return path
            path = [PathStep(wrapper=target), *path]
        else:
            return path  # par, loop or map: the enclosing scope begins here
        current = parent
    return path


def classify_loop(index: GraphIndex, loop: LoopNode) -> LoopLayout:
    """The layout of one loop, with `problem` naming why it is unsupported."""
    enclosing = tuple(a for a in index.ancestors(loop.name) if isinstance(a, LoopNode))
    body_nodes = frozenset(n.name for n in nodes_in_order(loop.body))
    layout = LoopLayout(loop=loop, body_nodes=body_nodes, enclosing_loops=enclosing)
    body = loop.body
    if not isinstance(body, SeqNode):
        layout.problem = f"unsupported layout: the body is a {body.kind}, not a seq"
        return layout
    kids = list(body.children)
    routing: ChoiceNode | None = None
    if kids and isinstance(kids[-1], ChoiceNode):
        last = kids.pop()
        assert isinstance(last, ChoiceNode)
        routing = last
    verifiers: list[str] = []
    while kids and _verifier_group(kids[-1]) is not None:
        verifiers = [*(_verifier_group(kids.pop()) or []), *verifiers]
    if not verifiers:
        layout.problem = (
            "unsupported layout: no direct verifiers or all-join par of verifiers"
            " before the end of the body"
        )
        return layout
    prefix: list[PathStep] = []
    for child in kids:
        tail, complete = serial_tail(child)
        if not complete:
            layout.problem = (
                f"unsupported layout: {child.name!r} before the verifiers is not a step,"
                " seq or error-only choice"
            )
            return layout
        prefix.extend(tail)
    repair: list[PathStep] = []
    if routing is not None:
        foreign = sorted(
            {
                f"{s.name}.{s.source}"
                for branch in routing.branches
                for s in guard_selectors(branch.when)
                if s.source not in ("signal", "error") or s.name not in verifiers
            }
        )
        if foreign:
            layout.problem = (
                f"unsupported layout: routing choice {routing.name!r} reads"
                f" {', '.join(foreign)}, not only the round's verifiers"
            )
            return layout
        otherwise = routing.otherwise
        if otherwise is not None and not isinstance(otherwise, SucceedNode | FailNode):
            tail, complete = serial_tail(otherwise)
            if not complete:
                layout.problem = (
                    f"unsupported layout: the otherwise of {routing.name!r} is not"
                    " a step, seq or error-only choice"
                )
                return layout
            repair = tail
    if loop.until is not None:
        foreign = sorted(
            {
                f"{s.name}.{s.source}"
                for s in guard_selectors(loop.until)
                if s.source != "signal" or s.name not in verifiers
            }
        )
        if foreign:
            layout.until_problem = (
                f"until reads {', '.join(foreign)}, not only its own verifiers' signals"
            )
    layout.verifiers = tuple(verifiers)
    layout.body_prefix = tuple(prefix)
    layout.repair = tuple(repair)
    layout.entry = tuple(_entry_path(index, loop))
    layout.path_steps = frozenset(
        p.step for p in (*layout.entry, *prefix, *repair) if p.step is not None
    )
    return layout


def _verifier_group(node: GraphNode) -> list[str] | None:
    if isinstance(node, VerifierNode):
        return [node.name]
    if (
        isinstance(node, ParNode)
        and isinstance(node.join, JoinAll)
        and node.branches
        and all(isinstance(b, VerifierNode) for b in node.branches)
    ):
        return [b.name for b in node.branches]
    return None


def enclosed_loops(node: GraphNode) -> list[LoopNode]:
    """Loops strictly inside `node`, in graph order."""
    return [
        inner
        for child in children(node)
        for inner in nodes_in_order(child)
        if isinstance(inner, LoopNode)
    ]


def maps_and_loops(index: GraphIndex) -> tuple[list[LoopNode], list[MapNode]]:
    """Every loop and every map of the graph, in graph order."""
    loops = [n for n in nodes_in_order(index.root) if isinstance(n, LoopNode)]
    maps = [n for n in nodes_in_order(index.root) if isinstance(n, MapNode)]
    return loops, maps
