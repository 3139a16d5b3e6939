"""Reading the two files of a run: the runtime JSON and the authored graph, each a usage
error naming the file when missing, unreadable or malformed, then validated and resolved
(`load_runtime_config`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from active_memory.config.parse import parse_runtime_settings
from active_memory.config.source_node import RuntimeConfig, resolve_config
from active_memory.errors import UsageError
from active_memory.runlog.graph import Graph, GraphIndex
from active_memory.validation import json_path


def read_json_file(path: Path, what: str) -> Any:
    """Parse one JSON file; a missing, unreadable or malformed file is a usage error."""
    from active_memory.reader import load_json

    return load_json(path, f"{what} file")


# pydantic puts the union tag (a node, guard or join kind) into an error's location;
# no field of a graph is named like one, so a path shown to a person leaves them out.
_NODE_KINDS = ("step", "verifier", "seq", "choice", "par", "loop", "map", "succeed", "fail")
_GUARD_AND_JOIN_KINDS = ("in", "all", "any", "not", "k_of_n", "k_of_map", "quorum", "first")
_GRAPH_TAGS = frozenset((*_NODE_KINDS, *_GUARD_AND_JOIN_KINDS))


def parse_graph(document: object, source: str) -> Graph:
    """The authored graph of a graph file: a bare graph, or one under `graph` (fixtures,
    run submissions). Names must be unique; a bad graph is a usage error naming `source`."""
    if isinstance(document, dict) and isinstance(document.get("graph"), dict):
        document = document["graph"]
    try:
        graph = Graph.from_json(document)
    except ValidationError as exc:
        problems = [
            f"{json_path([p for p in e['loc'] if p not in _GRAPH_TAGS])}: {e['msg']}"
            for e in exc.errors(include_url=False)
        ]
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise UsageError(
            f"{source}: not a valid zeroshot graph: " + "; ".join(problems[:3]) + more
        ) from None
    duplicates = GraphIndex(graph).duplicates
    if duplicates:
        raise UsageError(f"{source}: node name {duplicates[0]!r} is used twice; names are unique")
    return graph


def load_runtime_config(config_path: Path, graph_path: Path) -> RuntimeConfig:
    """Read, validate and resolve a runtime JSON against its authored graph file."""
    settings = parse_runtime_settings(read_json_file(config_path, "runtime JSON"))
    graph = parse_graph(read_json_file(graph_path, "graph"), str(graph_path))
    return resolve_config(settings, graph)
