"""Ignore lists: how they are written on the command line and what they match.

Values are exact and case-sensitive. A repository value matches any alias of a run's
repository (folder name, absolute checkout path, repository name, owner/repo, the
`repo:…` namespace and the record's own aliases); a graph value matches the graph's
name, its root node's name or its hash.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import PurePath

from active_memory.runlog.importers.common import aliases_for
from active_memory.runlog.record import RunRecord

_SEPARATORS = re.compile(r"[,\s]+")


def parse_list(values: Iterable[str] | None) -> tuple[str, ...]:
    """Comma-separated, space-separated or repeated values, de-duplicated and sorted."""
    found = {part for value in values or () for part in _SEPARATORS.split(value) if part}
    return tuple(sorted(found))


def repository_aliases(record: RunRecord) -> frozenset[str]:
    """Every name the run's repository answers to."""
    repository = record.repository
    if repository is None:
        return frozenset()
    names = {repository.namespace, *repository.aliases, *aliases_for(repository.namespace)}
    if repository.checkout:
        names.add(repository.checkout)
        names.add(PurePath(repository.checkout).name)
    if record.source is not None and record.source.repository:
        names.add(record.source.repository)
    return frozenset(name for name in names if name)


def graph_keys(record: RunRecord) -> frozenset[str]:
    """The graph's name, its root node's name and its hash."""
    graph = record.graph
    if graph is None:
        return frozenset()
    names = {graph.name, graph.hash, graph.ir.root.name if graph.ir is not None else None}
    return frozenset(name for name in names if name)


def opted_out(
    record: RunRecord, ignore_repos: Sequence[str], ignore_graphs: Sequence[str]
) -> str | None:
    """Why the run is ignored, or None."""
    hit = sorted(set(ignore_repos) & repository_aliases(record))
    if hit:
        return f"repository ignored by --ignore-repos {hit[0]}"
    hit = sorted(set(ignore_graphs) & graph_keys(record))
    if hit:
        return f"graph ignored by --ignore-graphs {hit[0]}"
    return None
