"""Frozen snapshots: what a run (or a bare provider session) may recall, fixed at first use.

At the first recall of a run key, the active lessons of its scope are read from the
store in one transaction (`LessonStore.read_snapshot`) and written under
`recall/runs/<run key>/`:

- `repository-<namespace>/`: the prebuilt index of the repository lessons (index.py);
- `graph-<graph hash>-<node>.marshal`: the node's graph lessons, as rendered cards in
  lesson-ID order (appended to its instructions, never matched against tool calls).

Each part is published atomically and only if absent (a folder renamed into place, a
file hard-linked into place), so concurrent first calls agree on one snapshot: a loser
discards its copy and reads the winner's. Lessons published later never reach that run.
A run's repository part is frozen once for the whole run; a graph part once per node.

Only `freeze` touches the store (and with it pydantic, anyio and SQLite); reading a
frozen snapshot is the standard library and `marshal`.
"""

from __future__ import annotations

import marshal
import os

from active_memory.recall.files import read_bytes, safe_name
from active_memory.recall.frame import render_card
from active_memory.recall.index import (
    META_FILE,
    IndexCard,
    SnapshotCorrupt,
    SnapshotIndex,
    build_index,
    natural_key,
    write_index,
)
from active_memory.recall.records import run_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from active_memory.lessons import Lesson
    from active_memory.recall.types import RecallContext

GraphCards = tuple[tuple[str, int, str], ...]
"""A node's graph lessons: (id, revision, rendered card) in lesson-ID order."""


def repository_dir(context: RecallContext) -> str | None:
    """The index folder of the context's repository part (None: no repository scope)."""
    if context.repository is None or "repository" not in context.scopes:
        return None
    folder = "repository-" + safe_name(context.repository)
    return os.path.join(run_dir(context.recall_dir, context.run_key), folder)


def graph_file(context: RecallContext) -> str | None:
    """The file of the context's graph part (None: no graph scope)."""
    if context.graph_hash is None or context.node is None or "graph" not in context.scopes:
        return None
    name = f"graph-{context.graph_hash}-{safe_name(context.node)}.marshal"
    return os.path.join(run_dir(context.recall_dir, context.run_key), name)


class SnapshotCache:
    """Opened snapshot parts kept in memory, for a process that answers many calls.

    The recall server keeps one; a hook process answers one call and needs none. Parts
    are immutable once frozen, so a cached part never goes stale. At most `max_runs`
    repository indexes (and `max_runs * 8` graph parts) are kept, least recently used
    dropped first, so a long-lived server does not grow with every run it ever served.
    Safe to share between threads (dict operations are atomic; two threads opening the
    same part at once both get a correct copy).
    """

    def __init__(self, *, preload: bool = True, max_runs: int = 32) -> None:
        self.preload = preload
        self.max_runs = max_runs
        self._indexes: dict[str, SnapshotIndex] = {}
        self._graphs: dict[str, GraphCards] = {}

    def repository_index(self, context: RecallContext) -> SnapshotIndex | None:
        """The repository index of `context`, frozen now if this run has none yet."""
        folder = repository_dir(context)
        if folder is None:
            return None
        index = self._indexes.pop(folder, None)
        if index is None:
            index = repository_index(context)
            if index is None:
                return None
            if self.preload:
                index.preload()
        if not context.dry_run:
            self._indexes[folder] = index  # (re)inserted last: most recently used
            _trim(self._indexes, self.max_runs)
        return index

    def graph_cards(self, context: RecallContext) -> GraphCards:
        """The graph part of `context`, frozen now if this node has none yet."""
        path = graph_file(context)
        if path is None:
            return ()
        cards = self._graphs.pop(path, None)
        if cards is None:
            cards = graph_cards(context)
        if not context.dry_run:
            self._graphs[path] = cards
            _trim(self._graphs, self.max_runs * 8)
        return cards


def _trim(cache: dict[str, Any], size: int) -> None:
    while len(cache) > size:
        try:
            del cache[next(iter(cache))]
        except (StopIteration, KeyError, RuntimeError):  # another thread trimmed it
            return


def repository_index(context: RecallContext) -> SnapshotIndex | None:
    """Open the context's repository index, freezing the snapshot first if needed."""
    folder = repository_dir(context)
    if folder is None:
        return None
    if os.path.exists(os.path.join(folder, META_FILE)):
        return SnapshotIndex.open(folder)
    frozen = freeze(context)
    if frozen.index is not None:  # a look-only recall keeps it in memory
        return frozen.index
    return SnapshotIndex.open(folder)


def graph_cards(context: RecallContext) -> GraphCards:
    """The context's graph part, freezing the snapshot first if needed."""
    path = graph_file(context)
    if path is None:
        return ()
    data = read_bytes(path)
    if data is None:
        frozen = freeze(context)
        if frozen.graph is not None:
            return frozen.graph
        data = read_bytes(path)
        if data is None:
            raise SnapshotCorrupt(path, "graph snapshot missing after freezing")
    return _parse_graph(path, data)


def _parse_graph(path: str, data: bytes) -> GraphCards:
    try:
        value = marshal.loads(data)
    except (ValueError, EOFError, TypeError) as exc:
        raise SnapshotCorrupt(path, str(exc)) from None
    if not isinstance(value, tuple) or not all(
        isinstance(item, tuple) and len(item) == 3 for item in value
    ):
        raise SnapshotCorrupt(path, "not a list of cards")
    cards: GraphCards = value
    return cards


class Frozen:
    """What `freeze` produced in memory: set only for a look-only (dry-run) context."""

    __slots__ = ("graph", "index")

    def __init__(self, index: SnapshotIndex | None = None, graph: GraphCards | None = None):
        self.index = index
        self.graph = graph


def freeze(context: RecallContext) -> Frozen:
    """Read the context's scope from the store and publish the parts the run lacks.

    A dry-run context publishes nothing and returns the parts in memory instead. A store
    that does not exist yet is an empty scope. Store errors propagate (a hook then logs
    and delivers nothing) and are remembered for `FREEZE_RETRY_SECONDS`: until then the
    run's calls fail fast with `SnapshotUnavailable` instead of each paying for opening
    a broken store.
    """
    folder = repository_dir(context)
    path = graph_file(context)
    need_repository = folder is not None and (
        context.dry_run or not os.path.exists(os.path.join(folder, META_FILE))
    )
    need_graph = path is not None and (context.dry_run or not os.path.exists(path))
    if not need_repository and not need_graph:
        return Frozen()
    failure = os.path.join(run_dir(context.recall_dir, context.run_key), FREEZE_FAILED_FILE)
    if not context.dry_run:
        _check_recent_failure(failure)
    try:
        lessons = read_scope(
            context.store,
            repository=context.repository,
            graph_hash=context.graph_hash if need_graph else None,
            node=context.node if need_graph else None,
        )
    except Exception as exc:
        if not context.dry_run:
            _remember_failure(failure, exc)
        raise
    repository_cards = [to_index_card(lesson) for lesson in lessons if _is_repository(lesson)]
    graph = tuple(
        sorted(
            (
                (
                    lesson.id,
                    lesson.revision,
                    render_card(lesson.id, lesson.revision, lesson.title, lesson.recommendation),
                )
                for lesson in lessons
                if not _is_repository(lesson)
            ),
            key=lambda card: natural_key(card[0]),
        )
    )
    scope = {"run_key": context.run_key, "repository": context.repository}
    frozen = Frozen()
    if need_repository and folder is not None:
        built = build_index(repository_cards, scope)
        if context.dry_run:
            frozen.index = SnapshotIndex.from_built(built)
        else:
            _publish_folder(folder, lambda temporary: write_index(built, temporary))
    if need_graph and path is not None:
        if context.dry_run:
            frozen.graph = graph
        else:
            _publish_file(path, marshal.dumps(graph))
    return frozen


FREEZE_RETRY_SECONDS = 30.0
FREEZE_FAILED_FILE = "freeze-failed.txt"


class SnapshotUnavailable(Exception):
    """The run's snapshot could not be frozen a moment ago; recall waits before retrying."""


def _check_recent_failure(path: str) -> None:
    import time

    try:
        age = time.time() - os.path.getmtime(path)
    except OSError:
        return
    if 0 <= age < FREEZE_RETRY_SECONDS:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                reason = handle.read(500).strip()
        except OSError:
            reason = "unknown"
        raise SnapshotUnavailable(
            f"freezing this run's snapshot failed {age:.0f} s ago ({reason}); "
            f"next try after {FREEZE_RETRY_SECONDS:g} s"
        )


def _remember_failure(path: str, exc: Exception) -> None:
    import contextlib

    from active_memory.recall.files import atomic_write

    reason = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]
    # Remembering is an optimisation; the error itself still propagates.
    with contextlib.suppress(OSError):
        atomic_write(path, reason.encode("utf-8"))


def _is_repository(lesson: Lesson) -> bool:
    return lesson.scope.kind == "repository"


def to_index_card(lesson: Lesson) -> IndexCard:
    """The index's view of a lesson: rendered card and associations."""
    associations = lesson.associations
    return IndexCard(
        lesson.id,
        lesson.revision,
        render_card(lesson.id, lesson.revision, lesson.title, lesson.recommendation),
        files=associations.files,
        folders=associations.folders,
        identifiers=associations.identifiers,
        keywords=associations.keywords,
    )


def read_scope(
    store: str | None, *, repository: str | None, graph_hash: str | None, node: str | None
) -> Sequence[Lesson]:
    """Active lessons of one recall scope, in one store transaction ([] without a store)."""
    import anyio

    from active_memory.errors import StoreMissing
    from active_memory.store import open_store, resolve_store_location

    location = resolve_store_location(store)

    async def read() -> Sequence[Lesson]:
        try:
            async with open_store(location, create=False) as opened:
                return await opened.read_snapshot(
                    repository=repository, graph_hash=graph_hash, node=node
                )
        except StoreMissing:
            return []

    if not _in_event_loop():
        return anyio.run(read)
    # Called from inside an event loop (a server that did not move the call to a worker
    # thread): run the one-off read on a thread of its own rather than fail.
    import threading

    result: list[Sequence[Lesson]] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            result.append(anyio.run(read))
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=work, name="active-memory-freeze")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def _in_event_loop() -> bool:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _temporary_name(final: str) -> str:
    # Unique per process and thread: a server may freeze the same run from two threads.
    import threading
    import time

    return f"{final}.{os.getpid()}.{threading.get_ident()}.{time.monotonic_ns()}.tmp"


def _publish_folder(folder: str, fill: Callable[[str], None]) -> None:
    import shutil

    os.makedirs(os.path.dirname(folder), exist_ok=True)
    temporary = _temporary_name(folder)
    try:
        fill(temporary)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    try:
        os.rename(temporary, folder)
    except OSError:
        # Another process published first: its snapshot is the run's.
        shutil.rmtree(temporary, ignore_errors=True)
        if not os.path.exists(os.path.join(folder, META_FILE)):
            raise


def _publish_file(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = _temporary_name(path)
    with open(temporary, "wb") as handle:
        handle.write(data)
    try:
        os.link(temporary, path)  # fails if present: the first one stays
    except FileExistsError:
        pass
    except OSError:  # pragma: no cover - a file system without hard links
        if not os.path.exists(path):
            os.replace(temporary, path)
            return
    os.unlink(temporary)
