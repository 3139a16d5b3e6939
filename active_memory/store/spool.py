"""The spool: session ends that could not reach the store, kept on this machine until
one that can enqueues them (docs/queue.md, "When the store is away").

A session-end hook that cannot write its entry (a PostgreSQL server that is down or
unreachable, a SQLite store locked past the hook's bound, a disk error) writes the end
here instead of losing it: one JSON file per end in
`<worker folder>/spool/<store key>/` (store/location.py), owner-only (folder 0700, file
0600), its text screened for credentials (`credential_gate.mask`) like every file we
write. The next session-end hook, worker start (and a running worker, each time it
reaches the store) or `queue` that reaches the store enqueues them, oldest first, and
deletes each file once its entry is written.

Bounded: at most `MAX_SPOOLED` ends per store, each at most `MAX_FILE_BYTES`; past that
an end is not kept and the caller logs that it was lost. Two processes that flush at
once never enqueue one file twice: each takes a file by renaming it first (`.taken`),
and puts it back if the enqueue fails. A file left taken by a process that died is taken
again after `STALE_TAKEN` seconds.

Standard library only: the session-end hook imports it.
"""

from __future__ import annotations

import json
import os
import time

from active_memory.store.location import store_key, worker_folder
from active_memory.store.queue import SessionEnd

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

SPOOL_FOLDER = "spool"
MAX_SPOOLED = 1000
MAX_FILE_BYTES = 16 * 1024
STALE_TAKEN = 300.0
_SUFFIX = ".json"
_TAKEN = ".taken"
_FIELDS = ("harness", "session_id", "transcript", "cwd", "event", "model", "size", "host")


class SpoolFull(Exception):
    """The spool holds `MAX_SPOOLED` ends already: this one is not kept."""


def spool_dir(location: str, env: Mapping[str, str] | None = None) -> str:
    """The spool folder of the store at `location` on this machine."""
    return os.path.join(worker_folder(location, env), SPOOL_FOLDER, store_key(location))


def spool(location: str, end: SessionEnd, env: Mapping[str, str] | None = None) -> str:
    """Keep `end` for later; returns the file written. Raises `SpoolFull` or `OSError`."""
    from active_memory.atomic_files import write_atomically
    from active_memory.credential_gate import mask

    folder = spool_dir(location, env)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if len(_names(folder)) >= MAX_SPOOLED:
        raise SpoolFull(f"{folder} holds {MAX_SPOOLED} session ends already")
    record = {name: getattr(end, name) for name in _FIELDS}
    record = {k: mask(v) if isinstance(v, str) else v for k, v in record.items()}
    record["spooled_at"] = time.time()
    data = json.dumps(record, sort_keys=True).encode("utf-8")
    if len(data) > MAX_FILE_BYTES:
        raise SpoolFull(f"the session end is larger than {MAX_FILE_BYTES} bytes")
    # Named by time, so the oldest is enqueued first (a later end of one session wins).
    path = os.path.join(folder, f"{time.time_ns():020d}-{os.getpid()}{_SUFFIX}")
    write_atomically(path, data, mode=0o600, replace=False)
    return path


def spooled(location: str, env: Mapping[str, str] | None = None) -> int:
    """How many ends wait in the spool of the store at `location`."""
    return len(_names(spool_dir(location, env)))


class Taken:
    """A spooled end taken by this process: `done()` once its entry is written,
    `restore()` to leave it spooled."""

    __slots__ = ("end", "path", "spooled")

    def __init__(self, path: str, spooled: str, end: SessionEnd) -> None:
        self.path = path
        self.spooled = spooled
        self.end = end

    def done(self) -> None:
        """The entry is written: the file goes."""
        _unlink(self.path)

    def restore(self) -> None:
        """The entry is not written: the file is spooled again."""
        try:  # noqa: SIM105 - the hook path avoids contextlib
            os.rename(self.path, self.spooled)
        except OSError:
            pass


def take(
    location: str, env: Mapping[str, str] | None = None, *, limit: int = MAX_SPOOLED
) -> list[Taken]:
    """Take up to `limit` spooled ends of the store at `location`, oldest first. Every one
    must then be `done()` or `restore()`d; an unreadable file is dropped (it cannot become
    an entry)."""
    folder = spool_dir(location, env)
    names = _names(folder)
    if not names:
        return []
    _retake_stale(folder)
    found: list[Taken] = []
    for name in names[:limit]:
        path = os.path.join(folder, name)
        taken = f"{path}.{os.getpid()}{_TAKEN}"
        try:
            os.rename(path, taken)
            os.utime(taken)  # taken now: not stale for another flusher
        except OSError:
            continue  # another process took it
        end = _read(taken)
        if end is None:
            _unlink(taken)
            continue
        found.append(Taken(taken, path, end))
    return found


def settle(taken: Sequence[Taken], written: int) -> None:
    """The first `written` of `taken` are enqueued: drop them, spool the rest again."""
    for index, item in enumerate(taken):
        if index < written:
            item.done()
        else:
            item.restore()


def flush(
    location: str,
    write: Callable[[SessionEnd], object],
    env: Mapping[str, str] | None = None,
    *,
    deadline: float | None = None,
) -> tuple[int, int]:
    """Enqueue spooled ends through `write`, oldest first, until done or `deadline`
    (`time.monotonic()`); returns (enqueued, left). A `write` that raises stops the
    flush (the store is away again) and re-raises; that end stays spooled."""
    taken = take(location, env)
    written = 0
    try:
        for item in taken:
            if deadline is not None and time.monotonic() >= deadline:
                break
            write(item.end)
            written += 1
    finally:
        settle(taken, written)
    return written, spooled(location, env)


def _names(folder: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(folder) if n.endswith(_SUFFIX))
    except OSError:
        return []


def _retake_stale(folder: str) -> None:
    # A process that died between taking a file and enqueuing it: put the file back.
    try:
        names = [n for n in os.listdir(folder) if n.endswith(_TAKEN)]
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        try:
            if time.time() - os.path.getmtime(path) > STALE_TAKEN:
                os.rename(path, os.path.join(folder, name.split(_SUFFIX)[0] + _SUFFIX))
        except OSError:
            continue


def _read(path: str) -> SessionEnd | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        record = json.loads(data)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or len(data) > MAX_FILE_BYTES:
        return None
    try:
        values = {name: record[name] for name in _FIELDS if name in record}
        end = SessionEnd(**values)
    except TypeError:
        return None
    strings = (end.harness, end.session_id, end.transcript, end.cwd, end.event, end.model)
    if not all(isinstance(v, str) for v in strings) or not end.session_id:
        return None
    return end


def _unlink(path: str) -> None:
    try:  # noqa: SIM105 - the hook path avoids contextlib
        os.unlink(path)
    except OSError:
        pass
