"""Where Active Memory keeps its state (SPEC §7) and where the lesson store lives.

This module owns the state folder: `<zeroshot state dir>/active-memory`. Every part that
needs it (settings, recall, the hooks, the journal) asks `state_dir` or
`zeroshot_state_dir` here. It is on the hook's per-call path, so it imports only `os`
and `sys` when loaded (no `pathlib`, no `re`: those load inside the functions that
need them), and the store package's `__init__` loads nothing eagerly.

`--store` / ACTIVE_MEMORY_STORE override where the store lives.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

STORE_ENV = "ACTIVE_MEMORY_STORE"
STORE_FILE = "lessons.sqlite3"
STATE_FOLDER = "active-memory"
"""Active Memory's own folder inside zeroshot's state folder."""


def zeroshot_state_path(env: Mapping[str, str] | None = None, platform: str | None = None) -> str:
    """zeroshot's state folder as text: $ZEROSHOT_STATE_DIR, else the platform's user state
    folder (`%LOCALAPPDATA%\\zeroshot\\state`, `$XDG_STATE_HOME/zeroshot`,
    `~/.local/state/zeroshot`)."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    join = os.path.join
    if env.get("ZEROSHOT_STATE_DIR"):
        return env["ZEROSHOT_STATE_DIR"]
    if platform == "win32":
        local = env.get("LOCALAPPDATA") or join(os.path.expanduser("~"), "AppData", "Local")
        return join(local, "zeroshot", "state")
    if env.get("XDG_STATE_HOME"):
        return join(env["XDG_STATE_HOME"], "zeroshot")
    home = env.get("HOME") or os.path.expanduser("~")
    return join(home, ".local", "state", "zeroshot")


def state_dir(env: Mapping[str, str] | None = None, platform: str | None = None) -> str:
    """`<zeroshot state dir>/active-memory` (SPEC §7's folder), as text."""
    return os.path.join(zeroshot_state_path(env, platform), STATE_FOLDER)


def zeroshot_state_dir(env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """zeroshot's state folder (`zeroshot_state_path`) as a `Path`."""
    from pathlib import Path

    return Path(zeroshot_state_path(env, platform))


def default_store_path(env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """The default SQLite store: `<zeroshot state dir>/active-memory/lessons.sqlite3`."""
    return zeroshot_state_dir(env, platform) / STATE_FOLDER / STORE_FILE


JOURNAL_FOLDER = "postmortems"


def journal_folder(location: str, env: Mapping[str, str] | None = None) -> str:
    """Where the postmortem journal of the store at `location` lives, as text: the
    `postmortems` folder beside a SQLite file (for the default store that is
    `<state dir>/postmortems`), the state folder's for a PostgreSQL store or one in memory.

    The journal follows the store because it describes that store's publishes: a
    `--store /tmp/x/lessons.sqlite3` run never writes into the user's own state folder,
    and settling an interrupted entry asks the store that entry was published to."""
    if is_postgres_url(location) or location.startswith(":memory:") or not location:
        return os.path.join(state_dir(env), JOURNAL_FOLDER)
    return os.path.join(os.path.dirname(os.path.abspath(location)), JOURNAL_FOLDER)


WORKER_FOLDER = "worker"


def worker_folder(location: str, env: Mapping[str, str] | None = None) -> str:
    """Where the worker of the store at `location` keeps this machine's files (its lock,
    status, log, spend ledger and the spool of session ends that could not be queued):
    a `worker` folder beside a SQLite file, the state folder's for PostgreSQL (each
    machine has its own). It follows the store for the reason the journal does."""
    if is_postgres_url(location) or location.startswith(":memory:") or not location:
        return os.path.join(state_dir(env), WORKER_FOLDER)
    return os.path.join(os.path.dirname(os.path.abspath(location)), WORKER_FOLDER)


def store_key(location: str) -> str:
    """A file name for the store at `location` among others in one worker folder: the
    SQLite file's name, or the masked URL (never a password) of a PostgreSQL store."""
    from active_memory.file_names import safe_name

    if is_postgres_url(location):
        return safe_name(mask_url(location))
    return safe_name(os.path.basename(location) or "store")


def resolve_store_location(option: str | None, env: Mapping[str, str] | None = None) -> str:
    """The store to use: the `--store` option, else $ACTIVE_MEMORY_STORE, else the default."""
    env = os.environ if env is None else env
    if option:
        return option
    if env.get(STORE_ENV):
        return env[STORE_ENV]
    return str(default_store_path(env))


def is_postgres_url(location: str) -> bool:
    """True for `postgresql://` and `postgres://` URLs."""
    return location.startswith(("postgresql://", "postgres://"))


def mask_url(location: str) -> str:
    """`location` safe to print: a URL's password becomes `***` (`user:***@host/db`)."""
    if not is_postgres_url(location):
        return location
    import re

    scheme, _, rest = location.partition("://")
    authority, slash, tail = rest.partition("/")
    userinfo, at, hostport = authority.rpartition("@")
    if at and ":" in userinfo:
        user = userinfo.split(":", 1)[0]
        authority = f"{user}:***@{hostport}"
    masked = f"{scheme}://{authority}{slash}{tail}"
    # A password may also ride in the query string (`?password=...`).
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", masked)
