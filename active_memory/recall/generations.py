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
- `CURRENT`: marshal `{"generation": file name, "checked": store version, "since": the
  scope's latest change when it was built, "format": index format}`: the generation
  holds the scope exactly at every store version from `since` to `checked`. For a
  SQLite store optionally `"stamp"`/`"stamped"`: what the store's files were when
  `checked` was read (see "Stamps" below). A `CURRENT` of another format reads as no
  generation yet, so the scope is built again from a complete read;
- `builder.lock`: held by the one process building the scope (building.py), for as long
  as it builds; `current.lock`: held for the moment `CURRENT` is replaced;
- `build/`: a complete build's work, resumed if that build was killed (full_build.py).

Building (building.py) reads only the changes since the version `CURRENT` was checked
at (one indexed query; none in the steady state), makes the next generation from the
current one and those changes (incremental.py) or a complete one (full_build.py),
writes it to a temporary file and renames it in, then replaces `CURRENT`. A crash at
any point leaves the previous `CURRENT` and its generation in use; a torn temporary
file is never read and is collected later. The PostgreSQL store works the same way:
these files are its local cache, keyed by its version.

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

    from active_memory.store.changes import ScopeKey

CURRENT_FILE = "CURRENT"
LOCK_FILE = "current.lock"
BUILDER_LOCK = "builder.lock"
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


class Pointer:
    """`CURRENT` read: the generation, the versions it holds the scope at (`since` to
    `checked`), and its stamp (None: none) with when it was taken."""

    __slots__ = ("checked", "generation", "since", "stamp", "stamped")

    def __init__(
        self, generation: str, checked: int, since: int, stamp: Stamp | None, stamped: float
    ) -> None:
        self.generation = generation
        self.checked = checked
        self.since = since
        self.stamp = stamp
        self.stamped = stamped

    def holds(self, version: int) -> bool:
        """Whether the generation is the scope exactly as it was at store `version`."""
        return self.since <= version <= self.checked


def read_current(folder: str) -> tuple[str, int] | None:
    """(generation file name, checked store version) of a scope, None before its first."""
    pointer = read_pointer(folder)
    return None if pointer is None else (pointer.generation, pointer.checked)


def read_pointer(folder: str) -> Pointer | None:
    """`CURRENT` whole (None: no generation of this format yet)."""
    data = read_bytes(os.path.join(folder, CURRENT_FILE))
    if data is None:
        return None
    try:
        value = marshal.loads(data)
        name, checked = value["generation"], value["checked"]
        since = value.get("since", checked)
        stamp, stamped = value.get("stamp"), value.get("stamped", 0.0)
    except (ValueError, EOFError, TypeError, KeyError, AttributeError) as exc:
        raise GenerationsCorrupt(f"{folder}: unreadable {CURRENT_FILE} ({exc})") from None
    if not isinstance(name, str) or not isinstance(checked, int) or not isinstance(since, int):
        raise GenerationsCorrupt(f"{folder}: unreadable {CURRENT_FILE}")
    if value.get("format") != FORMAT:
        return None  # built by an older version: build it again
    if not isinstance(stamp, tuple) or not isinstance(stamped, float):
        stamp = None  # an older writer's pointer, or a damaged stamp: read the store
    return Pointer(name, checked, since, stamp, stamped)


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


def quiet_stamp(stamp: Any) -> tuple[Stamp, float] | None:
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


def stamp_holds(pointer: Pointer, stamp: Any) -> bool:
    """True when `CURRENT`'s stamp is recent and the store's files still match it."""
    if pointer.stamp is None or not 0.0 <= time.time() - pointer.stamped < STAMP_TRUST_SECONDS:
        return False
    return bool(stamp() == pointer.stamp)


class GenerationsCorrupt(Exception):
    """A scope's `CURRENT` pointer cannot be read (the call then delivers nothing)."""


def generation_name(version: int) -> str:
    """The file name of the generation built at store `version`."""
    return f"g{version:016x}.gen"


def pointer_bytes(name: str, checked: int, since: int, taken: tuple[Stamp, float] | None) -> bytes:
    """`CURRENT`'s bytes: the generation, the versions it holds, and its stamp."""
    value: dict[str, Any] = {"generation": name, "checked": checked, "since": since,
                             "format": FORMAT}  # fmt: skip
    if taken is not None:
        value["stamp"], value["stamped"] = taken
    return marshal.dumps(value)


def advance(folder: str, name: str, version: int, taken: tuple[Stamp, float] | None) -> None:
    """Record that generation `name` still holds the scope at `version` (and its stamp).

    Only a newer check replaces `CURRENT`, or an equal one that brings a newer stamp.
    Waits for `current.lock` only a moment (it is held for a rename): a busy lock skips
    the record, which is an optimisation (the next reader checks again).
    """
    try:
        with FileLock(os.path.join(folder, LOCK_FILE), timeout=0.2):
            latest = read_pointer(folder)
            if latest is None or latest.generation != name or latest.checked > version:
                return
            if latest.checked == version and (taken is None or latest.stamped >= taken[1]):
                return
            write_current(folder, pointer_bytes(name, version, latest.since, taken))
    except TimeoutError:
        pass


def replace_current(folder: str, name: str, version: int, since: int,
                    taken: tuple[Stamp, float] | None) -> bool:  # fmt: skip
    """Make generation `name` (the scope at versions `since`..`version`) current, unless
    `CURRENT` already names a newer check; whether it did."""
    with FileLock(os.path.join(folder, LOCK_FILE), timeout=5.0):
        latest = read_pointer(folder)
        if latest is not None and latest.checked > version:
            return False
        write_current(folder, pointer_bytes(name, version, since, taken))
    return True


def write_current(folder: str, pointer: bytes) -> None:
    """Replace `CURRENT` (not synced: a lost one after a machine crash costs a rebuild)."""
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
