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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import add_json_option, add_store_option, print_json

if TYPE_CHECKING:
    from active_memory.worker import Processed, Worker


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
    from active_memory.worker.process import (
        LockHold,
        announce_start,
        hold_lock,
        run_worker,
        worker_lane,
    )
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
    held = hold_lock(files, args.auto, display)
    if held is None and args.auto:
        return 0  # another worker of this machine drains this store
    lane = worker_lane(choice, chosen, lane=args.lane, model=args.model, auto=args.auto)
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
    holder = LockHold(files, held)
    try:
        holder.status = {}
        announce_start(worker, files, display, auto, holder.status if held is not None else None)
        processed = anyio.run(run_worker, worker, holder, backend="asyncio")
    finally:
        display.close()
        holder.release()
    if args.json:
        print_json(_document(worker, processed))
    else:
        _summary(processed)
    return 1 if any(p.state == "failed" for p in processed) else 0


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
