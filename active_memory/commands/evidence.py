"""`active-memory evidence RUN.json [--json]`: what the impact-evidence scanner finds."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from active_memory.commands.common import add_json_option, add_store_option, print_json

if TYPE_CHECKING:
    from rich.console import Console

    from active_memory.evidence import ScanResult
    from active_memory.evidence.model import EvidenceItem


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `evidence`."""
    parser = subcommands.add_parser(
        "evidence",
        help="impact evidence in a recorded run, and what was skipped and why",
        description="Scan one run record (active-memory/run@1) for evidence of real cost: "
        "repeated timeouts/crashes, rejected review rounds, exploration, repeated tool "
        "failures.",
    )
    parser.add_argument("run", metavar="RUN.json", help="a run record file")
    add_json_option(parser)
    add_store_option(parser)  # every command takes --store; the scanner needs none
    parser.set_defaults(handler=_evidence)


def _evidence(args: argparse.Namespace) -> int:
    from active_memory.evidence import scan
    from active_memory.runlog.record import load_run_record
    from active_memory.runlog.screening import screen_record

    # Screened before the scan: neither the table nor --json shows a credential that a
    # record written by something else than our importers still holds.
    result = scan(screen_record(load_run_record(args.run)))
    if args.json:
        print_json(result.to_json())
    else:
        _render(result)
    return 0


def _render(result: ScanResult) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(soft_wrap=False, highlight=False)
    if result.evidence:
        table = Table(title=_count(len(result.evidence), "evidence item"), title_justify="left")
        table.add_column("ID", no_wrap=True)
        table.add_column("kind", no_wrap=True)
        table.add_column("count", justify="right")
        table.add_column("where", no_wrap=True)
        table.add_column("nodes", overflow="fold")
        for item in result.evidence:
            where = item.loop or "-"
            if item.map_item:
                where += f" {_item(item.map_item)}"
            if item.specialists == ("repository_discovery",):
                where = "repository only"
            if item.family is not None:
                where = item.family
            table.add_row(item.id, item.kind, str(item.count), where, ", ".join(item.nodes) or "-")
        console.print(table)
        for item in result.evidence:
            _failures(console, item)
            for current in item.rounds:
                verdicts = ", ".join(f"{v.node}={v.outcome}" for v in current.verifiers)
                console.print(
                    f"  {item.id} round {current.round}: {verdicts};"
                    f" worked by {', '.join(current.workers)}"
                )
    else:
        console.print("No impact evidence in this run (nothing qualifies: docs/evidence.md).")
    if result.skipped:
        table = Table(title=_count(len(result.skipped), "skip"), title_justify="left")
        for column in ("loop / map / family", "map item", "round", "reason"):
            table.add_column(column, overflow="fold", no_wrap=column != "reason")
        for skip in result.skipped:
            name = f"loop {skip.loop}" if skip.loop is not None else f"map {skip.map}"
            if skip.family is not None:
                name = f"family {skip.family}"
            round_ = str(skip.round) if skip.round is not None else "-"
            table.add_row(name, _item(skip.map_item), round_, skip.reason)
        console.print(table)


def _failures(console: Console, item: EvidenceItem) -> None:
    """A repeated-failure item's failures, one line per distinct error, and what worked."""
    from rich.markup import escape

    if not item.failures:
        return
    console.print(f"  {item.id} {escape(item.family or '')}: {item.qualified}")
    for group in item.failures:
        first = group.error.splitlines()[0] if group.error else "(no output)"
        codes = f" exit {', '.join(map(str, group.exit_codes))}" if group.exit_codes else ""
        times = "once" if group.count == 1 else f"{group.count} times"
        console.print(f"    {times}{codes}: {escape(first[:160])}")
    if item.resolution is not None:
        took = item.seconds_to_resolution
        after = f" after {took:.0f} s" if took is not None else ""
        command = item.resolution.command.splitlines()[0] if item.resolution.command else ""
        console.print(f"    resolved{after} by: {escape(command[:160])}")
    else:
        console.print("    not resolved in the run")


def _item(map_item: tuple[int, ...] | None) -> str:
    if map_item is None:
        return "-"
    return "[" + ", ".join(str(i) for i in map_item) + "]"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
