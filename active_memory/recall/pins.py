"""What a run (or a bare provider session) recalls: one store version per scope, pinned at
its first call of that scope and kept for the whole run (SPEC §8).

A pin is one small file in `recall/runs/<run key>/`, created only if absent (hard-linked
into place), so concurrent first calls agree on one pin: a loser reads the winner's.
It names either

- a generation (`generations/…/g….gen`): the run reads that immutable file; or
- a store version, `at:<version>`, when the scope had no generation holding the store
  at the run's first call (none built yet, or the store changed since). The run then
  reads the lessons of that version straight from the SQLite store (direct.py) while the
  background builder makes the generation; as soon as a generation holds the scope at
  that version (`CURRENT`'s `since` ≤ version ≤ `checked`), the pin is rewritten to name
  it. That rewrite is the only change a pin ever sees, and it never changes what the
  run recalls: the generation holds exactly the version the run pinned. If the scope
  changed after the pinned version before its generation was built, no generation
  will ever hold it: the run keeps reading its version from the store (a lesson changed
  since is then left out, never shown in a newer revision).

Who builds: with `BUILD_IN_CALL` (the default: commands, tests, a library caller) a
first call that finds the generation missing or behind builds it before answering.
The command hook and `serve` set it to False: they never build (the caller is a tool
call, and a complete build of a large scope takes minutes); they start the background
builder (builder.py) and pin the version.

A PostgreSQL store is never read on the tool call's path: a hook pins the scope's local
generation as it is (and starts the builder at most every `background.POLL_SECONDS` to
ask the store for news); with no local generation yet the call gets nothing
(`GenerationPending`) until the builder made one.
"""

from __future__ import annotations

import os

from active_memory.recall.files import read_bytes
from active_memory.recall.generations import pin_name, read_pointer, scope_dir
from active_memory.recall.records import run_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from active_memory.recall.types import RecallContext
    from active_memory.store.changes import ScopeKey

BUILD_IN_CALL = True
"""False in the command hook and `serve`: a tool call never waits for a build."""

FREEZE_RETRY_SECONDS = 30.0
FREEZE_FAILED_FILE = "pin-failed.txt"
AT = "at:"


class GenerationPending(Exception):
    """The scope has no generation yet and its store cannot be read on this path (a
    PostgreSQL store in a hook): this call gets no lessons."""


class SnapshotUnavailable(Exception):
    """The store could not be read a moment ago; recall waits before retrying."""


class Pending:
    """A run pinned to a store version that no generation holds yet."""

    __slots__ = ("location", "scope", "version")

    def __init__(self, version: int, location: str, scope: ScopeKey) -> None:
        self.version = version
        self.location = location
        self.scope = scope


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


def pinned(context: RecallContext, scope: ScopeKey) -> str | Pending | None:
    """What the context's run pinned for `scope` (a generation path or a version), None
    before its first call of it."""
    path = pin_path(context, scope)
    data = read_bytes(path)
    if data is None:
        return None
    text = data.decode("utf-8", "replace")
    if text.startswith(AT) and text[len(AT) :].isdigit():
        return Pending(int(text[len(AT) :]), store_location(context), scope)
    if not _names_a_generation(text):
        # Pins are written unsynced (a run's first call stays cheap), so a power cut can
        # leave one empty or holding zeros. Drop it: the run pins again instead of
        # failing every later call.
        drop_pin(path, text)
        return None
    return os.path.join(context.recall_dir, text)


def _names_a_generation(relative: str) -> bool:
    """Whether a pin's text has the shape `_write_pin` gives it (checked without I/O)."""
    return (
        relative.startswith("generations" + os.sep)
        and relative.endswith(".gen")
        and ".." not in relative
        and "\x00" not in relative
        and "\ufffd" not in relative
    )


def pin(context: RecallContext, scope: ScopeKey) -> str | Pending:
    """The generation (path) or store version (`Pending`) of `scope` for the context's
    run: pinned now if it has none yet. A look-only context pins nothing: it gets the
    current generation (a throwaway file, `….tmp`, when one had to be built).

    Store errors propagate and are remembered for `FREEZE_RETRY_SECONDS`: until then the
    run's first calls fail fast with `SnapshotUnavailable`.
    """
    found = pinned(context, scope)
    if isinstance(found, str):
        return found
    location = store_location(context)
    folder = scope_dir(context.recall_dir, location, scope)
    if isinstance(found, Pending):
        if BUILD_IN_CALL and not context.dry_run:
            _pin_built(context, scope, location)  # builds, then settles the pin if it can
            found = pinned(context, scope)
            if not isinstance(found, Pending):
                return found if found is not None else pin(context, scope)
        return _settled(context, scope, found, folder)
    failure = os.path.join(run_dir(context.recall_dir, context.run_key), FREEZE_FAILED_FILE)
    if not context.dry_run:
        _check_recent_failure(failure)
    try:
        if BUILD_IN_CALL or context.dry_run:
            return _pin_built(context, scope, location)
        return _pin_without_building(context, scope, location, folder)
    except (GenerationPending, SnapshotUnavailable):
        raise
    except Exception as exc:
        if not context.dry_run:
            _remember_failure(failure, exc)
        raise


def _pin_built(context: RecallContext, scope: ScopeKey, location: str) -> str:
    """Build what is missing in this call, then pin the current generation."""
    from active_memory.recall.building import refresh
    from active_memory.recall.generations import sqlite_stamp
    from active_memory.recall.sources import source_for

    stamp = None if "://" in location else (lambda: sqlite_stamp(location))
    for _attempt in range(3):
        path = refresh(context.recall_dir, location, scope, source_for(location, scope),
                       write=not context.dry_run, stamp=stamp)  # fmt: skip
        if context.dry_run:
            return path
        winner = _write_pin(pin_path(context, scope), os.path.relpath(path, context.recall_dir))
        if winner.startswith(AT):
            found = pinned(context, scope)
            if isinstance(found, Pending):
                settled = _settled(context, scope, found, os.path.dirname(path))
                if isinstance(settled, str):
                    return settled
                raise GenerationPending("this run pinned a store version no generation holds")
        resolved = os.path.join(context.recall_dir, winner)
        if os.path.exists(resolved):
            return resolved
        # Collected between reading CURRENT and pinning (after a long stall): pin again.
        drop_pin(pin_path(context, scope), winner)
    from active_memory.recall.index import SnapshotCorrupt

    raise SnapshotCorrupt(location, "the current generation keeps disappearing")


def _pin_without_building(
    context: RecallContext, scope: ScopeKey, location: str, folder: str
) -> str | Pending:
    """Pin the current generation when it holds the store now, else the store's version
    (and start the builder). Reads the store only when `CURRENT`'s stamp fails."""
    from active_memory.recall.background import poll_due, start_builder
    from active_memory.recall.generations import advance, quiet_stamp, sqlite_stamp, stamp_holds

    pointer = read_pointer(folder)
    if "://" in location:  # PostgreSQL: never the network here
        if pointer is None or poll_due(context.recall_dir, location, scope):
            start_builder(context.recall_dir, location, scope)
        if pointer is None:
            raise GenerationPending(
                f"no generation of {scope.kind} {scope.repository or scope.node} yet: it is "
                "being built in the background; this run's calls get lessons once it is ready"
            )
        return _pin_generation(context, scope, os.path.join(folder, pointer.generation))

    def stamp() -> object:
        return sqlite_stamp(location)

    if pointer is not None and stamp_holds(pointer, stamp):
        return _pin_generation(context, scope, os.path.join(folder, pointer.generation))
    taken = quiet_stamp(stamp)
    from active_memory.store.changes import OldSchema, read_sqlite_changes

    try:
        head = read_sqlite_changes(location, scope, None, limit=0)
    except OldSchema:
        # A store from before change versions: the builder opens it with the full store
        # (which migrates it); a hook never does.
        start_builder(context.recall_dir, location, scope)
        raise GenerationPending(
            "the store predates change versions: it is being migrated"
        ) from None
    if pointer is not None and pointer.since <= head.latest <= pointer.checked <= head.version:
        advance(folder, pointer.generation, head.version, taken)
        return _pin_generation(context, scope, os.path.join(folder, pointer.generation))
    start_builder(context.recall_dir, location, scope)
    winner = _write_pin(pin_path(context, scope), f"{AT}{head.version}")
    found = pinned(context, scope)
    if isinstance(found, (str, Pending)):
        return found
    raise GenerationPending(f"unreadable pin {winner!r}")


def _pin_generation(context: RecallContext, scope: ScopeKey, path: str) -> str | Pending:
    """Pin the generation at `path` (or whatever a concurrent first call pinned)."""
    _write_pin(pin_path(context, scope), os.path.relpath(path, context.recall_dir))
    found = pinned(context, scope)
    if found is None:
        raise GenerationPending("the pin could not be read back")
    return found


def _settled(
    context: RecallContext, scope: ScopeKey, pending: Pending, folder: str
) -> str | Pending:
    """The generation holding a pending run's version, once there is one (the pin then
    names it), else the pending version itself."""
    pointer = read_pointer(folder)
    if pointer is not None and pointer.holds(pending.version):
        path = os.path.join(folder, pointer.generation)
        settle_pin(context, scope, path)
        return path
    return pending


def settle_pin(context: RecallContext, scope: ScopeKey, path: str) -> None:
    """Rewrite a pending run's pin to name generation `path`, which holds its version."""
    from active_memory.atomic_files import write_atomically

    if not context.dry_run:
        relative = os.path.relpath(path, context.recall_dir)
        write_atomically(pin_path(context, scope), relative, sync=False)


def _write_pin(path: str, text: str) -> str:
    """Create the pin if absent; returns what the pin holds (ours or the winner's)."""
    from active_memory.atomic_files import write_atomically

    try:  # noqa: SIM105 - contextlib would cost the hook process an import
        write_atomically(path, text, sync=False, replace=False)  # the first pin stays
    except FileExistsError:
        pass
    data = read_bytes(path)
    return text if data is None else data.decode("utf-8", "replace")


def drop_pin(path: str, text: str) -> None:
    """Remove the pin at `path` if it still holds `text`."""
    data = read_bytes(path)
    if data is not None and data.decode("utf-8", "replace") == text:
        try:  # noqa: SIM105 - contextlib would cost the hook process an import
            os.unlink(path)
        except FileNotFoundError:
            pass


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
