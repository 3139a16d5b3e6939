"""`active-memory recall --session S --cwd DIR [--repository NS] TOOL_JSON [--json]`.

Shows what one tool call would receive now, and why (SPEC §9, §10), without spending
the session's budget, writing a receipt or pinning: it reads the run's pinned
generation when there is one, else the scope's current one (built in memory, not
written, if the store changed since).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import (
    add_budget_option,
    add_json_option,
    add_store_option,
    print_json,
)

if TYPE_CHECKING:
    from active_memory.recall.types import RecallContext


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `recall`."""
    parser = subcommands.add_parser(
        "recall",
        help="the cards a tool call would receive, and why",
        description="Show the lesson cards one tool call would receive now and why "
        "(match kind and score), without spending budget or recording anything. "
        'TOOL_JSON is a hook payload ({"tool_name", "tool_input"}) or an after-tool '
        'one ({"tool", "args"}): inline JSON, @FILE, or - for stdin.',
    )
    parser.add_argument("tool_json", metavar="TOOL_JSON", help="the tool call (JSON, @FILE or -)")
    parser.add_argument("--session", required=True, help="provider session ID (budget ledger)")
    parser.add_argument("--cwd", required=True, metavar="DIR", help="the tool's working folder")
    parser.add_argument(
        "--repository",
        metavar="NS",
        help="repository namespace (default: from the checkout's remote)",
    )
    add_budget_option(
        parser, "the session's budget (default: $ACTIVE_MEMORY_BUDGET_BYTES, else 2048)"
    )
    add_store_option(parser)
    add_json_option(parser)
    parser.set_defaults(handler=_recall)


def read_tool_json(argument: str) -> Any:
    """The decoded TOOL_JSON argument (inline, `@file` or `-`); UsageError if not JSON."""
    from active_memory.reader import MAX_STDIN_BYTES, load_json, parse_json

    if argument == "-" or argument.startswith("@"):
        return load_json(argument.removeprefix("@") or "-", "TOOL_JSON", MAX_STDIN_BYTES)
    return parse_json(argument, "TOOL_JSON")


def _recall(args: argparse.Namespace) -> int:
    from active_memory.errors import UsageError
    from active_memory.recall.engine import answer_tool_call
    from active_memory.recall.environment import resolve_context
    from active_memory.recall.harness import PayloadError, parse_payload
    from active_memory.recall.index import SnapshotCorrupt
    from active_memory.recall.ledger import LedgerCorrupt
    from active_memory.recall.signals import extract_signals
    from active_memory.recall.snapshot import SnapshotUnavailable
    from active_memory.recall.types import ToolCall
    from active_memory.store.changes import StoreUnreadable

    payload = read_tool_json(args.tool_json)
    harness = "claude" if isinstance(payload, dict) and "tool_name" in payload else "after-tool"
    try:
        parsed = parse_payload(harness, payload)
    except PayloadError as exc:
        raise UsageError(f"TOOL_JSON: {exc}") from None
    if not os.path.isdir(args.cwd):
        raise UsageError(f"--cwd {args.cwd}: no such folder")
    call = ToolCall(
        parsed.harness,
        parsed.tool,
        parsed.tool_input,
        session=args.session,
        cwd=os.path.abspath(args.cwd),
    )
    context = resolve_context(call, repository=args.repository, dry_run=True)
    context = with_options(context, args)
    try:
        answer = answer_tool_call(call, context)
    except (SnapshotCorrupt, SnapshotUnavailable, LedgerCorrupt) as exc:
        raise UsageError(str(exc)) from None
    except StoreUnreadable as exc:
        # Mostly a store in a folder this user may not write: SQLite must create the
        # store's `-shm` file beside it to read a WAL store, and says "readonly" or
        # "unable to open".
        raise UsageError(
            f"{exc}; a lesson store is read with its -wal and -shm files beside it: check "
            "that its folder is writable by you (or copy the store to one that is)"
        ) from None
    except OSError as exc:  # recall's own state (generations, ledger) cannot be written
        where = exc.filename or context.recall_dir
        raise UsageError(
            f"{where}: cannot write recall's state ({exc.strerror or exc}); check the state "
            "folder's permissions or set ZEROSHOT_STATE_DIR"
        ) from None
    signals = extract_signals(call, context.workspace_root)
    document = answer.to_json()
    document["repository"] = context.repository
    document["signals"] = {
        "paths": list(signals.paths),
        "folders": list(signals.folders),
        "identifiers": list(signals.identifiers),
        "terms": sorted(signals.terms),
        "commands": list(signals.commands),
    }
    if args.json:
        print_json(document)
        return 0
    _print_human(document)
    return 0


def _print_human(document: dict[str, Any]) -> None:
    out = sys.stdout
    if document["repository"] is None:
        out.write("no repository namespace (no remote; pass --repository): nothing recalls\n")
    signals = document["signals"]
    out.write(f"paths: {', '.join(signals['paths']) or '-'}\n")
    out.write(f"identifiers: {', '.join(signals['identifiers']) or '-'}\n")
    out.write(f"commands: {', '.join(signals['commands']) or '-'}\n")
    for card in document["cards"]:
        out.write(f"deliver {card['id']} r{card['revision']}: {card['match']} ({card['score']})\n")
    for card in document["skipped"]:
        out.write(f"skip {card['id']} r{card['revision']}: {card['match']} ({card['score']}), ")
        out.write(f"{card['reason'].replace('_', ' ')}\n")
    if not document["cards"]:
        out.write("no card would be delivered\n")
    else:
        out.write("\n" + document["context"] + "\n\n")
    out.write(f"budget left: {document['budget_left']} bytes\n")


def with_options(context: RecallContext, args: argparse.Namespace) -> RecallContext:
    """The context with `--store` and `--budget-bytes` (checked when parsed) applied."""
    changes: dict[str, Any] = {}
    if args.store:
        changes["store"] = args.store
    if args.budget_bytes is not None:
        changes["budget_bytes"] = args.budget_bytes
    return context.replace(**changes) if changes else context
