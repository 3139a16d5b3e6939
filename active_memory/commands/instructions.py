"""`active-memory instructions --graph H --node N [--graph-file GRAPH.json]`.

Prints a node's authored instructions with its admitted graph lessons appended, framed
as reference data and within the budget (SPEC §8, §9). The authored graph is only read:
its file and its hash never change. With `ACTIVE_MEMORY_RUN_ID` set, the lessons come
from the generation the run pinned (pinned now if this is the run's first recall);
otherwise from the store as it is, and nothing is written.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from active_memory.commands.common import (
    add_budget_option,
    add_json_option,
    add_store_option,
    print_json,
)

AGENT_KINDS = ("step", "verifier")


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `instructions`."""
    parser = subcommands.add_parser(
        "instructions",
        help="a node's instructions with its graph lessons appended",
        description="Print a graph node's authored instructions followed by its graph "
        "lessons (framed, within the budget). The graph itself is never changed.",
    )
    parser.add_argument("--graph", required=True, metavar="H",
                        help="the graph hash (or its first 8+ characters, as `lessons list` "
                        "shows it)")  # fmt: skip
    parser.add_argument("--node", required=True, metavar="N", help="the node's name")
    parser.add_argument(
        "--graph-file",
        metavar="GRAPH.json",
        help="the authored graph (must hash to H); its node's `instructions` come first",
    )
    parser.add_argument(
        "--repository",
        metavar="NS",
        help="repository namespace for repository-qualified graph lessons "
        "(default: $ACTIVE_MEMORY_REPOSITORY, else the current checkout's remote)",
    )
    add_budget_option(
        parser,
        "bytes of lessons, framing included (default: the effective budgetBytes: "
        "$ACTIVE_MEMORY_BUDGET_BYTES, else the settings files, else 2048; docs/settings.md)",
    )
    add_store_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=_instructions)


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
    known = _graph_hashes(store)
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


def _graph_hashes(store: str | None) -> set[str]:
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


def _instructions(args: argparse.Namespace) -> int:
    from active_memory.commands.recall import with_options
    from active_memory.errors import UsageError
    from active_memory.recall.environment import RUN_ID_ENV, resolve_context
    from active_memory.recall.frame import frame, select
    from active_memory.recall.index import SnapshotCorrupt
    from active_memory.recall.snapshot import SnapshotUnavailable, graph_cards
    from active_memory.recall.types import ToolCall
    from active_memory.session_budget import budget_left

    graph_hash = full_graph_hash(args.graph, args.store, args.graph_file)
    authored = (
        authored_instructions(args.graph_file, graph_hash, args.node) if args.graph_file else ""
    )
    env = dict(os.environ)
    env.update(ACTIVE_MEMORY_GRAPH_HASH=graph_hash, ACTIVE_MEMORY_NODE=args.node)
    call = ToolCall("instructions", "instructions", {}, cwd=os.getcwd())
    context = resolve_context(
        call, env, repository=args.repository, dry_run=not env.get(RUN_ID_ENV)
    )
    context = with_options(context, args)
    try:
        cards = [_GraphCard(*card) for card in graph_cards(context)]
    except (SnapshotCorrupt, SnapshotUnavailable) as exc:
        raise UsageError(str(exc)) from None
    admitted, skipped, cost = select(cards, set(), context.budget_bytes)
    block = frame(card.text for card in admitted)
    text = authored.rstrip("\n")
    if block:
        text = f"{text}\n\n{block}" if text else block
    if args.json:
        print_json(
            {
                "graph": graph_hash,
                "node": args.node,
                "instructions": authored,
                "lessons": [{"id": c.id, "revision": c.revision} for c in admitted],
                "skipped": [
                    {"id": c.id, "revision": c.revision, "reason": why} for c, why in skipped
                ],
                "context": block,
                "budget_left": budget_left(context.budget_bytes, cost),
                "text": text,
            }
        )
        return 0
    sys.stdout.write(text + "\n" if text else "")
    return 0


class _GraphCard:
    __slots__ = ("id", "revision", "text")

    def __init__(self, lesson_id: str, revision: int, text: str) -> None:
        self.id = lesson_id
        self.revision = revision
        self.text = text

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))
