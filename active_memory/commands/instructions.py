"""`active-memory instructions --graph H --node N [--graph-file GRAPH.json]`.

Prints a node's authored instructions with its admitted graph lessons appended, framed
as reference data and within the budget (SPEC §8, §9). The authored graph is only read:
its file and its hash never change. With `ACTIVE_MEMORY_RUN_ID` set, the lessons come
from the generation the run pinned (pinned now if this is the run's first recall);
otherwise from the store as it is, and nothing is written.
"""

from __future__ import annotations

import argparse
import sys

from active_memory.commands.common import (
    add_budget_option,
    add_json_option,
    add_store_option,
    print_json,
)


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


def _instructions(args: argparse.Namespace) -> int:
    from active_memory.commands.recall import with_options
    from active_memory.node_instructions import (
        authored_instructions,
        full_graph_hash,
        node_context,
        with_lessons,
    )

    graph_hash = full_graph_hash(args.graph, args.store, args.graph_file)
    authored = (
        authored_instructions(args.graph_file, graph_hash, args.node) if args.graph_file else ""
    )
    context = with_options(node_context(graph_hash, args.node, args.repository), args)
    found = with_lessons(authored, context)
    if args.json:
        print_json(
            {
                "graph": graph_hash,
                "node": args.node,
                "instructions": authored,
                "lessons": [{"id": i, "revision": r} for i, r in found.lessons],
                "skipped": [{"id": i, "revision": r, "reason": why} for i, r, why in found.skipped],
                "context": found.context,
                "budget_left": found.budget_left,
                "text": found.text,
            }
        )
        return 0
    sys.stdout.write(found.text + "\n" if found.text else "")
    return 0
