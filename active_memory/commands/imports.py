"""`active-memory import zeroshot|claude|codex|pi|gemini|copilot|opencode|hermes PATH`: run
records from other tools' logs and session databases."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import add_json_option, print_json

if TYPE_CHECKING:
    from active_memory.runlog.importers.common import ImportResult

KINDS = ("zeroshot", "claude", "codex", "pi", "gemini", "copilot", "opencode", "hermes")
SESSIONS = ("claude", "codex", "pi", "gemini", "copilot", "opencode", "hermes")
DATABASES = ("opencode", "hermes")
"""The kinds whose PATH is a database of many sessions (`--session` picks one)."""
"""The kinds that are one harness session (joined with what its hooks recorded)."""


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

    namespace = checked_namespace(args.repository) if args.repository is not None else None
    if args.session is not None and args.kind not in DATABASES:
        raise UsageError(f"--session: only for {' and '.join(DATABASES)} (a database of "
                         f"many sessions); a {args.kind} log is one session")  # fmt: skip
    result = _read(args.kind, args.path, args.session)
    if namespace is not None:
        _file_under(result, namespace)
    if args.kind in SESSIONS:
        _join_hooks(result, args.kind)
    _exclude(result)
    _seal(result, args.kind)
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
    _learn_checkouts(result)
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


def _learn_checkouts(result: ImportResult) -> None:
    """This machine learns where each imported run's repository is (known_checkouts.py):
    the recorded checkout, when it is here and holds the run's namespace."""
    from active_memory.known_checkouts import remember_all

    pairs = []
    for run in result.runs:
        repository = run.record.get("repository")
        if isinstance(repository, dict) and repository.get("checkout"):
            pairs.append((str(repository.get("namespace") or ""), str(repository["checkout"])))
    remember_all(pairs, "import")


def _read(kind: str, path: str, session: str | None = None) -> ImportResult:
    if kind in DATABASES:
        from active_memory.runlog.importers.harness_session import import_session_database

        return import_session_database(kind, path, session)
    if kind == "zeroshot":
        from active_memory.runlog.importers.zeroshot import import_ledger

        return import_ledger(path)
    if kind == "claude":
        from active_memory.runlog.importers.claude import import_transcript

        return import_transcript(path)
    if kind in ("pi", "gemini", "copilot"):
        from active_memory.runlog.importers.harness_session import import_session_log

        return import_session_log(kind, path)
    from active_memory.runlog.importers.codex import import_rollout

    return import_rollout(path)


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


def _file_under(result: ImportResult, namespace: str) -> None:
    from active_memory.runlog.importers.common import aliases_for

    for run in result.runs:
        repository = dict(run.record.get("repository") or {})
        repository["namespace"] = namespace
        repository["aliases"] = aliases_for(namespace)
        run.record["repository"] = repository


def _count(items: Any) -> int | None:
    return len(items) if isinstance(items, list) else None


def _join_hooks(result: ImportResult, harness: str) -> None:
    # The same join the postmortem queue's worker makes (import_harness_session): the
    # session's hook receipts and deliveries, recorded under the state dir.
    import os

    from active_memory.runlog.importers.harness_session import join_hook_records

    for run in result.runs:
        run.record = join_hook_records(run.record, harness, env=os.environ, linked=run.linked)
        if "deliveries" not in run.record:
            run.warnings.append(
                "no hook records for this session under the state dir: `deliveries` left "
                "out, so maintenance will abstain (docs/importers.md)"
            )


def _seal(result: ImportResult, harness: str) -> None:
    # Last, once receipts and deliveries are joined: `<private>` text and credentials out
    # of every field, and out of the session's hook files (docs/privacy.md).
    import os

    from active_memory.runlog.importers.harness_session import seal_session
    from active_memory.runlog.importers.privacy import seal

    for run in result.runs:
        if harness in SESSIONS:
            seal_session(run, harness, session_id=None, env=os.environ)
        else:  # a zeroshot run: no prompts of its own to hold `<private>`, credentials
            run.record, _ = seal(run.record)


def _exclude(result: ImportResult) -> None:
    # The `exclude` setting of each record's checkout: excluded paths never reach a
    # record (docs/privacy.md); the counts go into the session report.
    import os

    from active_memory.runlog.importers.harness_session import exclude_paths

    for run in result.runs:
        run.record, counts = exclude_paths(run.record, os.environ)
        if run.report is not None:
            run.report["excluded"] = counts
        elif counts["paths"]:
            run.warnings.append(f"{counts['paths']} excluded paths left out (docs/privacy.md)")


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
