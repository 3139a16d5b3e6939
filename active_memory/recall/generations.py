"""Recall generations on disk: built from the store's changes, shared, collected.

Time model. Nothing here has a clock of its own except two ages. The store's change
version is the only ordering: a generation holds one scope exactly as the store was at
one version, and a scope's `CURRENT` pointer says which generation that is and up to
which store version it was checked. A run pins a generation at its first call of that
scope (snapshot.py); pins never move. Time enters only in garbage collection: a
generation that is no longer current is deleted once its successor is `GRACE_SECONDS`
old (so a process that read the old `CURRENT` a moment ago can still pin it) and no pin
younger than `PIN_SECONDS` names it (a run that has not called for that long is over).
A build holds the scope's lock (a file lock, 5 s bound like the session ledger's).

Layout under `recall/generations/<store key>/<scope key>/` (keys: readable prefix plus
checksums of the store location and of the complete scope, so two stores or two
repositories sharing a graph never share a file):

- `g<store version, 16 hex>.gen`: one immutable generation (index.py format);
- `CURRENT`: marshal `{"generation": file name, "checked": store version, "format":
  index format}`, and for a SQLite store optionally `"stamp"`/`"stamped"`: what the
  store's files were when `checked` was read (see "Stamps" below). A `CURRENT` of
  another format (before the format was recorded: 2) reads as no generation yet, so the
  scope is rebuilt from a complete read, as at its first pin; runs pinned to the older
  file keep reading it (index.py reads format 2).

`refresh` brings a scope up to the store's version: it reads only the changes since the
version `CURRENT` was checked at (one indexed query; none in the steady state), builds
the next generation from the current one and those changes (generation.py), writes it
to a temporary file and renames it in, then replaces `CURRENT`. A crash at any point
leaves the previous `CURRENT` and its generation in use; a torn temporary file is never
read and is collected later. The PostgreSQL store works the same way: these files are
its local cache, keyed by its version.

Stamps (a SQLite store only). Most first calls of a run find the store unchanged since
`CURRENT` was checked, and opening SQLite to learn that costs a hook process `sqlite3`'s
import (about 3 ms on a quiet machine). So a check that read the store's version also
records the identity of the store's files, taken *before* its read transaction began
(`sqlite_stamp`: device, inode, size and times of the file and its `-wal`; every commit
writes one of them). A later pin whose own `sqlite_stamp` is equal knows no commit
happened since, so `checked` is still the store's version: it pins `CURRENT` without
reading the store. A stamp is recorded only when the files were last modified more than
`STAMP_QUIET_SECONDS` before it was taken (so a write in the same clock tick, or one in
flight, can never hide behind equal times: the racy-git rule) and is trusted for
`STAMP_TRUST_SECONDS` after it was taken; past that, or when anything differs, the pin
reads the store as before and stamps `CURRENT` again. A stamp can only make a pin skip a
read when nothing was written; it can never pin an older generation than a read would.
"""

from __future__ import annotations

import marshal
import os
import time
import zlib

from active_memory.atomic_files import write_atomically
from active_memory.file_lock import FileLock
from active_memory.file_names import safe_name
from active_memory.recall.files import read_bytes
from active_memory.recall.index import FORMAT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from active_memory.recall.index import BuiltIndex
    from active_memory.store.changes import ScopeChanges, ScopeKey

CURRENT_FILE = "CURRENT"
LOCK_FILE = "build.lock"
GRACE_SECONDS = 300.0
PIN_SECONDS = 7 * 24 * 3600.0
PIN_PREFIX = "pin-"


def _checksum(text: str) -> str:
    data = text.encode("utf-8", "surrogatepass")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def store_key(location: str) -> str:
    """The folder name of one store's generations (a checksum: a URL is never spelled).

    A path is made absolute and normalised first, so the writer and the hooks agree on
    it however each spelled it."""
    if "://" not in location:
        location = os.path.normpath(os.path.abspath(location))
    return "store-" + _checksum(location)


def scope_key(scope: ScopeKey) -> str:
    """The folder name of one scope: readable, and a checksum of everything that scoped it."""
    readable = (scope.repository or "") if scope.kind == "repository" else (scope.node or "")
    return f"{scope.kind}-{safe_name(readable)[:48]}-{_checksum(scope.name)}"


def scope_dir(recall_dir: str, location: str, scope: ScopeKey) -> str:
    """Where `scope`'s generations of the store at `location` live."""
    return os.path.join(recall_dir, "generations", store_key(location), scope_key(scope))


STAMP_QUIET_SECONDS = 2.0
"""A stamp is recorded only if the store's files were last modified this long before."""
STAMP_TRUST_SECONDS = 60.0
"""How long a recorded stamp lets pins skip reading the store (then one read again)."""

Stamp = tuple[int, ...]


def read_current(folder: str) -> tuple[str, int] | None:
    """(generation file name, checked store version) of a scope, None before its first."""
    pointer = _read_pointer(folder)
    return None if pointer is None else (pointer[0], pointer[1])


def _read_pointer(folder: str) -> tuple[str, int, Stamp | None, float] | None:
    """`CURRENT` whole: name, checked version, stamp (None: none) and when it was taken."""
    data = read_bytes(os.path.join(folder, CURRENT_FILE))
    if data is None:
        return None
    try:
        value = marshal.loads(data)
        name, checked = value["generation"], value["checked"]
        stamp, stamped = value.get("stamp"), value.get("stamped", 0.0)
    except (ValueError, EOFError, TypeError, KeyError, AttributeError) as exc:
        raise GenerationsCorrupt(f"{folder}: unreadable {CURRENT_FILE} ({exc})") from None
    if not isinstance(name, str) or not isinstance(checked, int):
        raise GenerationsCorrupt(f"{folder}: unreadable {CURRENT_FILE}")
    if value.get("format") != FORMAT:
        return None  # built by an older version: rebuild (the old file stays readable)
    if not isinstance(stamp, tuple) or not isinstance(stamped, float):
        stamp = None  # an older writer's pointer, or a damaged stamp: read the store
    return name, checked, stamp, stamped


def sqlite_stamp(location: str) -> Stamp | None:
    """The identity of the SQLite store's files now (None: they cannot be looked at).

    Device, inode, size, mtime and ctime (ns) of the file, and the same but ctime of its
    `-wal` (zeros when it does not exist): a commit writes the `-wal` (or, without WAL,
    the file), a checkpoint the file, a restore or re-creation makes another inode, and
    the file's ctime moves even when a copy kept its mtime. The `-wal`'s ctime is left
    out (stored as 0): a read-only reader run as root `fchown`s it on every open.
    """
    values: list[int] = []
    for path in (location, location + "-wal"):
        try:
            info = os.stat(path)
        except FileNotFoundError:
            values += (0, 0, 0, 0, 0)
            continue
        except OSError:
            return None
        changed = info.st_ctime_ns if path is location else 0
        values += (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, changed)
    return tuple(values)


def _quiet_stamp(stamp: Any) -> tuple[Stamp, float] | None:
    """(stamp, when) taken now, if the store's files have been quiet long enough."""
    if stamp is None:
        return None
    now = time.time()
    taken = stamp()
    if taken is None:
        return None
    newest = max(taken[3::5] + taken[4::5])  # every mtime and ctime
    if newest > (now - STAMP_QUIET_SECONDS) * 1e9:
        return None  # written a moment ago: a write in the same clock tick could hide
    return taken, now


def _stamp_holds(pointer: tuple[str, int, Stamp | None, float], stamp: Any) -> bool:
    """True when `CURRENT`'s stamp is recent and the store's files still match it."""
    recorded, stamped = pointer[2], pointer[3]
    if recorded is None or not 0.0 <= time.time() - stamped < STAMP_TRUST_SECONDS:
        return False
    return bool(stamp() == recorded)


class GenerationsCorrupt(Exception):
    """A scope's `CURRENT` pointer cannot be read (the call then delivers nothing)."""


def generation_name(version: int) -> str:
    """The file name of the generation built at store `version`."""
    return f"g{version:016x}.gen"


BUILD_LOCK_SECONDS = 120.0
"""How long a detached builder waits for the scope's lock (a hook waits 5 s)."""


def refresh(
    recall_dir: str,
    location: str,
    scope: ScopeKey,
    read: Any,
    *,
    write: bool = True,
    lock_seconds: float = 5.0,
    stamp: Any = None,
) -> tuple[str, bytes | None]:
    """`scope`'s generation at the store's current version: (file path, or bytes in memory).

    `read(scope, since)` returns the store's `ScopeChanges`. With `write=False` (a
    look-only recall) a generation that would have to be built is returned as bytes
    instead of being written. Returns the path of the current generation otherwise.
    `stamp()` (a SQLite store: `sqlite_stamp` of it) lets an unchanged store go unread
    (module docstring, "Stamps").
    """
    folder = scope_dir(recall_dir, location, scope)
    pointer = _read_pointer(folder)
    if stamp is not None and pointer is not None and _stamp_holds(pointer, stamp):
        return os.path.join(folder, pointer[0]), None  # nothing written since `checked`
    current = None if pointer is None else (pointer[0], pointer[1])
    taken = _quiet_stamp(stamp)  # before the read: it certifies what the read returns
    changes = read(scope, current[1] if current is not None else None)
    reset = current is not None and changes.version < current[1]
    if reset:
        # A store that went back in time is another store at the same place (recreated,
        # restored from a backup): build from a full read, never from the old files.
        current, changes = None, read(scope, None)
    if current is not None and not changes.rows:
        if write and (changes.version > current[1] or taken is not None):
            _advance(folder, current[0], changes.version, taken)
        return os.path.join(folder, current[0]), None
    if not write:
        return "", _build(folder, current, changes, scope).to_bytes()
    with FileLock(os.path.join(folder, LOCK_FILE), timeout=lock_seconds):
        latest = None if reset else read_current(folder)
        if latest is not None and latest[1] >= changes.version:
            return os.path.join(folder, latest[0]), None  # built while we waited
        if latest != current:  # moved on while we waited: read from there instead
            current, changes = latest, read(scope, latest[1] if latest is not None else None)
        built = _build(folder, current, changes, scope)
        name = generation_name(changes.version)
        path = os.path.join(folder, name)
        _write(path, built)
        _write_current(folder, _pointer(name, changes.version, taken))
        collect(recall_dir, folder)
    return path, None


def _pointer(name: str, checked: int, taken: tuple[Stamp, float] | None) -> bytes:
    """`CURRENT`'s bytes: the generation, the version it was checked at, and its stamp."""
    value: dict[str, Any] = {"generation": name, "checked": checked, "format": FORMAT}
    if taken is not None:
        value["stamp"], value["stamped"] = taken
    return marshal.dumps(value)


def refresh_known(recall_dir: str, location: str, read: Any) -> list[str]:
    """Bring every scope of the store at `location` that has generations here up to date.

    Called after a write session that changed the store's version (the command line
    subscribes it to the store's announcement), so a run's first call finds its
    generation current and only pins. Scopes nobody recalled yet are left to their first
    pin. Returns the generation paths now current.
    """
    from active_memory.recall.index import SnapshotIndex
    from active_memory.store.changes import ScopeKey

    base = os.path.join(recall_dir, "generations", store_key(location))
    try:
        folders = sorted(os.listdir(base))
    except FileNotFoundError:
        return []
    current: list[str] = []
    for name in folders:
        pointer = read_current(os.path.join(base, name))
        if pointer is None:
            continue
        scope = SnapshotIndex.open(os.path.join(base, name, pointer[0])).meta.get("scope", {})
        kind = scope.get("kind")
        if kind not in ("repository", "graph"):
            continue
        key = ScopeKey(
            kind,
            repository=scope.get("repository"),
            graph_hash=scope.get("graph_hash"),
            node=scope.get("node"),
        )
        current.append(refresh(recall_dir, location, key, read)[0])
    return current


def _advance(folder: str, name: str, version: int, taken: tuple[Stamp, float] | None) -> None:
    """Record that generation `name` is still the scope at `version` (and its stamp).

    Only a newer check replaces `CURRENT`, or an equal one that brings a newer stamp.
    Stamping alone is an optimisation: if the scope's lock is busy (a build), skip it.
    """
    try:
        with FileLock(os.path.join(folder, LOCK_FILE), timeout=5.0 if taken is None else 0.2):
            latest = _read_pointer(folder)
            if latest is None or latest[0] != name or latest[1] > version:
                return
            if latest[1] == version and (taken is None or latest[3] >= taken[1]):
                return
            _write_current(folder, _pointer(name, version, taken))
    except TimeoutError:
        if taken is None:
            raise


def _build(
    folder: str, current: tuple[str, int] | None, changes: ScopeChanges, scope: ScopeKey
) -> BuiltIndex:
    from active_memory.recall.generation import build
    from active_memory.recall.index import SnapshotIndex

    previous = None
    if current is not None and not changes.full:
        previous = SnapshotIndex.open(os.path.join(folder, current[0]))
    header = {
        "kind": scope.kind,
        "repository": scope.repository,
        "graph_hash": scope.graph_hash,
        "node": scope.node,
        "version": changes.version,
    }
    return build(previous, changes.rows, header, matched=scope.kind == "repository")


def _write(path: str, built: BuiltIndex) -> None:
    """Write the generation to a temporary file, flush it to disk, rename it in."""
    write_atomically(path, built.chunks(), mode=0o600)


def _write_current(folder: str, pointer: bytes) -> None:
    # Not synced: a lost `CURRENT` after a machine crash only costs a rebuild.
    write_atomically(os.path.join(folder, CURRENT_FILE), pointer, sync=False)


def collect(recall_dir: str, folder: str, *, now: float | None = None) -> list[str]:
    """Delete the scope's generations nothing needs any more; returns what was deleted.

    Kept: the current one; one whose successor is younger than `GRACE_SECONDS`; one a
    pin younger than `PIN_SECONDS` names. Temporary files older than the grace go too.
    """
    now = time.time() if now is None else now
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    current = read_current(folder)
    generations = [name for name in names if name.endswith(".gen")]
    pinned = _pinned(recall_dir, now)
    removed: list[str] = []
    for position, name in enumerate(generations):
        if current is not None and name == current[0]:
            continue
        successor = generations[position + 1] if position + 1 < len(generations) else None
        if successor is None or _age(os.path.join(folder, successor), now) < GRACE_SECONDS:
            continue
        if os.path.join(folder, name) in pinned:
            continue
        removed.append(name)
    removed += [
        name
        for name in names
        if name.endswith(".tmp") and _age(os.path.join(folder, name), now) > GRACE_SECONDS
    ]
    for name in removed:
        try:  # noqa: SIM105 - another collector may have been first
            os.unlink(os.path.join(folder, name))
        except FileNotFoundError:
            pass
    return removed


def _age(path: str, now: float) -> float:
    try:
        return now - os.path.getmtime(path)
    except OSError:
        return 0.0


def _pinned(recall_dir: str, now: float) -> set[str]:
    """Every generation path a live pin names."""
    runs = os.path.join(recall_dir, "runs")
    found: set[str] = set()
    try:
        run_names = os.listdir(runs)
    except FileNotFoundError:
        return found
    for run in run_names:
        try:
            entries = os.listdir(os.path.join(runs, run))
        except (NotADirectoryError, FileNotFoundError):
            continue
        for entry in entries:
            if not entry.startswith(PIN_PREFIX):
                continue
            pin = os.path.join(runs, run, entry)
            if _age(pin, now) > PIN_SECONDS:
                continue
            data = read_bytes(pin)
            if data is not None:
                found.add(os.path.join(recall_dir, data.decode("utf-8", "replace")))
    return found


def pin_name(location: str, scope: ScopeKey) -> str:
    """The file (in a run's folder) that pins `scope` of the store at `location`."""
    return f"{PIN_PREFIX}{store_key(location)}-{scope_key(scope)}"
