"""`active-memory init --directory SESSION [--runs DIR] [--checkout DIR …] [--ignore-repos …]
[--ignore-graphs …]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from active_memory.commands.common import add_json_option, add_store_option, print_json


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `init`."""
    parser = subcommands.add_parser(
        "init",
        help="initialise memory from local run history (resumable; readable on a terminal, "
        "phase / next_action JSON with --json)",
        description="Inventory finished local runs (zeroshot run ledgers and --runs DIR), "
        "write discovery tasks for the host to answer in the session folder, and publish "
        "every accepted lesson in one transaction. Run it again after answering; a "
        "complete session returns its receipt and changes nothing. On a terminal it "
        "prints a summary (progress on stderr); with --json, or when stdout is not a "
        "terminal, one JSON document.",
    )
    parser.add_argument(
        "--directory", required=True, metavar="SESSION", help="the private session folder"
    )
    parser.add_argument(
        "--runs",
        metavar="DIR",
        default=None,
        help="run record files (*.json); a resume keeps the saved folder when omitted",
    )
    parser.add_argument(
        "--checkout",
        action="append",
        default=None,
        metavar="DIR",
        dest="checkouts",
        help="a local checkout to match runs that recorded no workspace against (zeroshot "
        "ledger runs) by remote and revision; repeat for several (a resume keeps the "
        "saved set when omitted)",
    )
    parser.add_argument(
        "--ignore-repos",
        action="append",
        default=None,
        metavar="NAMES",
        help="repositories to leave out (comma- or space-separated, or repeated; a resume "
        "keeps the saved list when omitted)",
    )
    parser.add_argument(
        "--ignore-graphs",
        action="append",
        default=None,
        metavar="NAMES",
        help="graphs to leave out by name or hash (comma- or space-separated, or repeated; "
        "a resume keeps the saved list when omitted)",
    )
    add_json_option(parser)  # also the default when stdout is not a terminal
    add_store_option(parser)
    parser.set_defaults(handler=_init)


def _init(args: argparse.Namespace) -> int:
    from active_memory.commands.progress import progress
    from active_memory.errors import UsageError
    from active_memory.init import advance
    from active_memory.store import resolve_store_location

    runs = Path(args.runs) if args.runs is not None else None
    if runs is not None and not runs.is_dir():
        raise UsageError(f"--runs {args.runs}: no such folder")
    with progress("init", unit="runs") as steps:
        document = advance(
            Path(args.directory),
            store=resolve_store_location(args.store),
            runs_dir=runs,
            ignore_repos=args.ignore_repos,
            ignore_graphs=args.ignore_graphs,
            checkouts=args.checkouts,
            steps=steps,
        )
    # JSON for --json and for whatever reads a pipe (scripts, agents); people get text.
    if args.json or not sys.stdout.isatty():
        print_json(document)
        return 0
    from active_memory.commands.init_view import render_init
    from active_memory.commands.render import stdout_console

    render_init(document, stdout_console())
    return 0
