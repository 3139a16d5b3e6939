"""`active-memory postmortem RUN.json [--dry-run] [--json] ...`: the four specialists on one
recorded run (SPEC §9), with live progress on stderr and a report on stdout (SPEC §10).

Exit codes: 0 the postmortem finished and published (or, dry, would publish) cleanly;
1 a specialist failed or timed out, a conflict stayed unresolved or the publish failed;
2 bad input (run record, runtime JSON, graph, recordings, checkout); 130 / 143 stopped by
SIGINT / SIGTERM, with nothing published.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from active_memory.commands.common import add_json_option, add_store_option, print_json
from active_memory.commands.postmortem_view import Display, render

if TYPE_CHECKING:
    from collections.abc import Callable

    from anyio import CancelScope

    from active_memory.checkout import Checkout
    from active_memory.config import RuntimeConfig
    from active_memory.orchestrator import (
        ChosenLane,
        PostmortemReport,
        SessionFactory,
    )
    from active_memory.runlog.record import RunRecord
    from active_memory.specialists.providers.exchange import Pending

# After the first SIGINT/SIGTERM the postmortem gets this long to stop its specialists
# (nothing is published once it is cancelled); a second signal exits at once.
GRACE_SECONDS = 5.0
SIGNAL_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `postmortem`."""
    parser = subcommands.add_parser(
        "postmortem",
        help="run the four specialists on a recorded run and publish their lessons",
        description="Run the postmortem of one recorded run (active-memory/run@1): "
        "maintenance keeps the delivered lessons true, discovery proposes new ones from "
        "impact evidence, and every accepted change is published in one transaction.",
    )
    parser.add_argument("run", metavar="RUN.json", type=Path, help="a run record file")
    parser.add_argument(
        "--config",
        metavar="FILE",
        type=Path,
        help="runtime JSON (docs/config.md) to use instead of the record's `runtime`",
    )
    parser.add_argument(
        "--graph",
        metavar="GRAPH.json",
        type=Path,
        help="the authored graph, for a record without graph IR (must match graph.hash)",
    )
    parser.add_argument(
        "--checkout",
        metavar="DIR",
        type=Path,
        help="the run's git checkout (default: the record's repository.checkout)",
    )
    parser.add_argument(
        "--lane",
        choices=("api", "claude", "codex", "replay", "exchange"),
        help="where the specialists' answers come from (default: the runtime plan's: "
        "the source node's harness CLI, or its provider's API when the node declares "
        "the key); see docs/providers.md",
    )
    parser.add_argument(
        "--replay",
        metavar="RECORDINGS.json",
        type=Path,
        help="answer from recorded specialist answers (active-memory/recordings@1) "
        "instead of the model; no API key needed (implies --lane replay)",
    )
    parser.add_argument(
        "--exchange-dir",
        metavar="DIR",
        type=Path,
        help="--lane exchange: write each specialist's task file here and wait for its answer file",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="decide everything, show what would be published, write nothing",
    )
    parser.add_argument(
        "--show-tasks",
        metavar="DIR",
        type=Path,
        help="write each specialist's exact prompt, system instructions and task into DIR "
        "without calling a model (implies --dry-run)",
    )
    add_json_option(parser)
    add_store_option(parser)
    parser.set_defaults(handler=_postmortem)


def _postmortem(args: argparse.Namespace) -> int:
    return run_command(args)


def run_command(args: argparse.Namespace, *, sessions: SessionFactory | None = None) -> int:
    """The command's body; `sessions` replaces the lane's sessions (tests inject fakes)."""
    import anyio

    from active_memory.orchestrator.inputs import (
        checkout_for,
        config_for,
        with_graph,
        with_settings_files,
    )
    from active_memory.runlog.record import load_run_record

    record = with_graph(load_run_record(args.run), args.graph)
    config = config_for(record, args.config)
    checkout = checkout_for(record, args.checkout)
    config = with_settings_files(config, checkout)
    capture = None
    lane: dict[str, str] | None = None
    if getattr(args, "show_tasks", None) is not None:
        from active_memory.errors import UsageError
        from active_memory.orchestrator.preview import CaptureSessions

        if args.replay is not None or args.lane is not None or args.exchange_dir is not None:
            raise UsageError("--show-tasks asks no model: drop --lane, --replay and --exchange-dir")
        sessions = capture = CaptureSessions()
        args.dry_run = True  # no model answers: nothing may be published
    shown: list[Display] = []  # the display, once made: the exchange lane tells it of tasks
    if sessions is None:
        chosen = _lane(args, config, checkout, lambda task: shown[0].waiting(task))
        sessions, lane = chosen.sessions, chosen.to_json()
    display = Display(json_mode=args.json)
    shown.append(display)
    if lane is not None and not args.json:
        display.console.print(f"postmortem: lane {lane['name']} ({lane['reason']})")
        if lane["name"] == "exchange":
            display.console.print(
                f"postmortem: task and answer files in {args.exchange_dir}: answer each "
                "task by writing the answer file it names",
                soft_wrap=True,
                markup=False,
            )
    outcome = anyio.run(_run, args, record, config, checkout, sessions, display)
    display.close()
    if capture is not None and not isinstance(outcome, int):
        from active_memory.commands.show_tasks import shown as show_tasks

        return show_tasks(args, outcome, capture, config)
    if isinstance(outcome, int):
        print(
            "active-memory: postmortem interrupted; it stopped before publishing, "
            "nothing was written",
            file=sys.stderr,
        )
        return outcome
    if args.json:
        print_json(outcome.to_json() | ({"lane": lane} if lane is not None else {}))
    else:
        render(outcome)
    return 0 if outcome.ok else 1


def _lane(
    args: argparse.Namespace,
    config: RuntimeConfig,
    checkout: Checkout | None,
    waiting: Callable[[Pending], None],
) -> ChosenLane:
    """The specialists' lane (`--lane`, else the plan's); an impossible one exits 2 now,
    and a recordings file is read now, so a bad one exits 2 too. `waiting` is told where
    each exchange task is."""
    from active_memory.errors import UsageError
    from active_memory.orchestrator import LaneOptions, choose_lane

    try:
        chosen = choose_lane(
            config,
            args.lane,
            LaneOptions(
                recordings=args.replay,
                exchange_dir=args.exchange_dir,
                exchange_waiting=waiting,
                checkout=checkout.root if checkout is not None else None,
            ),
        )
    except UsageError as exc:
        if args.lane in ("replay", "exchange") or args.replay is not None:
            raise
        # No model at hand: say how to look without one.
        raise UsageError(
            f"{exc}. Without a model: `--replay RECORDINGS.json` answers from recorded "
            "answers (the example's: examples/recordings.json), and `--show-tasks DIR` "
            "writes what each specialist would be asked"
        ) from None
    if chosen.name == "replay" and args.replay is not None:
        import anyio

        from active_memory.specialists.providers.replay import load_recordings

        anyio.run(load_recordings, args.replay)
    return chosen


# --- running -----------------------------------------------------------------------


async def _run(
    args: argparse.Namespace,
    record: RunRecord,
    config: RuntimeConfig,
    checkout: Checkout | None,
    sessions: SessionFactory | None,
    display: Display,
) -> PostmortemReport | int:
    """The postmortem under a signal watcher; an int is the exit code of an interruption."""
    import anyio

    from active_memory.orchestrator import run_postmortem
    from active_memory.orchestrator.inputs import store_for

    stopped: list[int] = []
    report: PostmortemReport | None = None
    failure: Exception | None = None
    work = anyio.CancelScope()
    async with (
        store_for(args.store, dry_run=args.dry_run) as store,
        anyio.create_task_group() as watchers,
    ):
        watchers.start_soon(_watch_signals, work, stopped)
        with work:
            try:
                report = await run_postmortem(
                    record,
                    config,
                    store,
                    checkout=checkout,
                    sessions=sessions,
                    dry_run=args.dry_run,
                    progress=display.event,
                )
            except Exception as exc:  # raised below, outside the task group's wrapping
                failure = exc
        watchers.cancel_scope.cancel()
    if failure is not None:
        raise failure
    if report is not None:
        return report  # finished before the signal took effect: its report stands
    return SIGNAL_EXIT.get(signal.Signals(stopped[0]), 130) if stopped else 130


async def _watch_signals(work: CancelScope, stopped: list[int]) -> None:
    """First SIGINT/SIGTERM: cancel the postmortem (it publishes nothing then) and give it
    GRACE_SECONDS to stop; a second signal, or the grace running out, exits at once."""
    import anyio

    if sys.platform == "win32":  # no signal receiver there; Ctrl-C is KeyboardInterrupt
        return
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        async for signum in received:
            if stopped:
                _exit_now(stopped[0])
            stopped.append(int(signum))
            print(
                f"active-memory: {signal.Signals(signum).name}: stopping the postmortem "
                "(a second signal exits at once)",
                file=sys.stderr,
            )
            work.cancel()
            with anyio.move_on_after(GRACE_SECONDS):
                async for _second in received:
                    _exit_now(stopped[0])
            _exit_now(stopped[0])


def _exit_now(signum: int) -> None:
    """Leave without unwinding: the publish is one SQLite transaction, so a process that
    dies mid-way leaves the store as it was (SPEC §7)."""
    sys.stderr.write("active-memory: stopped; nothing was published\n")
    sys.stderr.flush()
    os._exit(SIGNAL_EXIT.get(signal.Signals(signum), 130))
