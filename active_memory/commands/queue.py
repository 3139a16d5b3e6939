"""`active-memory queue [--json] [--state S]`, `queue retry ID`, `queue drop ID`: inspect
and fix the store's postmortem queue (docs/queue.md).

Exit codes: 0 done; 2 an unknown ID, a running entry (retry or drop it once it finishes
or its lease expires), or bad options.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import add_json_option, add_store_option, print_json

if TYPE_CHECKING:
    from active_memory.store import QueueEntry
    from active_memory.store.queue import QueueState

STATES: tuple[QueueState, ...] = ("pending", "running", "done", "failed")


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `queue` and its `retry` / `drop` subcommands."""
    parser = subcommands.add_parser(
        "queue",
        help="list the postmortem queue (pending, running, done, failed); retry or drop an entry",
        description="The postmortem queue: finished harness sessions waiting for (or done "
        "with) their postmortem. `retry ID` makes an entry pending again; `drop ID` deletes it.",
    )
    parser.add_argument("--state", choices=STATES, action="append",
                        help="only entries in this state (repeatable)")  # fmt: skip
    add_json_option(parser)
    add_store_option(parser)
    parser.set_defaults(handler=_list)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    for name, text in (
        ("retry", "make an entry pending again (attempts reset)"),
        ("drop", "delete an entry from the queue"),
    ):
        sub = actions.add_parser(name, help=text, description=text)
        sub.add_argument("id", type=_entry_id, metavar="ID", help="the entry's ID (see `queue`)")
        add_json_option(sub)
        add_store_option(sub)
        sub.set_defaults(handler=_change, verb=name)


def _list(args: argparse.Namespace) -> int:
    import anyio

    from active_memory.errors import StoreMissing
    from active_memory.store import open_store, resolve_store_location, spool
    from active_memory.worker_state import worker_report

    location = resolve_store_location(args.store)

    async def read() -> tuple[list[QueueEntry], int]:
        create = spool.spooled(location) > 0  # spooled ends need the store made
        try:
            async with open_store(location, create=create) as store:
                flushed = await _flush(store, location)
                return await store.queue.entries(args.state or STATES), flushed
        except StoreMissing:
            return [], 0  # no store yet: nothing was ever queued

    entries, flushed = anyio.run(read, backend="asyncio")
    report = worker_report(location)
    if args.json:
        print_json({"entries": [e.to_json() for e in entries], "counts": _counts(entries),
                    "spooled": {"queued_now": flushed, "waiting": report["spooled"]},
                    "worker": report})  # fmt: skip
    else:
        _table(entries)
        if flushed:
            print(f"queued {flushed} session end(s) the hooks had kept in the spool")
        for line in worker_lines(report):
            print(line)
    return 0


async def _flush(store: Any, location: str) -> int:
    """Queue the session ends hooks kept in the spool while the store was away."""
    from active_memory.store import spool

    taken = spool.take(location)
    written = 0
    try:
        for item in taken:
            await store.queue.enqueue(item.end)
            written += 1
    finally:
        spool.settle(taken, written)
    return written


def worker_lines(report: dict[str, Any]) -> list[str]:
    """`queue`'s lines about this machine's worker: whether and where it runs, its lane,
    and what today cost (docs/queue.md)."""
    lines = []
    status = report["status"]
    if status["running"]:
        kind = "automatic worker" if status.get("auto") else "worker"
        lines.append(f"{kind}: running, pid {status.get('pid', '?')} on "
                     f"{status.get('host', '?')} since {status.get('started_at', '?')}; "
                     f"{status.get('lane', '')}; log {status['log']}")  # fmt: skip
    elif report["auto_start"]:
        lines.append(f"worker: not running; the next session end starts one (log "
                     f"{status['log']})")  # fmt: skip
    else:
        lines.append(f"worker: not running, and session ends start none "
                     f"({report['auto_start_off']}); run `active-memory worker`")  # fmt: skip
    if not status["running"]:
        lines.append(f"lane: {report['lane']}")
    today = report["today"]
    cost = f", ${today['cost_usd']:.2f}" if today.get("cost_usd") else ""
    cap = report.get("cap") or "no daily cap"
    lines.append(f"today ({today['day']} UTC): {today['postmortems']} postmortem(s), "
                 f"{today['tokens']:,} tokens{cost}; {cap}")  # fmt: skip
    if report["spooled"]:
        lines.append(f"spool: {report['spooled']} session end(s) wait for the store")
    return lines


def _change(args: argparse.Namespace) -> int:
    import anyio

    from active_memory.store import open_store, resolve_store_location

    async def change() -> QueueEntry:
        async with open_store(resolve_store_location(args.store), create=False) as store:
            queue = store.queue
            if args.verb == "retry":
                return await queue.retry(args.id)
            return await queue.drop(args.id)

    entry = anyio.run(change, backend="asyncio")
    if args.json:
        print_json({"action": args.verb, "entry": entry.to_json()})
    elif args.verb == "retry":
        print(f"queue entry {entry.id} ({entry.harness} {entry.session_id}) is pending again")
    else:
        print(f"queue entry {entry.id} ({entry.harness} {entry.session_id}) dropped")
    return 0


def _counts(entries: list[QueueEntry]) -> dict[str, int]:
    return {state: sum(e.state == state for e in entries) for state in STATES}


def _table(entries: list[QueueEntry]) -> None:
    import time

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 140)
    if not entries:
        console.print("the postmortem queue is empty")
        return
    table = Table("id", "state", "harness", "session", "tries", "updated", "reason / result")
    table.columns[3].overflow = "fold"
    table.columns[6].overflow = "fold"
    now = time.time()
    for e in entries:
        table.add_row(
            str(e.id), e.state, e.harness, escape(e.session_id), str(e.attempts),
            _ago(now - e.updated_at), escape(_note(e)),
        )  # fmt: skip
    console.print(table)
    counts = _counts(entries)
    console.print(", ".join(f"{n} {state}" for state, n in counts.items()))


def _note(entry: QueueEntry) -> str:
    if entry.state == "running":
        return f"{entry.lease_owner}, lease {max(0, (entry.lease_expires or 0) - _now()):.0f} s"
    if entry.state == "done" and entry.result:
        published: dict[str, Any] = entry.result.get("published", {})
        made = ", ".join(f"{v} {k}" for k, v in published.items() if v)
        text = f"{entry.result.get('run_id', '')}: {made or 'nothing published'}"
        return text + (f"; {entry.reason}" if entry.reason else "")
    return entry.reason


def _now() -> float:
    import time

    return time.time()


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.0f} h ago"


def _entry_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a queue entry ID (a number)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a queue entry ID (a number)")
    return value
