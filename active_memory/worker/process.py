"""One worker process (`active-memory worker`, docs/queue.md): this machine's worker lock
of the store (handed over by a session-end hook, or taken), its lane for the whole run,
the status file `queue` and `hook doctor` read, the run that lets go of the lock when
idle and looks once more, and the signals that drain it. The command parses its options
and renders what was processed.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from active_memory.worker import Processed, Worker

SIGNAL_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}
"""Exit codes of a second SIGINT / SIGTERM, which stops the worker at once."""


def hold_lock(files: Any, auto: bool, display: Any) -> int | None:
    """This machine's worker lock of the store: handed over by a hook, or taken now."""
    import os

    from active_memory.worker_state import adopt_lock, take_lock

    held = adopt_lock(files.lock, os.environ) if auto else None
    if held is None:
        held = take_lock(files.lock)
    if held is None and not auto:
        display.say(f"another worker of this machine drains this store{holder_pid(files)}; "
                    "this one runs beside it")  # fmt: skip
    return held


def holder_pid(files: Any) -> str:
    """` (pid N)` of the worker holding the lock, when its status file says."""
    import json

    try:
        with open(files.status, encoding="utf-8") as handle:
            pid = json.load(handle).get("pid")
    except (OSError, ValueError, AttributeError):
        return ""
    return f" (pid {pid})" if pid else ""


def worker_lane(
    choice: Any, chosen: Any, *, lane: str | None, model: str | None, auto: bool
) -> Any:
    """The worker's lane for its whole run (worker/lanes.py): `lane` and `model` as the
    command names them, else the settings'; an automatic worker inherits no environment."""
    from active_memory.worker import WorkerLane
    from active_memory.worker_settings import lane_environment, pick_lane

    environ = lane_environment(chosen, os.environ, inherit=not auto)
    model = model or chosen.model
    if choice.files:
        return WorkerLane(choice=choice, model=model, environ=environ)
    requested = lane if lane in ("claude", "codex", "api") else None
    return WorkerLane(choice=choice, pick=pick_lane(chosen, environ, requested), model=model,
                      environ=environ)  # fmt: skip


def announce_start(
    worker: Worker, files: Any, display: Any, auto: bool, holder_status: dict[str, Any] | None
) -> None:
    import os
    import time

    from active_memory.processes import host_name
    from active_memory.store.location import mask_url
    from active_memory.worker_state import write_status

    lane = worker.options.lane
    display.say(f"{'automatic worker' if auto else 'worker'} pid {os.getpid()} on "
                f"{host_name()}, store {mask_url(worker.location)}; {lane.describe()}")  # fmt: skip
    status = {
        "pid": os.getpid(), "host": host_name(), "auto": auto,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "lane": lane.describe(), "model": lane.model, "owner": worker.options.owner,
    }  # fmt: skip
    if holder_status is None:
        return  # the worker holding the lock keeps its own status
    holder_status.update(status)
    try:
        write_status(files, status)
    except OSError as exc:
        display.say(f"could not write {files.status}: {exc.strerror or exc}")


class LockHold:
    """This worker's hold on the machine's worker lock of the store (None: not held)."""

    def __init__(self, files: Any, held: int | None) -> None:
        self.files = files
        self.held = held
        self.status: dict[str, Any] | None = None

    def release(self) -> None:
        import os

        from active_memory.worker_state import clear_status

        if self.held is not None:
            clear_status(self.files)
            os.close(self.held)
            self.held = None

    def retake(self) -> bool:
        from active_memory.worker_state import take_lock, write_status

        self.held = take_lock(self.files.lock)
        if self.held is not None and self.status is not None:
            write_status(self.files, self.status)
        return self.held is not None


async def run_worker(worker: Worker, holder: LockHold) -> list[Processed]:
    import anyio

    from active_memory.worker import QUEUE_BUSY_TIMEOUT
    from active_memory.worker.store_wait import reachable_store

    processed: list[Processed] = []
    async with anyio.create_task_group() as watchers:
        watchers.start_soon(watch_signals, worker)
        async with reachable_store(worker, busy_timeout=QUEUE_BUSY_TIMEOUT) as store:
            while store is not None:
                processed += await worker.run(store.queue)
                if worker.options.idle is None or worker.stopping or holder.held is None:
                    break
                # Idle: let go of the lock first, then look once more. A session that
                # ended before this look is seen here; one that ended after it found the
                # lock free, and its hook started the next worker.
                holder.release()
                if not await worker.has_work(store.queue) or not holder.retake():
                    break
        watchers.cancel_scope.cancel()
    return processed


async def watch_signals(worker: Worker) -> None:
    """First SIGINT/SIGTERM: drain; a second: exit at once (leases expire, others reclaim)."""
    import anyio

    if sys.platform == "win32":
        return
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        async for signum in received:
            if worker.stopping:
                sys.stderr.write("active-memory: worker stopped at once; running entries "
                                 "return to the queue when their leases expire\n")  # fmt: skip
                sys.stderr.flush()
                os._exit(SIGNAL_EXIT.get(signal.Signals(signum), 130))
            print(
                f"active-memory: {signal.Signals(signum).name}: draining (running postmortems "
                f"get {worker.options.grace:g} s; a second signal exits at once)",
                file=sys.stderr,
            )
            worker.stop()
