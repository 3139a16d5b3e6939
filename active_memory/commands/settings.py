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
        "SPEC order: the run's runtime JSON (--config) or ACTIVE_MEMORY_* variables, then "
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
        help="a run's runtime JSON: its activeMemory section comes first",
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
        value = str(item.value).lower() if isinstance(item.value, bool) else str(item.value)
        table.add_row(name, value, item.source)
    console = Console()
    console.print(table)
    scopes = ", ".join(sorted(settings.scopes)) or "none (Active Memory is off here)"
    console.print(f"scopes on: {scopes}")
    if root is None:
        console.print("no checkout here: only the user's settings file and defaults apply")
    return 0


def _runtime(path: str) -> dict[str, Any]:
    # The whole plan is checked (SPEC §2: every violation is a clear error, exit 2); only
    # the keys it really sets count as the run's.
    from pathlib import Path

    from active_memory.config import parse_runtime_settings, read_json_file

    document = read_json_file(Path(path), "runtime JSON")
    parse_runtime_settings(document)
    return document if isinstance(document, dict) else {}
