"""Bringing a scope's generation up to the store: who builds, from what, under which lock.

Time model. The store's change version orders everything; a build holds the scope's
`builder.lock` for as long as it runs (seconds for a few changes, a minute or two for a
complete build of a million lessons), so only one process builds a scope at a time. It
never holds `current.lock` for more than the rename of `CURRENT`, which is all a hook or
`serve` ever waits for (0.2 s at most, else it skips the optional record). Nobody else
waits for a builder: hooks and `serve` answer from the last good generation, or for a
run that needs a newer one, straight from the store (direct.py), while it builds.

`refresh` is one step: read the changes since `CURRENT` was checked (none in the steady
state: `CURRENT` is only advanced), make the next generation incrementally when it can
(incremental.py) or completely (full_build.py, streamed and resumable), make it current,
collect what nobody needs. `settle` repeats it until the store did not move during the
last step, and after letting go of the lock looks once more, so a change committed while
it built is never left for nobody: whoever saw it found the lock taken and relied on
this last look.

Sources (sources.py): a SQLite store is read with the standard library; a PostgreSQL
store (or a SQLite one not yet migrated) through the full store. A caller may also pass
`read(scope, since) -> ScopeChanges` (tests, a store in memory).
"""

from __future__ import annotations

import os

from active_memory.file_lock import FileLock
from active_memory.recall import full_build, incremental
from active_memory.recall.generations import (
    BUILDER_LOCK,
    advance,
    collect,
    generation_name,
    quiet_stamp,
    read_pointer,
    replace_current,
    scope_dir,
    stamp_holds,
)
from active_memory.recall.index import SnapshotIndex
from active_memory.recall.sources import ReadSource, Source, migrate, source_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from active_memory.recall.generations import Pointer
    from active_memory.store.changes import ScopeChanges, ScopeKey

BUILD_LOCK_SECONDS = 120.0
"""How long an in-call build (a command, a test) waits for a builder that is running."""


class NeedsCompleteBuild(Exception):
    """The next generation must be built complete, and the caller does not do that."""


def refresh(
    recall_dir: str,
    location: str,
    scope: ScopeKey,
    source: Source | Callable[..., ScopeChanges],
    *,
    write: bool = True,
    lock_seconds: float = BUILD_LOCK_SECONDS,
    stamp: Any = None,
    complete: bool = True,
    progress: Callable[[str], None] | None = None,
    hold_lock: bool = True,
) -> str:
    """`scope`'s generation at the store's current version; its path.

    Builds the next one when the store changed (incremental, or complete unless
    `complete=False`: then `NeedsCompleteBuild`). With `write=False` (a look-only
    recall) a generation that would have to be built is written to a throwaway file
    (`….tmp`, which the caller deletes once it has opened it) and `CURRENT` stays.
    `stamp()` (a SQLite store: `sqlite_stamp` of it) lets an unchanged store go unread.
    A build takes the scope's builder lock (waiting up to `lock_seconds`) unless the
    caller holds it (`hold_lock=False`).
    """
    if not isinstance(source, Source):
        source = ReadSource(scope, scope.kind == "repository", source)
    folder = scope_dir(recall_dir, location, scope)
    pointer = read_pointer(folder)
    if stamp is not None and pointer is not None and stamp_holds(pointer, stamp):
        return os.path.join(folder, pointer.generation)  # nothing written since `checked`
    taken = quiet_stamp(stamp)  # before the read: it certifies what the read returns
    head = None
    if pointer is not None:
        # One read: in the steady state it returns no row; else the rows to build from.
        head = source.changes(pointer.checked, limit=incremental.MAX_ROWS + 1)
        if _holds_now(pointer, head):
            if write and (head.version > pointer.checked or taken is not None):
                advance(folder, pointer.generation, head.version, taken)
            return os.path.join(folder, pointer.generation)
    if not write:
        return _build(folder, pointer, source, complete, progress, head, throwaway=True)[0]
    read_at = pointer.checked if pointer is not None else None
    if not hold_lock:
        return _build_current(recall_dir, folder, source, complete, progress, taken,
                              (read_at, head))  # fmt: skip
    with FileLock(os.path.join(folder, BUILDER_LOCK), timeout=lock_seconds):
        return _build_current(recall_dir, folder, source, complete, progress, taken,
                              (read_at, head))  # fmt: skip


def _holds_now(pointer: Pointer, head: ScopeChanges) -> bool:
    """Whether the pointer's generation is the scope at the version `head` was read at:
    the store did not go back, and the scope's latest change is one it holds."""
    return bool(head.version >= pointer.checked and head.latest <= pointer.checked)


def _build_current(
    recall_dir: str,
    folder: str,
    source: Source,
    complete: bool,
    progress: Callable[[str], None] | None,
    taken: Any,
    read: tuple[int | None, ScopeChanges | None],
) -> str:
    """Build the next generation and make it current (the builder lock is held). `read`:
    the changes already read, and since which version (reused if `CURRENT` still is)."""
    pointer = read_pointer(folder)
    head = read[1] if read[0] == (pointer.checked if pointer else None) else None
    path, version, latest = _build(folder, pointer, source, complete, progress, head)
    if pointer is None or os.path.basename(path) != pointer.generation:
        replace_current(folder, os.path.basename(path), version, latest, taken)
        collect(recall_dir, folder)
    return path


def _build(
    folder: str,
    pointer: Pointer | None,
    source: Source,
    complete: bool,
    progress: Callable[[str], None] | None,
    head: ScopeChanges | None,
    *,
    throwaway: bool = False,
) -> tuple[str, int, int]:
    """Build the next generation of `folder`'s scope: (path, version, latest). A pointer
    already at the store's version (built while we waited) is returned as it is."""
    scope = source.scope
    meta = {"scope": {"kind": scope.kind, "repository": scope.repository,
                      "graph_hash": scope.graph_hash, "node": scope.node}}  # fmt: skip
    scratch = _scratch() if throwaway else ""

    def target(version: int) -> str:
        if throwaway:  # outside the state folder: a look-only recall writes nothing there
            return os.path.join(scratch, ".look-generation.tmp")
        return os.path.join(folder, generation_name(version))

    if pointer is not None:
        changes = head or source.changes(pointer.checked, limit=incremental.MAX_ROWS + 1)
        current = os.path.join(folder, pointer.generation)
        if _holds_now(pointer, changes):
            return current, pointer.checked, pointer.since  # up to date (built meanwhile)
        if changes.version >= pointer.checked and len(changes.rows) <= incremental.MAX_ROWS:
            path = target(changes.version)
            previous = SnapshotIndex.open(current)
            scoped = {**meta, "version": changes.version, "since": changes.latest}
            if incremental.build(previous, changes.rows, scoped, path, matched=source.matched):
                return path, changes.version, changes.latest
        # else: the store went back in time (another store at the same place), or too
        # much changed, or the incremental build declined: build it complete.
    if not complete:
        raise NeedsCompleteBuild(f"{scope.kind} {scope.repository or scope.node}")
    work = os.path.join(scratch or folder, "build")
    try:
        return full_build.build(work, source.reader(), meta, target, matched=source.matched,
                                progress=progress)  # fmt: skip
    except full_build.StoreWentBack:
        return full_build.build(work, source.reader(), meta, target, matched=source.matched,
                                progress=progress)  # fmt: skip


def _scratch() -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="active-memory-look-")


def settle(
    recall_dir: str,
    location: str,
    scope: ScopeKey,
    *,
    progress: Callable[[str], None] | None = None,
) -> str | None:
    """The background builder's work: build until the scope is current, then let go.

    Returns the current generation's path, or None when another builder holds the
    scope (it will settle it). Looks once more after letting go (module docstring).
    """
    folder = scope_dir(recall_dir, location, scope)
    from active_memory.recall.generations import sqlite_stamp

    stamp = None if "://" in location else (lambda: sqlite_stamp(location))
    if stamp is not None:
        migrate(location)
    path = None
    for _round in range(8):
        try:
            with FileLock(os.path.join(folder, BUILDER_LOCK), timeout=0):
                source = source_for(location, scope)
                while True:
                    path = refresh(recall_dir, location, scope, source, stamp=stamp,
                                   progress=progress, hold_lock=False)  # fmt: skip
                    if _current(folder, source):
                        break
        except TimeoutError:
            return path  # another builder has it; it looks again when it lets go
        if _current(folder, source_for(location, scope)):
            return path
    return path


def _current(folder: str, source: Source) -> bool:
    pointer = read_pointer(folder)
    if pointer is None:
        return False
    head = source.changes(pointer.checked, limit=0)
    return head.latest <= pointer.checked and head.version >= pointer.checked


def known_scopes(recall_dir: str, location: str) -> list[tuple[ScopeKey, Any]]:
    """Every scope of the store at `location` that has a generation here, with its
    `CURRENT` (generations.Pointer)."""
    from active_memory.recall.generations import store_key
    from active_memory.store.changes import ScopeKey

    base = os.path.join(recall_dir, "generations", store_key(location))
    try:
        folders = sorted(os.listdir(base))
    except FileNotFoundError:
        return []
    found: list[tuple[ScopeKey, Any]] = []
    for name in folders:
        try:
            pointer = read_pointer(os.path.join(base, name))
            if pointer is None:
                continue
            index = SnapshotIndex.open(os.path.join(base, name, pointer.generation))
        except Exception:  # an unreadable scope is built again at its next first call
            continue
        scope = index.meta.get("scope", {})
        if scope.get("kind") in ("repository", "graph"):
            key = ScopeKey(scope["kind"], repository=scope.get("repository"),
                           graph_hash=scope.get("graph_hash"), node=scope.get("node"))  # fmt: skip
            found.append((key, pointer))
    return found


def refresh_known(recall_dir: str, location: str, *, complete: bool = False) -> list[str]:
    """Bring every scope of the store at `location` that has generations here up to date.

    Called after a write session changed the store (the command line subscribes it to
    the store's announcement), so a run's first call finds its generation current and
    only pins. An incremental step is built here; one that must be complete is handed
    to the background builder (builder.py) unless `complete`, and so is a scope whose
    builder is busy. Scopes nobody recalled yet are left to their first call. Returns
    the generation paths now current.
    """
    from active_memory.recall.background import start_builder

    current: list[str] = []
    folder_of = {}
    for key, pointer in known_scopes(recall_dir, location):
        folder_of[key.name] = scope_dir(recall_dir, location, key)
        try:
            current.append(refresh(recall_dir, location, key, source_for(location, key),
                                   complete=complete, lock_seconds=0))  # fmt: skip
        except (NeedsCompleteBuild, TimeoutError):
            start_builder(recall_dir, location, key)  # never blocks the writer
            current.append(os.path.join(folder_of[key.name], pointer.generation))
    return current


def watch_store(recall_dir: str, location: str) -> list[ScopeKey]:
    """Ask the store at `location` for its version once, and start the builder of every
    scope known here whose generation was checked at an older one (`serve` does this
    every `background.POLL_SECONDS`, so another machine's publish reaches this one). The
    builder finds out whether the scope itself changed. Returns the scopes started."""
    from active_memory.recall.background import start_builder

    known = known_scopes(recall_dir, location)
    if not known:
        return []
    version = source_for(location, known[0][0]).changes(None, limit=0).version
    started: list[ScopeKey] = []
    for key, pointer in known:
        if version != pointer.checked and start_builder(recall_dir, location, key):
            started.append(key)
    return started
