"""Where the lesson store lives (SPEC §7), and how `--store` / ACTIVE_MEMORY_STORE override it."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

STORE_ENV = "ACTIVE_MEMORY_STORE"
STORE_FILE = "lessons.sqlite3"


def zeroshot_state_dir(env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """zeroshot's state folder: $ZEROSHOT_STATE_DIR, else the platform's user state folder."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if env.get("ZEROSHOT_STATE_DIR"):
        return Path(env["ZEROSHOT_STATE_DIR"])
    if platform == "win32":
        base = env.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "zeroshot" / "state"
    if env.get("XDG_STATE_HOME"):
        return Path(env["XDG_STATE_HOME"]) / "zeroshot"
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".local" / "state" / "zeroshot"


def default_store_path(env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """The default SQLite store: `<zeroshot state dir>/active-memory/lessons.sqlite3`."""
    return zeroshot_state_dir(env, platform) / "active-memory" / STORE_FILE


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
    scheme, _, rest = location.partition("://")
    authority, slash, tail = rest.partition("/")
    userinfo, at, hostport = authority.rpartition("@")
    if at and ":" in userinfo:
        user = userinfo.split(":", 1)[0]
        authority = f"{user}:***@{hostport}"
    masked = f"{scheme}://{authority}{slash}{tail}"
    # A password may also ride in the query string (`?password=...`).
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", masked)
