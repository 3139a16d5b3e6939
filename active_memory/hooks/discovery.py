"""The discovery file: how a client finds the running recall server.

`serve` writes `{"host", "port", "pid", "token_file", "started_at"}` (mode 0600,
atomically) once it listens, and removes it on shutdown if it still names its own pid.
A file whose pid is no longer alive is stale and ignored, so a server killed with
SIGKILL never misleads a client for longer than one failed `kill(pid, 0)`.

This is a private file between two processes of the same version, read on the command
hook's path: it is parsed with `recall.jsonio` (no `json`, no pydantic, no dataclasses).
"""

from __future__ import annotations

import os
import time

from active_memory.processes import pid_alive

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ServerAddress:
    """Where a live recall server listens and which token file it checks against."""

    __slots__ = ("host", "pid", "port", "started_at", "token_file")

    def __init__(self, host: str, port: int, pid: int, token_file: str, started_at: float):
        self.host = host
        self.port = port
        self.pid = pid
        self.token_file = token_file
        self.started_at = started_at

    def to_json(self) -> dict[str, Any]:
        """The discovery file's content."""
        return {name: getattr(self, name) for name in _FIELDS}

    def __repr__(self) -> str:
        return f"ServerAddress({self.host}:{self.port}, pid {self.pid})"


_FIELDS = ("host", "port", "pid", "token_file", "started_at")


def read_discovery(path: str | os.PathLike[str]) -> ServerAddress | None:
    """The server recorded in `path`, or None if missing, malformed or its pid is dead."""
    from active_memory.recall import jsonio

    try:
        with open(path, "rb") as handle:
            raw = jsonio.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    host, port, pid = raw.get("host"), raw.get("port"), raw.get("pid")
    token_file, started_at = raw.get("token_file"), raw.get("started_at", 0.0)
    if not (
        isinstance(host, str)
        and isinstance(port, int)
        and not isinstance(port, bool)
        and 0 < port < 65536
        and isinstance(pid, int)
        and isinstance(token_file, str)
        and isinstance(started_at, int | float)
    ):
        return None
    if not pid_alive(pid):
        return None
    return ServerAddress(host, port, pid, token_file, float(started_at))


def write_discovery(
    path: str | os.PathLike[str], host: str, port: int, token_file: str | os.PathLike[str]
) -> ServerAddress:
    """Record this process as the live server (0600, temp file + rename)."""
    import json

    from active_memory.atomic_files import write_atomically

    address = ServerAddress(host, port, os.getpid(), os.fspath(token_file), time.time())
    write_atomically(path, json.dumps(address.to_json()) + "\n", mode=0o600)
    return address


def remove_discovery(path: str | os.PathLike[str], pid: int | None = None) -> None:
    """Delete the discovery file if it still names `pid` (default: this process)."""
    from active_memory.recall import jsonio

    pid = os.getpid() if pid is None else pid
    try:
        with open(path, "rb") as handle:
            raw = jsonio.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(raw, dict) and raw.get("pid") == pid:
        import contextlib

        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
