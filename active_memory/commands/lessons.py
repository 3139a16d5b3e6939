"""`active-memory lessons list|show|export|import|history|revert|audit|stats`: the
arguments. Each subcommand's work is in its own module: `lessons_list`,
`lessons_export`, `lessons_records` (the rest), sharing `lessons_store`."""

from __future__ import annotations

import argparse

from active_memory.commands.common import add_json_option, add_store_option
from active_memory.commands.lessons_export import add_export_parser
from active_memory.commands.lessons_list import add_list_parser
from active_memory.commands.lessons_records import (
    audit_lessons,
    history_lessons,
    import_lessons,
    revert_lessons,
    show_lessons,
    stats_lessons,
)
from active_memory.commands.lessons_store import positive


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `lessons` and its subcommands."""
    lessons = subcommands.add_parser("lessons", help="inspect, move and undo lessons")
    actions = lessons.add_subparsers(dest="lessons_command", metavar="ACTION", required=True)

    add_list_parser(actions)
    add_export_parser(actions)

    show = actions.add_parser("show", help="one lesson: card, scope, evidence, history")
    show.add_argument("id", metavar="ID")
    show.set_defaults(handler=show_lessons)

    importing = actions.add_parser("import", help="add lessons from an export, all or nothing")
    importing.add_argument("file", metavar="FILE", help="JSON Lines file, or - for stdin")
    importing.set_defaults(handler=import_lessons)

    history = actions.add_parser("history", help="every revision of a lesson: who, what, why")
    history.add_argument("id", metavar="ID")
    history.set_defaults(handler=history_lessons)

    revert = actions.add_parser("revert", help="make an earlier revision current again")
    revert.add_argument("id", metavar="ID")
    revert.add_argument("--to", type=int, required=True, metavar="REV", dest="to_revision")
    revert.set_defaults(handler=revert_lessons)

    audit = actions.add_parser(
        "audit", help="screen stored lessons for credentials; exit 1 if any is found"
    )
    audit.set_defaults(handler=audit_lessons)

    stats = actions.add_parser(
        "stats",
        help="lessons per scope and status; effectiveness; deliveries and refusals of recent "
        "postmortems",
    )
    stats.add_argument(
        "--last", type=positive, default=20, metavar="N", help="postmortems to read (default 20)"
    )
    stats.add_argument(
        "--journal",
        metavar="DIR",
        help="postmortem journal folder (default: the store's)",
    )
    stats.set_defaults(handler=stats_lessons)

    for parser in (show, importing, history, revert, audit, stats):
        add_store_option(parser)
        add_json_option(parser)
