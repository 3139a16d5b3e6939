"""Starting the background builder (recall/builder.py): once per scope at a time, and at
most every `POLL_SECONDS` for a PostgreSQL store's hooks.

Hooks and `serve` never build (docs/recall.md, "Nobody waits for a build"): when a
scope's generation is missing or behind the store, they answer from what they have and
call `start_builder`, which starts `python -m active_memory.recall.builder` unless one
already holds the scope's builder lock or was started in the last `START_SECONDS` (a
`starting` marker: so a burst of calls starts one process). It is started through
`/bin/sh -c '… &'`, which exits at once, so the builder is nobody's child (no zombie in
`serve`, nothing left running by a hook process) and runs in a session of its own.

A PostgreSQL store is never read by a hook (SPEC §8: no network on the tool call's
path). Its hooks pin the local generation and, at most once per `POLL_SECONDS` per
scope (`poll_due`), start the builder, which asks the store for its version and builds
the next generation when another machine published; `serve` asks the store itself on
the same period (hooks/store_watch.py) and starts the builder only when it moved.
"""

from __future__ import annotations

import os
import sys
import time

from active_memory.file_lock import is_locked
from active_memory.recall.generations import BUILDER_LOCK, scope_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from active_memory.store.changes import ScopeKey

START_SECONDS = 15.0
"""A builder started this recently is not started again (it takes its lock at once)."""
POLL_SECONDS = 30.0
"""How often, at most, a PostgreSQL store's version is asked for, per scope."""
STARTING = "starting"
POLLED = "polled"


def start_builder(recall_dir: str, location: str, scope: ScopeKey) -> bool:
    """Start the scope's background builder unless one runs or was just started; whether
    a process was started. Never raises for a failed start (the next call tries again)."""
    folder = scope_dir(recall_dir, location, scope)
    if is_locked(os.path.join(folder, BUILDER_LOCK)):
        return False  # it looks at the store again before it lets go
    marker = os.path.join(folder, STARTING)
    if _age(marker) < START_SECONDS:
        return False
    try:
        os.makedirs(folder, exist_ok=True)
        with open(marker, "w", encoding="utf-8") as handle:
            handle.write(str(os.getpid()))
        _spawn([recall_dir, location, scope.kind, scope.repository or "",
                scope.graph_hash or "", scope.node or ""])  # fmt: skip
    except OSError:
        return False
    return True


def poll_due(recall_dir: str, location: str, scope: ScopeKey) -> bool:
    """Whether `POLL_SECONDS` passed since the scope's store was last asked (and mark
    that it is asked now)."""
    folder = scope_dir(recall_dir, location, scope)
    marker = os.path.join(folder, POLLED)
    if _age(marker) < POLL_SECONDS:
        return False
    try:
        os.makedirs(folder, exist_ok=True)
        with open(marker, "w", encoding="utf-8"):
            pass
    except OSError:
        return False
    return True


def _age(path: str) -> float:
    try:
        return time.time() - os.path.getmtime(path)
    except OSError:
        return float("inf")


def _spawn(arguments: list[str]) -> None:
    """Start the builder detached: a shell that backgrounds it and exits (reaped here)."""
    command = [
        "/bin/sh", "-c", '"$@" </dev/null >/dev/null 2>&1 &', "active-memory-builder",
        sys.executable, "-m", "active_memory.recall.builder", *arguments,
    ]  # fmt: skip
    if hasattr(os, "posix_spawn"):
        # posix_spawn, not subprocess: subprocess costs a hook process milliseconds of
        # imports, and the shell exits at once.
        pid = os.posix_spawn(command[0], command, dict(os.environ), setsid=True)
        os.waitpid(pid, 0)
        return
    import subprocess  # pragma: no cover - no posix_spawn (Windows)

    subprocess.Popen(  # pragma: no cover
        [sys.executable, "-m", "active_memory.recall.builder", *arguments],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        creationflags=getattr(subprocess, "DETACHED_PROCESS", 0), close_fds=True,
    )  # fmt: skip
