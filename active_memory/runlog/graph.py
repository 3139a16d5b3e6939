"""Zeroshot graphs (profile `openengine.graph.full/v1`) as pydantic models, and a walk.

Public names:

- `Graph`: a graph spec or compiled IR (`profile`, `root`, optional `initialInput`,
  `policy`, `bounds`); `Graph.from_json(data)` parses a decoded JSON object.
- Node kinds (`GraphNode` is their union, tagged by `kind`): `StepNode`, `VerifierNode`,
  `SeqNode`, `ChoiceNode` (with `ChoiceBranch`), `ParNode`, `LoopNode`, `MapNode`,
  `SucceedNode`, `FailNode`. `ExecutableNode` is `StepNode | VerifierNode`.
- Joins (`Join`): `JoinAll`, `JoinAny`, `JoinQuorum`, `JoinFirst`.
- Guards (`Guard`): `InGuard`, `AllGuard`, `AnyGuard`, `NotGuard`, `KOfNGuard`,
  `KOfMapGuard`; each names what it reads through `ControlSelector`s.
- Walk helpers: `children(node)`, `nodes_in_order(root)` (pre-order, authored order),
  `GraphIndex(graph)` (find by name, parent, ancestors), `guard_selectors(guard)`.

Every model keeps fields it does not know (`extra="allow"`) so that a graph written by a
newer zeroshot round-trips; the fields modelled are the ones Active Memory reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

WORKER_ERROR_CODES: tuple[str, ...] = ("timeout", "crash", "malformed", "refusal")
"""The closed worker error channel of zeroshot."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)


# --- guards -------------------------------------------------------------------------


class ControlSelector(_Model):
    """What a guard reads: a node's `signal` field, its `error`, or a group control."""

    name: str
    source: Literal["signal", "error", "group"]
    field: str | None = None


class InGuard(_Model):
    """True when the selected control carries one of `labels`."""

    kind: Literal["in"]
    value: ControlSelector
    labels: list[str]


class AllGuard(_Model):
    """True when every guard is."""

    kind: Literal["all"]
    guards: list[Guard]


class AnyGuard(_Model):
    """True when at least one guard is."""

    kind: Literal["any"]
    guards: list[Guard]


class NotGuard(_Model):
    """Negation of one guard."""

    kind: Literal["not"]
    guard: Guard


class KOfNGuard(_Model):
    """True when at least `count` of `values` carry one of `labels`."""

    kind: Literal["k_of_n"]
    count: int
    values: list[ControlSelector]
    labels: list[str]


class KOfMapGuard(_Model):
    """True when at least `count` mapped items of one selector carry one of `labels`."""

    kind: Literal["k_of_map"]
    count: int
    value: ControlSelector
    labels: list[str]


Guard = Annotated[
    InGuard | AllGuard | AnyGuard | NotGuard | KOfNGuard | KOfMapGuard,
    Field(discriminator="kind"),
]


def guard_selectors(guard: Guard) -> Iterator[ControlSelector]:
    """Every control selector a guard reads, depth first, in authored order."""
    if isinstance(guard, InGuard | KOfMapGuard):
        yield guard.value
    elif isinstance(guard, KOfNGuard):
        yield from guard.values
    elif isinstance(guard, NotGuard):
        yield from guard_selectors(guard.guard)
    else:
        for inner in guard.guards:
            yield from guard_selectors(inner)


# --- joins --------------------------------------------------------------------------


class JoinAll(_Model):
    """Continue when every branch completed."""

    kind: Literal["all"]


class JoinAny(_Model):
    """Continue when one branch completed."""

    kind: Literal["any"]


class JoinQuorum(_Model):
    """Continue when `count` branches completed."""

    kind: Literal["quorum"]
    count: int


class JoinFirst(_Model):
    """Continue with the first branch whose completion makes `when` true."""

    kind: Literal["first"]
    when: Guard


Join = Annotated[JoinAll | JoinAny | JoinQuorum | JoinFirst, Field(discriminator="kind")]


# --- nodes --------------------------------------------------------------------------


class StepNode(_Model):
    """An executable worker; may write to the workspace."""

    kind: Literal["step"]
    name: str
    worker: str | None = None
    timeout_ms: int | None = Field(default=None, alias="timeoutMs")
    attempts: int | None = None
    instructions: str | None = None


class VerifierNode(_Model):
    """A read-only executable that emits finite-enum `signals` (e.g. `verdict`)."""

    kind: Literal["verifier"]
    name: str
    worker: str | None = None
    timeout_ms: int | None = Field(default=None, alias="timeoutMs")
    attempts: int | None = None
    signals: dict[str, list[str]] = Field(default_factory=dict)
    instructions: str | None = None


class SeqNode(_Model):
    """Children run in order."""

    kind: Literal["seq"]
    name: str
    children: list[GraphNode]


class ChoiceBranch(_Model):
    """One guarded alternative of a choice."""

    when: Guard
    node: GraphNode


class ChoiceNode(_Model):
    """The first branch whose guard is true runs; else `otherwise` (if any)."""

    kind: Literal["choice"]
    name: str
    branches: list[ChoiceBranch]
    otherwise: GraphNode | None = None


class ParNode(_Model):
    """Branches run in parallel; `join` decides when the group continues."""

    kind: Literal["par"]
    name: str
    branches: list[GraphNode]
    join: Join


class LoopNode(_Model):
    """Do-while: `body` runs, then again unless `until` holds, at most `maxIterations`."""

    kind: Literal["loop"]
    name: str
    body: GraphNode
    until: Guard | None = None
    max_iterations: int | None = Field(default=None, alias="maxIterations")


class MapNode(_Model):
    """`body` runs once per item of the array selected by `over`."""

    kind: Literal["map"]
    name: str
    body: GraphNode
    over: Any = None
    max_items: int | None = Field(default=None, alias="maxItems")


class SucceedNode(_Model):
    """Terminal success with bound output."""

    kind: Literal["succeed"]
    name: str


class FailNode(_Model):
    """Terminal failure with a finite-enum `reason`."""

    kind: Literal["fail"]
    name: str
    reason: str | None = None


GraphNode = Annotated[
    StepNode
    | VerifierNode
    | SeqNode
    | ChoiceNode
    | ParNode
    | LoopNode
    | MapNode
    | SucceedNode
    | FailNode,
    Field(discriminator="kind"),
]
ExecutableNode = StepNode | VerifierNode
GroupNode = SeqNode | ChoiceNode | ParNode | LoopNode | MapNode


class Graph(_Model):
    """A zeroshot graph spec or compiled IR; only `profile` and `root` are required.

    Parsing does not check that node names are unique (`GraphIndex.duplicates` tells);
    the run record refuses a graph that repeats one.
    """

    profile: str
    root: GraphNode
    initial_input: Any = Field(default=None, alias="initialInput")
    policy: Any = None
    bounds: Any = None

    @classmethod
    def from_json(cls, data: Any) -> Graph:
        """Parse a decoded JSON object (raises pydantic's `ValidationError`)."""
        return cls.model_validate(data)

    def to_json(self) -> dict[str, Any]:
        """The graph as JSON again, with the same fields it was read with."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


_RECURSIVE: tuple[type[BaseModel], ...] = (
    AllGuard,
    AnyGuard,
    NotGuard,
    JoinFirst,
    SeqNode,
    ChoiceBranch,
    ChoiceNode,
    ParNode,
    LoopNode,
    MapNode,
    Graph,
)
for _model in _RECURSIVE:
    _model.model_rebuild()


# --- walking ------------------------------------------------------------------------


def children(node: GraphNode) -> list[GraphNode]:
    """Direct child nodes in authored order (a choice's `otherwise` comes last)."""
    if isinstance(node, SeqNode):
        return list(node.children)
    if isinstance(node, ChoiceNode):
        found = [branch.node for branch in node.branches]
        if node.otherwise is not None:
            found.append(node.otherwise)
        return found
    if isinstance(node, ParNode):
        return list(node.branches)
    if isinstance(node, LoopNode | MapNode):
        return [node.body]
    return []


def nodes_in_order(root: GraphNode) -> Iterator[GraphNode]:
    """Every node of the tree, pre-order, children in authored order."""
    stack: list[GraphNode] = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


class GraphIndex:
    """Name lookups over one graph: the node, its parent, its ancestors.

    Node names are unique in a valid graph; if a graph repeats one, `duplicates` lists it
    and the first node in graph order wins.
    """

    def __init__(self, graph: Graph | GraphNode) -> None:
        root = graph.root if isinstance(graph, Graph) else graph
        self.root: GraphNode = root
        self._by_name: dict[str, GraphNode] = {}
        self._parent: dict[str, str] = {}
        dupes: list[str] = []
        for node in nodes_in_order(root):
            if node.name in self._by_name:
                dupes.append(node.name)
                continue
            self._by_name[node.name] = node
            for child in children(node):
                self._parent.setdefault(child.name, node.name)
        self.duplicates: tuple[str, ...] = tuple(dupes)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: str) -> GraphNode | None:
        """The node called `name`, or None."""
        return self._by_name.get(name)

    def parent(self, name: str) -> GraphNode | None:
        """The group directly containing `name` (None for the root or an unknown name)."""
        parent = self._parent.get(name)
        return None if parent is None else self._by_name[parent]

    def ancestors(self, name: str) -> list[GraphNode]:
        """Enclosing groups of `name`, innermost first."""
        found: list[GraphNode] = []
        current = self._parent.get(name)
        while current is not None:
            found.append(self._by_name[current])
            current = self._parent.get(current)
        return found

    def executables(self) -> list[ExecutableNode]:
        """Every `step` and `verifier`, in graph order."""
        return [n for n in nodes_in_order(self.root) if isinstance(n, StepNode | VerifierNode)]
