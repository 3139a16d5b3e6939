"""`active-memory import zeroshot|claude|codex|pi|gemini|copilot|opencode|hermes PATH`: run
records from other tools' logs and session databases."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from active_memory.commands.common import add_json_option, print_json
from active_memory.runlog.importers.pipeline import DATABASES, KINDS, SESSIONS


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `import`."""
    parser = subcommands.add_parser(
        "import",
        help="build run records from a zeroshot ledger or a harness session log",
        description=(
            "Build active-memory/run@1 records: `zeroshot` reads a native run ledger "
            "(runs.sqlite3, or the folder holding it; finished runs only), `claude` a Claude "
            "Code transcript (JSONL), `codex` a Codex rollout-*.jsonl, `pi` a Pi session "
            "(~/.pi/agent/sessions/…/*.jsonl), `gemini` a Gemini CLI session "
            "(~/.gemini/tmp/…/chats/session-*.jsonl), `copilot` a Copilot CLI session "
            "(~/.copilot/session-state/<id>/ or its events.jsonl), `opencode` OpenCode's "
            "database (~/.local/share/opencode/opencode.db, or its folder), `hermes` Hermes' "
            "(~/.hermes/state.db, or ~/.hermes): every root session, or --session ID's. "
            "Each run is written to <run_id>.run.json."
        ),
    )
    parser.add_argument("kind", choices=KINDS, help="what PATH is")
    parser.add_argument("path", metavar="PATH", help="the ledger, folder or session log")
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="folder for the records (default: <state dir>/active-memory/imports, never the "
        "current folder: a checkout is no place for them)",
    )
    target.add_argument(
        "-o", "--output", metavar="FILE", default=None, help="write the one record to FILE"
    )
    parser.add_argument(
        "--force", action="store_true", help="replace record files that already exist"
    )
    parser.add_argument(
        "--session",
        metavar="ID",
        default=None,
        help="opencode, hermes: import only this session (with its sub-agents and, for "
        "Hermes, its continuations after compression)",
    )
    parser.add_argument(
        "--repository",
        metavar="NS",
        default=None,
        help="file every run under namespace NS (repo:HOST/OWNER/NAME or repo:local/PATH), "
        "for a log whose checkout is not on this machine",
    )
    add_json_option(parser)
    parser.set_defaults(handler=_import)


IMPORTS_FOLDER = "imports"
"""Under the state dir: where `import` writes records when no -o / --out names a place."""


def _import(args: argparse.Namespace) -> int:
    from active_memory.errors import UsageError
    from active_memory.runlog.importers import write
    from active_memory.runlog.importers.pipeline import import_log, remember_checkouts

    namespace = checked_namespace(args.repository) if args.repository is not None else None
    if args.session is not None and args.kind not in DATABASES:
        raise UsageError(f"--session: only for {' and '.join(DATABASES)} (a database of "
                         f"many sessions); a {args.kind} log is one session")  # fmt: skip
    result = import_log(args.kind, args.path, session=args.session, namespace=namespace)
    out_dir = args.out
    if out_dir is None and args.output is None:
        from active_memory.store.location import state_dir

        out_dir = os.path.join(state_dir(), IMPORTS_FOLDER)
        os.makedirs(out_dir, mode=0o700, exist_ok=True)
    paths = write.targets(
        [run.run_id for run in result.runs],
        out_dir=out_dir,
        out_file=args.output,
        force=args.force,
    )
    for run, path in zip(result.runs, paths, strict=True):
        write.write_record(path, run.record, force=args.force)
    remember_checkouts(result)
    for skipped in result.skipped:
        where = skipped.run_id or (f"line {skipped.line}" if skipped.line else args.path)
        print(f"active-memory: skipped {where}: {skipped.reason}", file=sys.stderr)
    for run in result.runs:
        for warning in run.warnings:
            print(f"active-memory: {run.run_id}: {warning}", file=sys.stderr)
    runs: list[dict[str, Any]] = [
        {
            "run_id": run.run_id,
            "path": str(path),
            "events": run.events,
            "receipts": run.receipts,
            # Sessions only: a count of the joined hook deliveries, null when absent.
            **(
                {"deliveries": _count(run.record.get("deliveries"))}
                if args.kind in SESSIONS
                else {}
            ),
            **({"warnings": run.warnings} if run.warnings else {}),
        }
        for run, path in zip(result.runs, paths, strict=True)
    ]
    # Session imports also report what the log held (docs/importers.md, "Import report").
    for entry, run in zip(runs, result.runs, strict=True):
        if run.report is not None:
            entry["report"] = run.report
    if args.json:
        print_json({"runs": runs, "skipped": [s.to_json() for s in result.skipped]})
    else:
        _summary(runs, len(result.skipped))
        for run in result.runs:
            if run.summary:
                print(f"{run.run_id}: {run.summary}")
    # Nothing written although something was there to read: the import failed.
    return 1 if not runs and result.skipped else 0


def checked_namespace(value: str) -> str:
    """`--repository NS` as given, or UsageError naming what is wrong with it."""
    from active_memory.errors import UsageError

    text = value.strip()
    host, _, path = text.removeprefix("repo:").partition("/")
    if (
        not text.startswith("repo:")
        or not host
        or not path.strip("/")
        or any(ch.isspace() for ch in text)
        or "//" in text
    ):
        raise UsageError(
            f"--repository {value!r}: a namespace is repo:HOST/OWNER/NAME "
            "(e.g. repo:github.com/acme/api) or repo:local/PATH"
        )
    return text.rstrip("/")


def _count(items: Any) -> int | None:
    return len(items) if isinstance(items, list) else None


def _summary(runs: list[dict[str, Any]], skipped: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not runs:
        console.print(f"no run record written ({skipped} skipped, see above)")
        return
    table = Table("run", "events", "receipts", "file")
    for column in (table.columns[0], table.columns[3]):
        column.overflow = "fold"
    for run in runs:
        table.add_row(run["run_id"], str(run["events"]), str(run["receipts"]), run["path"])
    console.print(table)
    folders = sorted({os.path.dirname(str(run["path"])) or "." for run in runs})
    console.print(f"written to {', '.join(folders)}", soft_wrap=True, markup=False)
    if skipped:
        console.print(f"{skipped} skipped (see above)")
