"""`active-memory settings [--cwd DIR] [--config RUNTIME.json] [--json]`: effective settings."""

from __future__ import annotations

import argparse
import os
from typing import Any

from active_memory.commands.common import add_json_option, print_json


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `settings`."""
    parser = subcommands.add_parser(
        "settings",
        help="show the effective settings (enabled, repository, graph, budgetBytes) and "
        "where each value came from",
        description="The settings hooks, the recall server and the worker use here, in "
        "this order: the run's runtime JSON (--config) or ACTIVE_MEMORY_* variables, then "
        ".active-memory.toml at the checkout root, then <state dir>/active-memory/"
        "settings.toml, then the defaults (docs/settings.md).",
    )
    parser.add_argument(
        "--cwd", metavar="DIR", default=None, help="where to look (default: the current folder)"
    )
    parser.add_argument(
        "--config",
        metavar="RUNTIME.json",
        default=None,
        help="a runtime JSON, or a run record (its `runtime`): its activeMemory section "
        "comes first",
    )
    add_json_option(parser)
    parser.set_defaults(handler=_settings)


def load_settings(
    cwd: str | None = None, runtime: dict[str, Any] | None = None, *, use_env: bool = True
) -> tuple[Any, str | None]:
    """The effective settings for the checkout holding `cwd`, and that checkout's root.

    For commands: an invalid settings file becomes a `UsageError` (exit 2).
    """
    from active_memory.errors import UsageError
    from active_memory.recall.environment import WORKSPACE_ENV, find_checkout_root
    from active_memory.settings import SettingsError, effective_settings

    folder = os.path.abspath(cwd or os.getcwd())
    if not os.path.isdir(folder):
        raise UsageError(f"--cwd {cwd}: not a folder")
    root = (os.environ.get(WORKSPACE_ENV) if use_env else None) or find_checkout_root(folder)
    try:
        return effective_settings(root, os.environ, runtime=runtime, use_env=use_env), root
    except SettingsError as exc:
        raise UsageError(f"{exc}; fix the file or move it away") from None


def _settings(args: argparse.Namespace) -> int:
    runtime = _runtime(args.config) if args.config else None
    settings, root = load_settings(args.cwd, runtime)
    if args.json:
        print_json({"root": root, **settings.to_json()})
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table("setting", "value", "source")
    for name, item in settings.values.items():
        if isinstance(item.value, bool):
            value = str(item.value).lower()
        elif isinstance(item.value, list):
            value = ", ".join(item.value) or "(none)"
        else:
            value = str(item.value)
        table.add_row(name, value, item.source)
    console = Console()
    console.print(table)
    scopes = ", ".join(sorted(settings.scopes)) or "none (Active Memory is off here)"
    console.print(f"scopes on: {scopes}")
    if root is None:
        console.print("no checkout here: only the user's settings file and defaults apply")
    return 0


def _runtime(path: str) -> dict[str, Any]:
    """The runtime JSON at `path`, or a run record's `runtime` (what a run ran with).

    The whole plan is checked (every violation is an error, exit 2), and the error names
    the file; only the keys it really sets count as the run's.
    """
    from pathlib import Path

    from active_memory.config import parse_runtime_settings, read_json_file
    from active_memory.errors import UsageError

    document = read_json_file(Path(path), "runtime JSON")
    if isinstance(document, dict) and str(document.get("schema", "")).startswith(
        "active-memory/run@"
    ):
        document = document.get("runtime")  # a run record: the plan it ran with
        if not isinstance(document, dict):
            raise UsageError(f"{path}: this run record has no `runtime` to take settings from")
    try:
        parse_runtime_settings(document)
    except UsageError as exc:
        lines = str(exc).splitlines()
        more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
        raise UsageError(
            f"{path}: not a runtime JSON or a run record: {lines[0].strip()}{more}; "
            "see docs/config.md"
        ) from None
    return document if isinstance(document, dict) else {}
