"""`active-memory hook install|uninstall claude|codex|opencode` (standard library at import).

`register(hook_subparsers)` adds both subcommands to the `hook` command's subparsers;
the `hook` command module calls it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

_NAMES = {"claude": "Claude Code", "codex": "Codex", "opencode": "OpenCode"}


def register(hook_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `install` and `uninstall` under `active-memory hook`."""
    from active_memory.hooks.paths import DEFAULT_PORT

    install = hook_subparsers.add_parser(
        "install",
        help="merge our hook into a harness's config (idempotent)",
        description="Merge the Active Memory hook into the harness's own configuration. "
        "Other hooks and settings are kept; running it again changes nothing.",
    )
    _common_options(install)
    install.add_argument(
        "--http",
        action="store_true",
        help="claude only: an HTTP hook to the resident server (`active-memory serve`) "
        "instead of a command hook",
    )
    install.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"with --http: the server's port (default {DEFAULT_PORT})",
    )
    install.set_defaults(handler=_install)

    uninstall = hook_subparsers.add_parser(
        "uninstall",
        help="remove our hook from a harness's config, keeping everything else",
    )
    _common_options(uninstall)
    uninstall.set_defaults(handler=_uninstall)


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("harness", choices=tuple(_NAMES), help="which harness")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--project",
        dest="where",
        action="store_const",
        const="project",
        help="the current checkout's config (default)",
    )
    where.add_argument(
        "--user",
        dest="where",
        action="store_const",
        const="user",
        help="your user config (~/.claude, ~/.codex, ~/.config/opencode)",
    )
    parser.set_defaults(where="project")
    parser.add_argument(
        "--dry-run", action="store_true", help="print the change as a diff; write nothing"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def _install(args: argparse.Namespace) -> int:
    return _run(args, install=True)


def _uninstall(args: argparse.Namespace) -> int:
    return _run(args, install=False)


def _run(args: argparse.Namespace, *, install: bool) -> int:
    from active_memory.errors import UsageError
    from active_memory.hooks import installers

    http = bool(getattr(args, "http", False))
    port = int(getattr(args, "port", 0) or 0)
    if install and http and not 0 < port < 65536:
        raise UsageError(f"--port {port}: must be 1..65535")
    path = installers.target_path(args.harness, args.where, Path.cwd())
    change = installers.plan(args.harness, path, install=install, http=http, port=port)
    if not args.dry_run:
        change.apply()
        if install:  # the hook's modules run once per tool call: compile them now
            from active_memory.hooks.lean import compile_hook_path

            compile_hook_path()
    name = _NAMES[args.harness]
    if args.json:
        document: dict[str, object] = {
            "harness": args.harness,
            "action": "install" if install else "uninstall",
            "path": str(path),
            "changed": change.changed,
            "dry_run": bool(args.dry_run),
        }
        if args.dry_run:
            document["diff"] = change.diff()
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return 0
    if args.dry_run:
        sys.stdout.write(change.diff() or f"nothing would change in {path}\n")
        print("dry run: nothing was written", file=sys.stderr)
        return 0
    if not change.changed:
        state = "is already installed in" if install else "is not installed in"
        print(f"the {name} hook {state} {path}; nothing changed")
        return 0
    verb = "installed the" if install else "removed the"
    where = "in" if install else "from"
    print(f"{verb} {name} hook {where} {path}")
    if install:
        for line in _next_steps(args.harness, http, path):
            print(line)
    return 0


def _next_steps(harness: str, http: bool, path: Path) -> list[str]:
    from active_memory.hooks.paths import TOKEN_ENV

    if harness == "claude" and http:
        return [
            "Claude Code sends the server's token from $" + TOKEN_ENV + "; before starting "
            "Claude Code run:",
            f'  export {TOKEN_ENV}="$(active-memory serve --print-token)"',
            "and keep `active-memory serve` running (without it, tool calls get no lessons).",
        ]
    if harness == "codex":
        return ["Codex asks you to review and trust new hooks: open /hooks in Codex."]
    if harness == "opencode":
        return ["OpenCode loads the plugin at its next start."]
    return []
