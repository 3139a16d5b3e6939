"""A graph node's authored instructions with its graph lessons appended (SPEC §8, §9:
`active-memory instructions`): the node found in the authored graph file (checked against
the hash), a short `--graph` prefix resolved against the store's graph lessons, and the
lessons framed as reference data within the budget, from the generation the run pinned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from active_memory.recall.types import RecallContext

AGENT_KINDS = ("step", "verifier")
"""The node kinds that run an agent, and so have instructions."""


def find_node(graph: Any, name: str) -> dict[str, Any] | None:
    """The agent node (`step` or `verifier`) called `name` anywhere in a graph's JSON."""
    stack = [graph]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if value.get("name") == name and value.get("kind") in AGENT_KINDS:
                return value
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


def authored_instructions(graph_file: str, graph_hash: str, node: str) -> str:
    """The node's `instructions` from `graph_file`, after checking the file hashes to H."""
    from active_memory.errors import UsageError
    from active_memory.reader import load_json
    from active_memory.runlog.canonical import graph_hash as compute_hash

    graph = load_json(graph_file, "graph")
    actual = compute_hash(graph)
    if actual != graph_hash:
        raise UsageError(
            f"{graph_file}: the graph hashes to {actual}, not --graph {graph_hash}; "
            "pass the graph file the run was started with"
        )
    found = find_node(graph, node)
    if found is None:
        raise UsageError(f"{graph_file}: no step or verifier node named {node!r}")
    text = found.get("instructions")
    return text if isinstance(text, str) else ""


MIN_PREFIX = 8
"""The shortest graph-hash prefix `--graph` takes (`lessons list` shows 12 characters)."""


def full_graph_hash(given: str, store: str | None, graph_file: str | None) -> str:
    """`--graph` as the full hash: 64 hex characters as they are, or the one graph hash
    of the store's graph lessons (or of `graph_file`) that starts with the prefix given,
    as `lessons list` shows it (`7d5d8e1a2b3c…`)."""
    from active_memory.errors import UsageError

    prefix = given.strip().rstrip("…").rstrip(".").lower()
    if not prefix or not set(prefix) <= set("0123456789abcdef") or len(prefix) > 64:
        raise UsageError(f"--graph {given}: a graph hash is lowercase hex (64 characters, or "
                         f"the first {MIN_PREFIX} or more that `lessons list` shows)")  # fmt: skip
    if len(prefix) == 64:
        return prefix
    if len(prefix) < MIN_PREFIX:
        raise UsageError(f"--graph {given}: give at least {MIN_PREFIX} characters of the hash")
    known = graph_hashes(store)
    if graph_file:
        from active_memory.reader import load_json
        from active_memory.runlog.canonical import graph_hash as compute_hash

        known.add(compute_hash(load_json(graph_file, "graph")))
    found = sorted(h for h in known if h.startswith(prefix))
    if len(found) == 1:
        return found[0]
    if not found:
        raise UsageError(f"--graph {given}: no graph lesson in the store has a hash that "
                         "starts so; give the full hash (or --graph-file)")  # fmt: skip
    raise UsageError(f"--graph {given}: {len(found)} graph hashes start so "
                     f"({', '.join(h[:16] + '…' for h in found)}); give more of it")  # fmt: skip


def graph_hashes(store: str | None) -> set[str]:
    """The graph hashes of the store's graph lessons, retired ones included."""
    import anyio

    from active_memory.errors import StoreMissing
    from active_memory.store import LessonQuery, open_store, resolve_store_location

    async def read() -> set[str]:
        try:
            async with open_store(resolve_store_location(store), create=False) as opened:
                found = await opened.summaries(LessonQuery(kind="graph", include_retired=True))
        except StoreMissing:
            return set()
        return {item.graph_hash for item in found if item.graph_hash}

    return anyio.run(read, backend="asyncio")


@dataclass(frozen=True, slots=True)
class NodeInstructions:
    """What `instructions` prints: the text (authored, then the framed lessons), the
    lessons delivered and skipped, the framed block alone and the budget left."""

    text: str
    context: str
    lessons: list[tuple[str, int]]
    skipped: list[tuple[str, int, str]]
    budget_left: int


def node_context(graph_hash: str, node: str, repository: str | None) -> RecallContext:
    """The recall context of a node's instructions: the run's, when one is running (its
    identity in the environment), else a dry look that records nothing."""
    from active_memory.recall.environment import RUN_ID_ENV, resolve_context
    from active_memory.recall.types import ToolCall

    env = dict(os.environ)
    env.update(ACTIVE_MEMORY_GRAPH_HASH=graph_hash, ACTIVE_MEMORY_NODE=node)
    call = ToolCall("instructions", "instructions", {}, cwd=os.getcwd())
    return resolve_context(call, env, repository=repository, dry_run=not env.get(RUN_ID_ENV))


def with_lessons(authored: str, context: RecallContext) -> NodeInstructions:
    """`authored` with the node's graph lessons appended, framed, within the budget.
    An unreadable index is a usage error naming it."""
    from active_memory.errors import UsageError
    from active_memory.recall.frame import frame, select
    from active_memory.recall.index import SnapshotCorrupt
    from active_memory.recall.snapshot import SnapshotUnavailable, graph_cards
    from active_memory.session_budget import budget_left

    try:
        cards = [_GraphCard(*card) for card in graph_cards(context)]
    except (SnapshotCorrupt, SnapshotUnavailable) as exc:
        raise UsageError(str(exc)) from None
    admitted, skipped, cost = select(cards, set(), context.budget_bytes)
    block = frame(card.text for card in admitted)
    text = authored.rstrip("\n")
    if block:
        text = f"{text}\n\n{block}" if text else block
    return NodeInstructions(
        text=text,
        context=block,
        lessons=[(c.id, c.revision) for c in admitted],
        skipped=[(c.id, c.revision, why) for c, why in skipped],
        budget_left=budget_left(context.budget_bytes, cost),
    )


class _GraphCard:
    __slots__ = ("id", "revision", "text")

    def __init__(self, lesson_id: str, revision: int, text: str) -> None:
        self.id = lesson_id
        self.revision = revision
        self.text = text

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))
