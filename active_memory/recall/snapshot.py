"""What a run recalls, opened: its pinned generations (or its pinned store version), for
one hook process or kept by a resident one (`SnapshotCache`).

Pinning is pins.py; building is building.py and the background builder (builder.py).
The same generation file serves every run pinned to it and the recall server, so
memory follows the generations in use, not the number of runs; the server keeps what
it decodes within one budget (`BLOB_BUDGET`), so its memory stays flat however long it
runs.
"""

from __future__ import annotations

import os

from active_memory.recall.index import BlobCache, OlderFormat, SnapshotCorrupt, SnapshotIndex
from active_memory.recall.pins import (
    GenerationPending,
    Pending,
    SnapshotUnavailable,
    graph_scope,
    pin,
    pinned,
    repository_scope,
    store_location,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from active_memory.recall.direct import DirectSource
    from active_memory.recall.types import RecallContext
    from active_memory.store.changes import ScopeKey

__all__ = [
    "GenerationPending",
    "SnapshotCorrupt",
    "SnapshotUnavailable",
    "graph_scope",
    "pinned",
    "repository_scope",
    "store_location",
]

GraphCards = tuple[tuple[str, int, str], ...]
"""A node's graph lessons: (id, revision, rendered card) in lesson-ID order."""

BLOB_BUDGET = 24 << 20
"""Encoded bytes of decoded blobs a resident process keeps (least recently used out)."""


def _open(found: str, cache: BlobCache | None = None) -> SnapshotIndex:
    index = SnapshotIndex.open(found, cache=cache)
    _drop_look(found)
    return index


def _drop_look(found: str) -> None:
    """Delete a look-only build (its index reads through the open file)."""
    if os.path.basename(found).startswith(".look-"):
        import shutil

        shutil.rmtree(os.path.dirname(found), ignore_errors=True)


def repository_index(context: RecallContext) -> SnapshotIndex | DirectSource | None:
    """The repository scope the context's run pinned (pinned now at its first call)."""
    scope = repository_scope(context)
    if scope is None:
        return None
    found = pin(context, scope)
    if isinstance(found, Pending):
        return _direct(found, context)
    try:
        return _open(found)
    except OlderFormat:
        repin(context, scope, found)
        return repository_index(context)


def repin(context: RecallContext, scope: ScopeKey, path: str) -> None:
    """Drop a pin naming a generation an earlier version wrote: the run pins again (the
    one case a run's pin moves; upgrades only, docs/recall.md)."""
    from active_memory.recall.pins import drop_pin, pin_path

    drop_pin(pin_path(context, scope), os.path.relpath(path, context.recall_dir))


def graph_cards(context: RecallContext) -> GraphCards:
    """The node's graph lessons the context's run pinned (pinned now at its first call)."""
    scope = graph_scope(context)
    if scope is None:
        return ()
    found = pin(context, scope)
    if isinstance(found, Pending):
        return _cards_at(found)
    try:
        return _all_cards(_open(found))
    except OlderFormat:
        repin(context, scope, found)
        return graph_cards(context)


def pin_graph(context: RecallContext) -> None:
    """Pin the node's graph scope at the run's first recall (so `instructions` and the
    hooks see the same lessons); reads no card."""
    scope = graph_scope(context)
    if scope is not None and pinned(context, scope) is None:
        found = pin(context, scope)
        if isinstance(found, str):
            _drop_look(found)


def _direct(pending: Pending, context: RecallContext) -> DirectSource:
    """A pending run's source (imported only then: most calls never need it)."""
    from active_memory.recall.direct import DirectSource

    return DirectSource(pending, context)


def _all_cards(index: SnapshotIndex) -> GraphCards:
    return tuple(index.cards())


def _cards_at(pending: Pending) -> GraphCards:
    """A graph scope's cards at a pending run's version, from the store."""
    from active_memory.recall.frame import render_card
    from active_memory.recall.index import order_key
    from active_memory.store.direct import read_scope_at

    rows = read_scope_at(pending.location, pending.scope, pending.version)
    rows.sort(key=lambda row: order_key(str(row[0])))
    return tuple((str(r[0]), int(r[1]), render_card(str(r[0]), int(r[1]), r[2] or "", r[3] or ""))
                 for r in rows)  # fmt: skip


def refresh_after_write(location: str, env: Any = None) -> list[str]:
    """After a write changed the store at `location`: bring the generations of the
    scopes this machine recalls up to date (building.refresh_known)."""
    from active_memory.recall.building import refresh_known
    from active_memory.store.location import state_dir

    return refresh_known(os.path.join(state_dir(env), "recall"), location)


class SnapshotCache:
    """Opened generations kept in memory, for a process that answers many calls.

    The recall server keeps one; a hook process answers one call and needs none. Each
    generation file is opened once and shared by every run pinned to it; what is
    decoded of all of them is kept within `budget` bytes (`BLOB_BUDGET`). Runs' pins
    are remembered for at most `max_runs * 8` (run, scope) pairs; at most
    `max_runs * 2` generations stay open, least recently used dropped first. Safe to
    share between threads (dict operations are atomic; two threads opening one file
    both get a correct copy). A run pinned to a store version (no generation yet) is
    answered from the store on every call until its pin names a generation.
    """

    def __init__(self, *, max_runs: int = 32, budget: int = BLOB_BUDGET) -> None:
        self.max_runs = max_runs
        self.blobs = BlobCache(budget)
        self._pins: dict[tuple[str, str, str], str] = {}
        self._indexes: dict[str, SnapshotIndex] = {}
        self._graphs: dict[str, GraphCards] = {}

    def _generation(self, context: RecallContext, scope: ScopeKey) -> SnapshotIndex | Pending:
        key = (context.recall_dir, context.run_key, scope.name)
        path = None if context.dry_run else self._pins.get(key)
        if path is None:
            found = pin(context, scope)
            if isinstance(found, Pending):
                return found
            path = found
            if os.path.basename(path).startswith(".look-"):
                return _open(path, self.blobs)
            if not context.dry_run:
                self._pins[key] = path
                _trim(self._pins, self.max_runs * 8)
        index = self._indexes.pop(path, None)
        if index is None:
            try:
                index = SnapshotIndex.open(path, cache=self.blobs)
            except OlderFormat:
                self._pins.pop(key, None)
                repin(context, scope, path)
                return self._generation(context, scope)
        self._indexes[path] = index  # (re)inserted last: most recently used
        _trim(self._indexes, self.max_runs * 2)
        return index

    def resident(self, context: RecallContext) -> bool:
        """True when answering the context's call reads no store and builds nothing: its
        run's repository generation is pinned and open here, and its graph scope (if
        any) pinned to a generation. The server answers such a call on its event loop."""
        if context.dry_run:
            return False
        scope = repository_scope(context)
        if scope is not None:
            path = self._pins.get((context.recall_dir, context.run_key, scope.name))
            if path is None or path not in self._indexes:
                return False
        scope = graph_scope(context)
        return scope is None or isinstance(pinned(context, scope), str)

    def repository_index(self, context: RecallContext) -> SnapshotIndex | DirectSource | None:
        """The repository generation the context's run pinned (pinned now if needed)."""
        scope = repository_scope(context)
        if scope is None:
            return None
        found = self._generation(context, scope)
        return _direct(found, context) if isinstance(found, Pending) else found

    def graph_cards(self, context: RecallContext) -> GraphCards:
        """The graph generation the context's run pinned, as cards."""
        scope = graph_scope(context)
        if scope is None:
            return ()
        index = self._generation(context, scope)
        if isinstance(index, Pending):
            return _cards_at(index)
        cards = self._graphs.get(index.directory)
        if cards is None:
            cards = _all_cards(index)
            self._graphs[index.directory] = cards
            _trim(self._graphs, self.max_runs * 2)
        return cards

    def pin_graph(self, context: RecallContext) -> None:
        """Pin the node's graph scope (reads no card)."""
        scope = graph_scope(context)
        if scope is not None and pinned(context, scope) is None:
            self._generation(context, scope)


def _trim(cache: dict[Any, Any], size: int) -> None:
    while len(cache) > size:
        try:
            del cache[next(iter(cache))]
        except (StopIteration, KeyError, RuntimeError):  # another thread trimmed it
            return
