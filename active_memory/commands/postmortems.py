"""`active-memory postmortems [--limit N] [--journal DIR] [--json]`: recent postmortems
from the journal (docs/orchestrator.md, "The journal")."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from active_memory.commands.common import add_json_option, add_store_option, print_json


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `postmortems`."""
    parser = subcommands.add_parser(
        "postmortems",
        help="list recent postmortems: run, state, specialists, usage",
        description="Read the postmortem journal and list the most recent postmortems, "
        "newest first: each run's state (running, finished, cancelled, failed, or "
        "interrupted when its process is gone), its specialists' statuses and the model "
        "usage it recorded (a lower bound when marked incomplete).",
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=20,
        metavar="N",
        help="how many to list, newest first (default 20; 0 lists all)",
    )
    parser.add_argument(
        "--journal",
        metavar="DIR",
        default=None,
        help="the journal folder (default: the store's: `postmortems` beside a SQLite store)",
    )
    add_store_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=_postmortems)


def _postmortems(args: argparse.Namespace) -> int:
    from active_memory.errors import UsageError
    from active_memory.orchestrator.journal import Journal
    from active_memory.store import resolve_store_location

    if args.limit < 0:
        raise UsageError(f"--limit must be 0 or more, not {args.limit}")
    given = Path(args.journal) if args.journal is not None else None
    if given is not None and not given.is_dir():
        raise UsageError(f"--journal {args.journal}: no such folder")
    journal = Journal.of(resolve_store_location(args.store), given)
    folder = journal.directory
    _settle(journal, args.store)
    rows = listed(journal, args.limit)
    if args.json:
        print_json({"journal": str(folder), "postmortems": rows})
    else:
        _print_table(folder, rows)
    return 0


def _settle(journal: Any, store_option: str | None) -> None:
    """Entries left `running` whose publish the store holds become `finished` (killed
    after the COMMIT, before the journal's end); the store is only opened if there are
    such entries, never created, and a store that cannot be read leaves them as they are.
    """
    if not journal.interrupted():
        return
    import sys
    from concurrent.futures import ThreadPoolExecutor

    import anyio

    from active_memory.errors import StoreError, StoreMissing
    from active_memory.orchestrator.journal import settle
    from active_memory.store import open_store, resolve_store_location

    async def job() -> None:
        async with open_store(resolve_store_location(store_option), create=False) as store:
            await settle(journal, store)

    try:
        # Its own thread and event loop: callers may already run one (the run controller
        # or a test calling the command in-process).
        with ThreadPoolExecutor(1) as pool:
            pool.submit(anyio.run, job).result()
    except StoreMissing:
        return
    except StoreError as exc:
        print(f"active-memory: note: interrupted postmortems not checked: {exc}", file=sys.stderr)


def listed(journal: Any, limit: int) -> list[dict[str, Any]]:
    """The journal's entries as rows, newest start first, at most `limit` (0: all).

    A `running` entry whose process is gone is `interrupted`, its usage incomplete.
    """
    from active_memory.processes import pid_alive

    entries = sorted(journal.entries(), key=lambda e: (e.started_at, e.run_id), reverse=True)
    if limit:
        entries = entries[:limit]
    rows: list[dict[str, Any]] = []
    for entry in entries:
        state = entry.state
        usage = entry.usage
        if state == "running" and not pid_alive(entry.pid):
            state = "interrupted"
            usage = usage.model_copy(update={"complete": False})
        rows.append(
            {
                "run_id": entry.run_id,
                "state": state,
                "outcome": entry.outcome,
                "started_at": entry.started_at,
                "ended_at": entry.ended_at,
                "reason": entry.reason,
                "specialists": dict(entry.statuses),
                "usage": usage.model_dump(mode="json"),
                "pid": entry.pid,
            }
        )
    return rows


def _print_table(folder: Path, rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    from active_memory.commands.render import stdout_console

    console = stdout_console()
    if not rows:
        console.print(f"no postmortems in {folder}")
        return
    table = Table(title=f"{len(rows)} postmortems, newest first ({folder})", title_justify="left")
    for column in ("run", "state", "started", "specialists", "tokens in/out", "requests", "cost"):
        table.add_column(column, overflow="fold")
    for row in rows:
        usage = row["usage"]
        bound = "" if usage["complete"] else "≥ "
        cost = usage["cost_usd"]
        statuses = sorted(row["specialists"].values())
        summary = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
        table.add_row(
            row["run_id"],
            row["state"] + (f" ({row['reason']})" if row["reason"] else ""),
            row["started_at"][:19].replace("T", " "),
            summary or "-",
            f"{bound}{usage['input_tokens']:,} / {usage['output_tokens']:,}",
            f"{bound}{usage['requests']}",
            "-" if cost is None else f"{bound}${cost:.4f}",
        )
    console.print(table)
    if any(not row["usage"]["complete"] for row in rows):
        console.print("≥: a request was cut or the process died; the usage is a lower bound")
