"""`active-memory skill install|uninstall claude|codex [--project|--user] [--dry-run]`:
the init skill in the client's own skills folder (docs/init.md, "The skill")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from active_memory.commands.common import print_json

_NAMES = {"claude": "Claude Code", "codex": "Codex"}


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `skill install` and `skill uninstall`."""
    parser = subcommands.add_parser(
        "skill",
        help="install the init skill in Claude Code or Codex (your agent runs `init`)",
        description="Write the Active Memory init skill into a client's skills folder so "
        "your own agent can drive `active-memory init`: it answers the specialist tasks "
        "with its own model and subagents. Reinstalling refreshes it; other skills are "
        "never touched, and a skill of the same name that is not ours is a conflict.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for action, help_text in (
        ("install", "write or refresh the skill (idempotent)"),
        ("uninstall", "remove the skill if it is ours"),
    ):
        sub = actions.add_parser(action, help=help_text, description=help_text)
        sub.add_argument("client", choices=tuple(_NAMES), help="which client")
        where = sub.add_mutually_exclusive_group()
        where.add_argument(
            "--project",
            dest="where",
            action="store_const",
            const="project",
            help="the current checkout's skills folder (default)",
        )
        where.add_argument(
            "--user",
            dest="where",
            action="store_const",
            const="user",
            help="your user skills folder (~/.claude/skills, ~/.agents/skills)",
        )
        sub.set_defaults(where="project", handler=_run, install=action == "install")
        sub.add_argument(
            "--dry-run", action="store_true", help="print the change as a diff; write nothing"
        )
        sub.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def _run(args: argparse.Namespace) -> int:
    from active_memory.skills import SKILL_NAME, plan, skills_root

    root = skills_root(args.client, args.where, Path.cwd())
    change = plan(root, install=args.install)
    if not args.dry_run:
        change.apply()
    path = change.file.path
    if args.json:
        document: dict[str, object] = {
            "client": args.client,
            "action": "install" if args.install else "uninstall",
            "skill": SKILL_NAME,
            "path": str(path),
            "changed": change.changed,
            "dry_run": bool(args.dry_run),
        }
        if args.dry_run:
            document["diff"] = change.diff()
        print_json(document)
        return 0
    name = _NAMES[args.client]
    if args.dry_run:
        sys.stdout.write(change.diff() or f"nothing would change in {path}\n")
        print("dry run: nothing was written", file=sys.stderr)
        return 0
    if not change.changed:
        state = "is up to date in" if args.install else "is not installed in"
        print(f"the {name} skill {SKILL_NAME} {state} {path.parent}; nothing changed")
        return 0
    if args.install:
        print(f"installed the {name} skill {SKILL_NAME} in {path.parent}")
        opener = "/active-memory-init" if args.client == "claude" else "$active-memory-init"
        print(f"Ask your agent to initialise Active Memory, or type {opener}.")
    else:
        print(f"removed the {name} skill {SKILL_NAME} from {path.parent}")
    return 0
