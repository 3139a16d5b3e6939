"""What a run (or a bare provider session) may recall: the generations it pinned.

A run key pins one generation per scope (its repository; each graph node it runs, keyed
by graph hash, node and repository) at its first call of that scope, and keeps it for
the whole run: lessons published later reach only runs that pin later. A pin is one
small file in `recall/runs/<run key>/` naming the generation (generations.py), created
only if absent (hard-linked into place), so concurrent first calls agree on one pin: a
loser reads the winner's. Pinning reads the store's version and the scope's changes
since its current generation (an indexed query that returns nothing in the steady
state); only when lessons changed does it build the next generation, from the previous
one and the changes.

The same generation file serves every run pinned to it and the recall server
(`SnapshotCache`, which maps each file once), so memory follows the generations in use,
not the number of runs. Reading a pinned generation is the standard library and
`marshal`; only a PostgreSQL store (or a SQLite one from before change versions) needs
the full store to read its changes.
"""

from __future__ import annotations

import os

from active_memory.recall.files import read_bytes
from active_memory.recall.generations import pin_name, refresh
from active_memory.recall.index import SnapshotCorrupt, SnapshotIndex
from active_memory.recall.records import run_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from active_memory.recall.types import RecallContext
    from active_memory.store.changes import ScopeChanges, ScopeKey

__all__ = ["SnapshotCorrupt", "SnapshotUnavailable"]

GraphCards = tuple[tuple[str, int, str], ...]
"""A node's graph lessons: (id, revision, rendered card) in lesson-ID order."""

FREEZE_RETRY_SECONDS = 30.0
FREEZE_FAILED_FILE = "pin-failed.txt"

DETACH_COMPLETE_BUILDS = False
"""Set by the command hook: a hook process hands a large complete build to a process of
its own instead of doing it inside the tool call (see `_detach_if_large`)."""

DETACH_ABOVE_LESSONS = 5000
BUILD_MARKER = "building"
BUILD_MARKER_SECONDS = 600.0


class GenerationPending(Exception):
    """The scope's first generation is being built by a process of its own; this call
    gets no lessons (a later call of the run pins the generation once it exists)."""


class SnapshotUnavailable(Exception):
    """The store could not be read a moment ago; recall waits before retrying."""


def repository_scope(context: RecallContext) -> ScopeKey | None:
    """The context's repository scope (None: no repository scope)."""
    if context.repository is None or "repository" not in context.scopes:
        return None
    from active_memory.store.changes import ScopeKey

    return ScopeKey("repository", repository=context.repository)


def graph_scope(context: RecallContext) -> ScopeKey | None:
    """The context's graph scope: graph hash, node and repository (None: no graph scope)."""
    if context.graph_hash is None or context.node is None or "graph" not in context.scopes:
        return None
    from active_memory.store.changes import ScopeKey

    return ScopeKey(
        "graph", graph_hash=context.graph_hash, node=context.node, repository=context.repository
    )


def store_location(context: RecallContext) -> str:
    """The store the context recalls from: `ACTIVE_MEMORY_STORE`, else SPEC §7's default
    (`<state dir>/lessons.sqlite3`, the rule `store.location` follows too; computed here so
    a hook process does not import it)."""
    return context.store or os.path.join(context.state_dir, "lessons.sqlite3")


def pin_path(context: RecallContext, scope: ScopeKey) -> str:
    """The pin file of `scope` in the context's run.

    Keyed by the store as the context names it (`ACTIVE_MEMORY_STORE`, else the default
    of its environment), so finding a pin resolves nothing; only pinning resolves it.
    """
    named = context.store or "<default store>"
    return os.path.join(run_dir(context.recall_dir, context.run_key), pin_name(named, scope))


def pinned(context: RecallContext, scope: ScopeKey) -> str | None:
    """The generation file the context's run pinned for `scope`, None before its first."""
    path = pin_path(context, scope)
    data = read_bytes(path)
    if data is None:
        return None
    relative = data.decode("utf-8", "replace")
    if not _names_a_generation(relative):
        # Pins are written unsynced (a run's first call stays cheap), so a power cut can
        # leave one empty or holding zeros. Drop it: the run pins the current generation
        # again instead of failing every later call.
        _drop_pin(path, relative)
        return None
    return os.path.join(context.recall_dir, relative)


def _names_a_generation(relative: str) -> bool:
    """Whether a pin's text has the shape `_write_pin` gives it (checked without I/O)."""
    return (
        relative.startswith("generations" + os.sep)
        and relative.endswith(".gen")
        and ".." not in relative
        and "\x00" not in relative
        and "\ufffd" not in relative
    )


def pin(context: RecallContext, scope: ScopeKey) -> str | bytes:
    """The generation of `scope` for the context's run: pinned now if it has none yet.

    Returns the generation file's path, or (look-only context, generation not built yet)
    its bytes. Store errors propagate and are remembered for `FREEZE_RETRY_SECONDS`: until
    then the run's first calls fail fast with `SnapshotUnavailable`.
    """
    found = pinned(context, scope)
    if found is not None:
        return found
    failure = os.path.join(run_dir(context.recall_dir, context.run_key), FREEZE_FAILED_FILE)
    if not context.dry_run:
        _check_recent_failure(failure)
    location = store_location(context)
    if DETACH_COMPLETE_BUILDS and not context.dry_run:
        _detach_if_large(context, location, scope)
    for _attempt in range(3):
        try:
            path, data = refresh(
                context.recall_dir, location, scope, _reader(location),
                write=not context.dry_run, stamp=_stamper(location),
            )  # fmt: skip
        except Exception as exc:
            if not context.dry_run:
                _remember_failure(failure, exc)
            raise
        if data is not None:
            return data
        if context.dry_run:
            return path
        winner = _write_pin(pin_path(context, scope), os.path.relpath(path, context.recall_dir))
        resolved = os.path.join(context.recall_dir, winner)
        if os.path.exists(resolved):
            return resolved
        # Collected between reading CURRENT and pinning (after a long stall): pin again.
        _drop_pin(pin_path(context, scope), winner)
    raise SnapshotCorrupt(location, "the current generation keeps disappearing")


def _detach_if_large(context: RecallContext, location: str, scope: ScopeKey) -> None:
    """Hand the first (complete) build of a large scope to a detached process.

    A complete build of 100,000 lessons takes seconds, longer than a harness waits for
    a hook; killed, it would keep nothing and the next call would start over. So a hook
    process that finds no generation for a scope of more than `DETACH_ABOVE_LESSONS`
    lessons starts `python -m active_memory.recall.builder` in a session of its own
    (once: a marker file, stale after `BUILD_MARKER_SECONDS`) and answers nothing
    (`GenerationPending`). Incremental builds are small and stay in the call.
    """
    from active_memory.recall.generations import read_current, scope_dir

    folder = scope_dir(context.recall_dir, location, scope)
    if read_current(folder) is not None or "://" in location:
        return
    from active_memory.store.changes import count_sqlite_scope

    if count_sqlite_scope(location, scope) <= DETACH_ABOVE_LESSONS:
        return
    import time

    marker = os.path.join(folder, BUILD_MARKER)
    try:
        fresh = time.time() - os.path.getmtime(marker) < BUILD_MARKER_SECONDS
    except OSError:
        fresh = False
    if not fresh:
        import subprocess
        import sys

        os.makedirs(folder, exist_ok=True)
        with open(marker, "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
        # Started by a shell that backgrounds it and exits at once (waited for here): the
        # builder outlives this call and this process by design, belongs to no process of
        # ours (nothing to reap: no zombie in `serve`, no running child left behind when a
        # hook process exits) and runs in a session of its own.
        subprocess.run(
            [
                "/bin/sh",
                "-c",
                '"$@" </dev/null >/dev/null 2>&1 &',
                "active-memory-builder",
                sys.executable,
                "-m",
                "active_memory.recall.builder",
                context.recall_dir,
                location,
                scope.kind,
                scope.repository or "",
                scope.graph_hash or "",
                scope.node or "",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            check=False,
            timeout=10,
        )
    raise GenerationPending(
        f"the first generation of {scope.kind} {scope.repository or scope.node} is being "
        "built in the background; this run's calls get lessons once it is ready"
    )


def build_detached(argv: list[str]) -> None:
    """The detached builder (`python -m active_memory.recall.builder …`)."""
    from active_memory.recall.generations import BUILD_LOCK_SECONDS, refresh, scope_dir
    from active_memory.store.changes import ScopeKey

    recall_dir, location, kind, repository, graph_hash, node = argv
    scope = ScopeKey(kind, repository=repository or None, graph_hash=graph_hash or None,
                     node=node or None)  # fmt: skip
    try:
        refresh(recall_dir, location, scope, _reader(location), lock_seconds=BUILD_LOCK_SECONDS,
                stamp=_stamper(location))  # fmt: skip
    finally:
        try:  # noqa: SIM105 - the marker only stops duplicate builders
            os.unlink(os.path.join(scope_dir(recall_dir, location, scope), BUILD_MARKER))
        except OSError:
            pass


def _write_pin(path: str, relative: str) -> str:
    """Create the pin if absent; returns what the pin names (ours or the winner's)."""
    from active_memory.atomic_files import write_atomically

    try:  # noqa: SIM105 - contextlib would cost the hook process an import
        write_atomically(path, relative, sync=False, replace=False)  # the first pin stays
    except FileExistsError:
        pass
    data = read_bytes(path)
    return relative if data is None else data.decode("utf-8", "replace")


def _drop_pin(path: str, relative: str) -> None:
    data = read_bytes(path)
    if data is not None and data.decode("utf-8", "replace") == relative:
        try:  # noqa: SIM105 - contextlib would cost the hook process an import
            os.unlink(path)
        except FileNotFoundError:
            pass


def refresh_after_write(location: str, env: Any = None) -> list[str]:
    """After a write changed the store at `location`: rebuild the generations of the
    scopes this machine recalls (recall.generations.refresh_known)."""
    from active_memory.recall.generations import refresh_known
    from active_memory.store.location import state_dir

    recall_dir = os.path.join(state_dir(env), "recall")
    return refresh_known(recall_dir, location, _reader(location))


def _stamper(location: str) -> Any:
    """`stamp()` of the store's files for a SQLite store (generations.py, "Stamps"); None
    for a PostgreSQL store, whose changes are always read."""
    if "://" in location:
        return None
    from active_memory.recall.generations import sqlite_stamp

    return lambda: sqlite_stamp(location)


def _reader(location: str) -> Any:
    """`read(scope, since) -> ScopeChanges` for the store at `location`."""

    def read(scope: ScopeKey, since: int | None) -> ScopeChanges:
        if "://" not in location:
            from active_memory.store.changes import OldSchema, read_sqlite_changes

            try:
                return read_sqlite_changes(location, scope, since)
            except OldSchema:
                pass  # the full store migrates it on open
        return _read_with_store(location, scope, since)

    return read


def _read_with_store(location: str, scope: ScopeKey, since: int | None) -> ScopeChanges:
    import anyio

    from active_memory.errors import StoreMissing
    from active_memory.store import open_store
    from active_memory.store.changes import ScopeChanges

    async def read() -> ScopeChanges:
        try:
            async with open_store(location, create=False) as opened:
                return await opened.changes(scope, since)
        except StoreMissing:
            return ScopeChanges(0, [], full=since is None)

    if not _in_event_loop():
        return anyio.run(read)
    # Called from inside an event loop (a server that did not move the call to a worker
    # thread): run the one-off read on a thread of its own rather than fail.
    import threading

    result: list[ScopeChanges] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            result.append(anyio.run(read))
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=work, name="active-memory-pin")
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
            f"reading this run's lessons from the store failed {age:.0f} s ago ({reason}); "
            f"next try after {FREEZE_RETRY_SECONDS:g} s"
        )


def _remember_failure(path: str, exc: Exception) -> None:
    from active_memory.atomic_files import write_atomically
    from active_memory.credential_gate import mask

    # An error may quote the store's URL (a PostgreSQL password): masked before it rests.
    reason = mask(f"{type(exc).__name__}: {' '.join(str(exc).split())}")[:500]
    # Remembering is an optimisation; the error itself still propagates.
    try:  # noqa: SIM105 - contextlib would cost the hook process an import
        write_atomically(path, reason, sync=False)
    except OSError:
        pass


def _open(found: str | bytes, *, mapped: bool) -> SnapshotIndex:
    if isinstance(found, bytes):
        return SnapshotIndex.from_bytes(found)
    return SnapshotIndex.open(found, mapped=mapped)


def repository_index(context: RecallContext) -> SnapshotIndex | None:
    """The repository index the context's run pinned (pinned now at its first call)."""
    scope = repository_scope(context)
    if scope is None:
        return None
    return _open(pin(context, scope), mapped=False)


def graph_cards(context: RecallContext) -> GraphCards:
    """The node's graph lessons the context's run pinned (pinned now at its first call)."""
    scope = graph_scope(context)
    if scope is None:
        return ()
    return _all_cards(_open(pin(context, scope), mapped=False))


def _all_cards(index: SnapshotIndex) -> GraphCards:
    return tuple(index.cards())


class SnapshotCache:
    """Opened generations kept in memory, for a process that answers many calls.

    The recall server keeps one; a hook process answers one call and needs none. Each
    generation file is mapped once and shared by every run pinned to it, so memory
    follows the generations in use, not the runs. Runs' pins (immutable once written)
    are remembered for at most `max_runs * 8` (run, scope) pairs; at most `max_runs * 2`
    generations stay open, least recently used dropped first. Safe to share between
    threads (dict operations are atomic; two threads opening one file both get a
    correct copy). Shards load on first use; `preload=True` decodes a whole generation
    when it is first opened.
    """

    def __init__(self, *, preload: bool = False, max_runs: int = 32) -> None:
        self.preload = preload
        self.max_runs = max_runs
        self._pins: dict[tuple[str, str, str], str] = {}
        self._indexes: dict[str, SnapshotIndex] = {}
        self._graphs: dict[str, GraphCards] = {}

    def _generation(self, context: RecallContext, scope: ScopeKey) -> SnapshotIndex:
        key = (context.recall_dir, context.run_key, scope.name)
        path = None if context.dry_run else self._pins.get(key)
        if path is None:
            found = pin(context, scope)
            if isinstance(found, bytes):
                return SnapshotIndex.from_bytes(found)
            path = found
            if not context.dry_run:
                self._pins[key] = path
                _trim(self._pins, self.max_runs * 8)
        index = self._indexes.pop(path, None)
        if index is None:
            index = SnapshotIndex.open(path, mapped=True)
            if self.preload:
                index.preload()
        self._indexes[path] = index  # (re)inserted last: most recently used
        _trim(self._indexes, self.max_runs * 2)
        return index

    def resident(self, context: RecallContext) -> bool:
        """True when answering the context's call reads no store and builds nothing: its
        run's repository generation is pinned and open here, and its graph scope (if
        any) pinned. The server answers such a call on its event loop."""
        if context.dry_run:
            return False
        scope = repository_scope(context)
        if scope is not None:
            path = self._pins.get((context.recall_dir, context.run_key, scope.name))
            if path is None or path not in self._indexes:
                return False
        scope = graph_scope(context)
        return scope is None or pinned(context, scope) is not None

    def repository_index(self, context: RecallContext) -> SnapshotIndex | None:
        """The repository generation the context's run pinned (pinned now if needed)."""
        scope = repository_scope(context)
        return None if scope is None else self._generation(context, scope)

    def graph_cards(self, context: RecallContext) -> GraphCards:
        """The graph generation the context's run pinned, as cards."""
        scope = graph_scope(context)
        if scope is None:
            return ()
        index = self._generation(context, scope)
        cards = self._graphs.get(index.directory)
        if cards is None:
            cards = _all_cards(index)
            if index.directory != "<memory>":
                self._graphs[index.directory] = cards
                _trim(self._graphs, self.max_runs * 2)
        return cards


def _trim(cache: dict[Any, Any], size: int) -> None:
    while len(cache) > size:
        try:
            del cache[next(iter(cache))]
        except (StopIteration, KeyError, RuntimeError):  # another thread trimmed it
            return
