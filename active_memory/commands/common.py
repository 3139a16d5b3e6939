"""Options and output helpers shared by command families (standard library only)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_store_option(parser: argparse.ArgumentParser) -> None:
    """`--store PATH_OR_URL`; default from ACTIVE_MEMORY_STORE, then SPEC §7's state dir."""
    parser.add_argument(
        "--store",
        metavar="PATH_OR_URL",
        default=None,
        help="lesson store: a SQLite path or a postgresql:// URL "
        "(default: $ACTIVE_MEMORY_STORE, else the zeroshot state dir)",
    )


def add_budget_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """`--budget-bytes N`, parsed by SPEC §2's one rule (`session_budget`): a value
    outside 1..16384 is a usage error (exit 2) naming what is allowed."""
    parser.add_argument("--budget-bytes", type=_budget, metavar="N", help=help_text)


def _budget(text: str) -> int:
    from active_memory.session_budget import ALLOWED, budget_from_text

    number = budget_from_text(text)
    if number is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a budget; allowed {ALLOWED}")
    return number


def add_json_option(parser: argparse.ArgumentParser) -> None:
    """`--json`: one JSON document on stdout instead of tables."""
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def print_json(document: Any) -> None:
    """Write one JSON document and a newline to stdout, credentials masked (every
    `--json` output passes here: a record written before the screen may hold one)."""
    from active_memory.credential_gate import mask_value

    document = mask_value(document)
    sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2, sort_keys=False))
    sys.stdout.write("\n")


def refresh_recall(location: str) -> None:
    """After a command changed the store at `location`: bring the recall index
    generations this machine recalls up to date (docs/recall.md, "Generations and pins")."""
    from active_memory.recall.snapshot import refresh_after_write

    refresh_after_write(location)
