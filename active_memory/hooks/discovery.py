"""The discovery file: how a client finds the running recall server (standard library only).

`serve` writes `{"host", "port", "pid", "token_file", "started_at"}` (mode 0600,
atomically) once it listens, and removes it on shutdown if it still names its own pid.
A file whose pid is no longer alive is stale and ignored, so a server killed with
SIGKILL never misleads a client for longer than one failed `kill(pid, 0)`.

This is a private file between two processes of the same version; it is read with the
standard library (no pydantic) because the command hook reads it on every tool call.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ServerAddress:
    """Where a live recall server listens and which token file it checks against."""

    host: str
    port: int
    pid: int
    token_file: str
    started_at: float


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists (ours or another user's)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def read_discovery(path: Path) -> ServerAddress | None:
    """The server recorded in `path`, or None if missing, malformed or its pid is dead."""
    try:
        raw = json.loads(path.read_bytes())
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


def write_discovery(path: Path, host: str, port: int, token_file: Path) -> ServerAddress:
    """Record this process as the live server (0600, temp file + rename)."""
    address = ServerAddress(host, port, os.getpid(), str(token_file), time.time())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(asdict(address), handle)
            handle.write("\n")
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return address


def remove_discovery(path: Path, pid: int | None = None) -> None:
    """Delete the discovery file if it still names `pid` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return
    if isinstance(raw, dict) and raw.get("pid") == pid:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
