"""`active-memory worker`: drain the store's postmortem queue (docs/queue.md).

`--auto` is how a session-end hook starts it (hooks/worker_start.py): it holds this
machine's worker lock of the store (handed over by the hook, or taken; when another
worker holds it, it exits 0 at once), takes its lane, model, credentials, concurrency
and idle time from the `[worker]` settings only (never from the environment it was
started with), and stops once the queue has been idle for `[worker] idle_seconds`.

Exit codes: 0 the worker stopped cleanly (drained, `--once` finished, idle, or
SIGTERM/SIGINT after the grace) and no entry it claimed failed; 1 an entry it claimed
failed (its reason is kept in the queue), or the store stayed unreachable past the
worker's patience; 2 bad options or settings; a second SIGTERM/SIGINT exits at once
with 143/130.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import add_json_option, add_store_option, print_json

if TYPE_CHECKING:
    from active_memory.worker import Processed, Worker

SIGNAL_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `worker`."""
    parser = subcommands.add_parser(
        "worker",
        help="run postmortems of finished harness sessions from the store's queue",
        description="Claim settled sessions from the postmortem queue (filled by the "
        "session-end hooks), import each and run its postmortem: at most --concurrency at "
        "once and one per repository. SIGTERM/SIGINT stops claiming and lets running "
        "postmortems finish within --grace; a second signal exits at once.",
    )
    number = parser.add_argument
    number("--concurrency", type=_positive_int, default=None, metavar="N",
           help="postmortems at once (default: [worker] concurrency, else 2)")  # fmt: skip
    number("--once", action="store_true", help="drain what is claimable now, then exit")
    number("--lease", type=_positive, default=60.0, metavar="SECONDS",
           help="lease of a claimed entry, renewed while it runs (default 60)")  # fmt: skip
    number("--settle", type=_non_negative, default=120.0, metavar="SECONDS",
           help="quiet time after a turn end (Codex Stop) before a session is taken "
           "(default 120)")  # fmt: skip
    number("--grace", type=_non_negative, default=30.0, metavar="SECONDS",
           help="on SIGTERM/SIGINT, time running postmortems get to finish "
           "(default 30)")  # fmt: skip
    number("--poll", type=_positive, default=1.0, metavar="SECONDS",
           help="how often to look for new entries (default 1)")  # fmt: skip
    number("--retries", type=_non_negative_int, default=2, metavar="N",
           help="retries of a transient failure, with exponential backoff (default 2)")  # fmt: skip
    number("--lane", choices=("api", "claude", "codex", "replay", "exchange"), default=None,
           help="the specialists' lane (default: [worker] lane in the settings, else the "
           "first found: claude, codex, the API with a key in [worker.env])")  # fmt: skip
    number("--replay", type=Path, metavar="RECORDINGS.json",
           help="recorded answers for --lane replay")  # fmt: skip
    number("--exchange-dir", type=Path, metavar="DIR",
           help="task and answer files for --lane exchange")  # fmt: skip
    number("--model", default=None, help="the specialists' model (default: [worker] model, "
           "else the session's own when the lane runs its harness)")  # fmt: skip
    number("--auto", action="store_true",
           help="as started by a session-end hook: settings only, this machine's one worker "
           "of the store, exits when idle (docs/queue.md)")  # fmt: skip
    number("--config", type=Path, metavar="RUNTIME.json",
           help="runtime JSON whose activeMemory / globalAgents (and lane) apply to every "
           "session's postmortem")  # fmt: skip
    add_json_option(parser)
    add_store_option(parser)
    parser.set_defaults(handler=_worker)


def _worker(args: argparse.Namespace) -> int:
    import anyio

    from active_memory.config import read_json_file
    from active_memory.errors import UsageError
    from active_memory.processes import host_name
    from active_memory.settings import SettingsError
    from active_memory.store import resolve_store_location
    from active_memory.worker import LaneChoice, Worker, WorkerOptions
    from active_memory.worker.display import WorkerDisplay
    from active_memory.worker_settings import read_worker_settings
    from active_memory.worker_state import WorkerFiles

    choice = LaneChoice(lane=args.lane, replay=args.replay, exchange_dir=args.exchange_dir)
    choice.check()
    if args.replay is not None:
        from active_memory.specialists.providers.replay import load_recordings

        anyio.run(load_recordings, args.replay)  # a bad file exits 2 before any claim
    overrides = None
    if args.config is not None:
        overrides = read_json_file(args.config, "runtime JSON")
        if not isinstance(overrides, dict):
            raise UsageError(f"{args.config}: the runtime JSON is not an object")
    try:
        chosen = read_worker_settings()
    except SettingsError as exc:
        raise UsageError(f"{exc}; fix the file or move it away") from None
    location = resolve_store_location(args.store)
    files = WorkerFiles.of(location)
    display = WorkerDisplay()
    held = _hold(files, args.auto, display)
    if held is None and args.auto:
        return 0  # another worker of this machine drains this store
    lane = _lane(args, choice, chosen)
    auto = args.auto
    options = WorkerOptions(
        concurrency=args.concurrency or chosen.concurrency, lease=args.lease,
        settle=args.settle, grace=args.grace, poll=args.poll, once=args.once,
        retries=args.retries, overrides=overrides, lane=lane, host=host_name(),
        idle=chosen.idle_seconds if auto else None,
        give_up=60.0 if args.once else (600.0 if auto else None),
        daily_tokens=chosen.daily_tokens, daily_usd=chosen.daily_usd, files=files,
    )  # fmt: skip
    worker = Worker(location, options, progress=display.event)
    holder = _Holder(files, held)
    try:
        holder.status = {}
        _started(worker, files, display, auto, holder.status if held is not None else None)
        processed = anyio.run(_run, worker, holder, backend="asyncio")
    finally:
        display.close()
        holder.release()
    if args.json:
        print_json(_document(worker, processed))
    else:
        _summary(processed)
    return 1 if any(p.state == "failed" for p in processed) else 0


def _hold(files: Any, auto: bool, display: Any) -> int | None:
    """This machine's worker lock of the store: handed over by a hook, or taken now."""
    import os

    from active_memory.worker_state import adopt_lock, take_lock

    held = adopt_lock(files.lock, os.environ) if auto else None
    if held is None:
        held = take_lock(files.lock)
    if held is None and not auto:
        display.say(f"another worker of this machine drains this store{_holder(files)}; "
                    "this one runs beside it")  # fmt: skip
    return held


def _holder(files: Any) -> str:
    """` (pid N)` of the worker holding the lock, when its status file says."""
    import json

    try:
        with open(files.status, encoding="utf-8") as handle:
            pid = json.load(handle).get("pid")
    except (OSError, ValueError, AttributeError):
        return ""
    return f" (pid {pid})" if pid else ""


def _lane(args: argparse.Namespace, choice: Any, chosen: Any) -> Any:
    """The worker's lane for its whole run (worker/lanes.py)."""
    import os

    from active_memory.worker import WorkerLane
    from active_memory.worker_settings import lane_environment, pick_lane

    environ = lane_environment(chosen, os.environ, inherit=not args.auto)
    model = args.model or chosen.model
    if choice.files:
        return WorkerLane(choice=choice, model=model, environ=environ)
    requested = args.lane if args.lane in ("claude", "codex", "api") else None
    return WorkerLane(choice=choice, pick=pick_lane(chosen, environ, requested), model=model,
                      environ=environ)  # fmt: skip


def _started(
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


class _Holder:
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


async def _run(worker: Worker, holder: _Holder) -> list[Processed]:
    import anyio

    from active_memory.worker import QUEUE_BUSY_TIMEOUT
    from active_memory.worker.store_wait import reachable_store

    processed: list[Processed] = []
    async with anyio.create_task_group() as watchers:
        watchers.start_soon(_watch_signals, worker)
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


async def _watch_signals(worker: Worker) -> None:
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


def _document(worker: Worker, processed: list[Processed]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for item in processed:
        counts[item.state] = counts.get(item.state, 0) + 1
    return {
        "worker": worker.options.owner,
        "stopped": worker.stopping,
        "counts": counts,
        "processed": [item.to_json() for item in processed],
    }


def _summary(processed: list[Processed]) -> None:
    from rich.console import Console

    console = Console(highlight=False)
    if not processed:
        console.print("nothing to do: no settled session in the queue")
        return
    counts: dict[str, int] = {}
    for item in processed:
        counts[item.state] = counts.get(item.state, 0) + 1
    console.print(
        "worker: "
        + ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        + " (see `active-memory queue`)"
    )


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: must be greater than 0")
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be 0 or more")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be 1 or more")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be 0 or more")
    return value
