"""The session-end hook starts the worker: one detached process per machine and store.

After a session end is queued (or spooled), `start_worker(location, env)`:

1. reads `[worker] enabled` (worker_settings.py): `false` starts nothing;
2. takes the store's worker lock (worker_state.py) without waiting: when another worker
   of this machine holds it, that worker drains the queue and nothing is started;
3. starts `python -m active_memory.cli worker --auto` through a shell that backgrounds
   it, in a session of its own, stdin from /dev/null, stdout and stderr appended to the
   worker's log, and hands it the held lock (its descriptor, named by
   `ACTIVE_MEMORY_WORKER_LOCK_FD`), so the lock passes to the worker with no moment
   free: ten session ends at once start one worker;
4. gives it only the base environment (`processes.BASE_ENV`), the state folder's
   variable and the store (`ACTIVE_MEMORY_STORE`, never on the command line, where a
   PostgreSQL password would show in `ps`): the worker's lane, model and credentials
   come from the settings, never from the environment the ending harness had.

It is a process, never an import of `worker/` (docs/architecture.md, "The process
boundary"), and it costs the hook one short-lived shell (a few milliseconds). The worker
exits once nothing is left to claim for `[worker] idle_seconds`; the next session end
starts another. Standard library only.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

STATE_VARIABLES = ("ZEROSHOT_STATE_DIR",)
"""Besides `BASE_ENV` (which holds `XDG_STATE_HOME` and `HOME`): what locates the state
folder, so the worker reads the same settings, receipts and spool as the hook."""
SPAWN_TIMEOUT = 1.0
"""The longest the hook waits for the shell that backgrounds the worker (it exits in a few
milliseconds): the session's end is queued already, and Codex kills a SessionEnd hook at
3 s."""


def start_worker(location: str, env: Mapping[str, str]) -> str:
    """Start this machine's worker of `location` unless one runs; returns what happened:
    `started`, `running` (another holds the lock), `off` (`[worker] enabled = false`, or
    `ACTIVE_MEMORY_AUTO_WORKER=0`) or
    `unsupported` (no `flock` here). Raises `SettingsError` for an invalid `[worker]`
    table and `OSError` when the process cannot be started."""
    from active_memory.worker_settings import AUTO_WORKER_ENV, read_worker_settings
    from active_memory.worker_state import WorkerFiles, take_lock

    if env.get(AUTO_WORKER_ENV) == "0" or not read_worker_settings(env).enabled:
        return "off"
    if os.name == "nt":  # pragma: no cover - no flock to hand over
        return "unsupported"
    files = WorkerFiles.of(location, env)
    held = take_lock(files.lock)
    if held is None:
        return "running"
    try:
        _spawn(location, env, held)
    finally:
        os.close(held)  # the worker holds its own copy of the lock from here
    return "started"


def _spawn(location: str, env: Mapping[str, str], held: int) -> None:
    import subprocess

    from active_memory.processes import BASE_ENV
    from active_memory.store.location import STORE_ENV
    from active_memory.worker_state import LOCK_FD_ENV, WorkerFiles, open_log

    child = {name: env[name] for name in (*BASE_ENV, *STATE_VARIABLES) if name in env}
    child[STORE_ENV] = location
    child[LOCK_FD_ENV] = str(held)
    log = open_log(WorkerFiles.of(location, env))
    try:
        # The shell backgrounds the worker and exits at once (waited for here): the worker
        # belongs to no process of the harness's, leaves no zombie, and outlives the hook.
        subprocess.run(
            ["/bin/sh", "-c", '"$@" &', "active-memory-worker",
             sys.executable, "-m", "active_memory.cli", "worker", "--auto"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=child,
            pass_fds=(held,), start_new_session=True, close_fds=True, check=True,
            timeout=SPAWN_TIMEOUT,
        )  # fmt: skip
    except subprocess.SubprocessError as exc:
        raise OSError(f"could not start the worker: {exc}") from None
    finally:
        os.close(log)
