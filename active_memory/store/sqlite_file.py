"""The SQLite store's file, apart from SQLite: what is checked before SQLite touches a
path, the owner-only permissions of the store and its journals, and the claim a backup
takes on its destination."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from active_memory.errors import StoreCorrupt, StoreMissing, StoreUnavailable, UsageError
from active_memory.private import FOLDER_MODE, create_private, tighten
from active_memory.store.location import default_store_path

SQLITE_HEADER = b"SQLite format 3\x00"


def _note(message: str) -> None:
    # On stderr, where a person running a command sees it (stdout may be --json).
    import sys

    print(f"active-memory: note: {message}", file=sys.stderr)


OPEN_IN_THIS_PROCESS: dict[str, int] = {}
"""Store files this process holds SQLite connections to, by real path, and how many.

Reading such a file's header here would cost those connections their locks: closing any
descriptor of a file drops every POSIX lock this process holds on it, SQLite's included,
and another process may then take the store for unused and delete its WAL under them
(every later statement of theirs: "disk I/O error"). A file SQLite already has open here
was checked when it was first opened."""


_HEADER_TURN = threading.Lock()
"""Held while a header is read and while a connection is counted: a header read and the
opening of a connection to the same file never overlap (two stores opened at once in one
process, each in its own thread)."""


def held(path: Path) -> bool:
    """This process has the store at `path` open through SQLite."""
    return OPEN_IN_THIS_PROCESS.get(os.path.realpath(path), 0) > 0


def count_open(path: str, change: int) -> None:
    """A connection to the store file at `path` is about to open (+1; before SQLite opens
    it, so no header read here can start after) or closed or failed to open (-1)."""
    key = os.path.realpath(path)
    with _HEADER_TURN:
        left = OPEN_IN_THIS_PROCESS.get(key, 0) + change
        if left > 0:
            OPEN_IN_THIS_PROCESS[key] = left
        else:
            OPEN_IN_THIS_PROCESS.pop(key, None)


def _header(path: Path) -> bytes | None:
    """The first bytes of `path`, or None when SQLite has it open here (then it was
    checked when first opened, and reading it would drop SQLite's locks)."""
    with _HEADER_TURN:
        if held(path):
            return None
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_HEADER))


def checked_path(location: str | Path, create: bool) -> Path:
    """Refuse a path that is not a SQLite file before SQLite touches it."""
    path = Path(location).expanduser()
    if path.is_dir():
        raise StoreUnavailable(str(path), "is a folder; give the path of a store file")
    if path.exists():
        try:
            header = _header(path)
        except OSError as exc:
            raise StoreUnavailable(str(path), f"cannot read the store: {exc.strerror}") from None
        if header is None:
            return path
        if header and header != SQLITE_HEADER:
            raise StoreCorrupt(
                str(path),
                "is not a SQLite database; nothing was changed. "
                "Pass --store with an Active Memory store or a new path",
            )
        _tighten_store(path)
        return path
    if not create:
        if not path.parent.is_dir() and path.absolute() != default_store_path().absolute():
            # Not a store not made yet: a path that cannot be one (a typo, a missing mount).
            raise StoreUnavailable(
                str(path), f"no such folder {path.parent}; check --store or ACTIVE_MEMORY_STORE"
            )
        raise StoreMissing(str(path))
    try:
        path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        # SQLite gives its -wal and -shm files the store file's own permissions.
        with contextlib.suppress(FileExistsError):
            create_private(path)
    except OSError as exc:
        raise StoreUnavailable(str(path), f"cannot create it: {exc.strerror}") from None
    _tighten_store(path)
    return path


def _tighten_store(path: Path) -> None:
    """Store, journals and (for the default location) its folder: owner only."""
    for sibling in ("", "-wal", "-shm", "-journal"):
        tighten(f"{path}{sibling}", _note)
    if path.parent == default_store_path().parent:
        tighten(path.parent, _note)


def backup_destination(location: str | Path) -> Path:
    """Claim `location` for a backup with an exclusive create; a usage error if taken."""
    destination = Path(location).expanduser()
    if not destination.parent.is_dir():
        raise UsageError(f"{destination.parent} is not a folder; create it first")
    try:
        create_private(destination)
    except FileExistsError:
        raise UsageError(f"{destination} already exists; choose a new backup path") from None
    except OSError as exc:
        raise StoreUnavailable(
            str(destination), f"cannot create the backup: {exc.strerror or exc}"
        ) from None
    return destination


def release_claim(destination: Path) -> None:
    # Only our own empty claim is removed, never a file someone else put there.
    with contextlib.suppress(OSError):
        if destination.stat().st_size == 0:
            destination.unlink()
