"""`active-memory lessons list`: a page of lessons, plain to a pipe, a table on a terminal."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import add_json_option, add_store_option, print_json
from active_memory.commands.lessons_store import non_negative, positive, run_or_empty

if TYPE_CHECKING:
    from active_memory.store import LessonStore


def add_list_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `lessons list`."""
    listing = actions.add_parser("list", help="lessons of the store, one per row")
    listing.add_argument("--repository", metavar="NS", help="only this repository namespace")
    listing.add_argument("--graph", metavar="HASH", help="only lessons of this graph hash")
    listing.add_argument("--node", metavar="NODE", help="only lessons of this graph node")
    listing.add_argument("--kind", choices=["repository", "graph"], help="only this scope kind")
    listing.add_argument("--retired", action="store_true", help="include retired tombstones")
    listing.add_argument(
        "--stale",
        action="store_true",
        help="only lessons whose cited code changed since they were published, each judged "
        "against its own repository's checkout (--checkout, the current one, or one this "
        "machine knows)",
    )
    listing.add_argument(
        "--checkout",
        metavar="DIR",
        action="append",
        help="a checkout --stale and the table's stale column compare its repository's "
        "lessons with (repeatable)",
    )
    listing.add_argument(
        "--deferred",
        action="store_true",
        help="only deferred lessons, with why, when and by whom each was deferred (they come "
        "back to the next maintenance of their scope)",
    )
    listing.add_argument(
        "--sort",
        choices=["id", "effectiveness"],
        default="id",
        help="order: by ID (default), or by effectiveness (delivered lessons first, highest "
        "recurrence rate when delivered, then most delivered; then never-delivered lessons, "
        "most runs that touched them); shows the counters",
    )
    listing.add_argument(
        "--limit",
        type=positive,
        metavar="N",
        help="show at most N lessons (default: what fits the screen on a terminal, all otherwise)",
    )
    listing.add_argument(
        "--offset", type=non_negative, default=0, metavar="N", help="skip the first N lessons"
    )
    listing.add_argument(
        "--all", action="store_true",
        help="every lesson: retired tombstones included, no paging (even on a terminal)",
    )  # fmt: skip
    listing.add_argument(
        "--table",
        action="store_true",
        help="a table even when stdout is not a terminal (with stale and effectiveness columns)",
    )
    add_store_option(listing)
    add_json_option(listing)
    listing.set_defaults(handler=list_lessons)


def list_lessons(args: argparse.Namespace) -> int:
    """`lessons list`: a page of lessons, plain when not on a terminal, and the count.

    Reads summaries (no cards, no evidence) unless `--json` or the table asks for whole
    lessons. On a terminal (or with `--table`), a rich table of what fits the screen (or
    `--limit`), with stale and effectiveness columns, and a line saying how many there are
    and how to see more; to a pipe, one tab-separated line per lesson (ID, revision,
    status, scope, title) and the count on stderr.
    """
    from active_memory.quality.effectiveness import effectiveness_order
    from active_memory.store import LessonQuery
    from active_memory.store.effectiveness import Effectiveness

    if args.deferred:
        from active_memory.commands.lessons_deferred import list_deferred

        return list_deferred(args, run_or_empty)

    query = LessonQuery(
        repository=args.repository,
        graph_hash=args.graph,
        node=args.node,
        kind=args.kind,
        include_retired=args.retired or args.all,
    )
    by_effectiveness = args.sort == "effectiveness"
    terminal = not args.json and (args.table or sys.stdout.isatty())
    limit = None if args.all else args.limit
    if limit is None and terminal and not args.all and sys.stdout.isatty():
        import shutil

        limit = max(10, shutil.get_terminal_size().lines - 8)

    from active_memory.commands import stale_listing

    known = stale_listing.known_checkouts(args) if args.stale or terminal else None
    stale: dict[str, list[Any]] = {}
    judgements: list[Any] = []

    async def job(store: LessonStore) -> tuple[list[Any], dict[str, Effectiveness], int]:
        summaries = await store.summaries(query)
        if args.stale and known is not None:
            judgements.append(await stale_listing.judged(store, query, known))
            stale.update(judgements[0].stale())
            summaries = [item for item in summaries if item.id in stale]
        counters = {}
        if by_effectiveness or terminal:
            counters = await store.effectiveness([item.id for item in summaries])
        if by_effectiveness:
            blank = Effectiveness()
            summaries.sort(
                key=lambda item: effectiveness_order(item.id, counters.get(item.id, blank))
            )
        page = summaries[args.offset : None if limit is None else args.offset + limit]
        if not args.json and not terminal:
            return page, counters, len(summaries)
        whole = await _whole(store, query, [item.id for item in page])
        if terminal and not args.stale and known is not None:
            judgements.append(await _judge_page(whole, known))
            stale.update(judgements[0].stale())
        return (whole if args.json else page), counters, len(summaries)

    page, counters, total = run_or_empty(args, job) or ([], {}, 0)
    if args.stale and judgements and not args.json and stale_listing.note(judgements[0]):
        print(f"active-memory: {stale_listing.note(judgements[0])}", file=sys.stderr)
    if args.json:
        documents = []
        for item in page:
            document = item.model_dump(mode="json")
            if args.stale:
                document["stale"] = stale_listing.stale_json(stale.get(item.id, []))
            if by_effectiveness:
                document["effectiveness"] = counters.get(item.id, Effectiveness()).to_json()
            documents.append(document)
        extra = (
            {"not_judged": stale_listing.not_judged(judgements[0])}
            if args.stale and judgements
            else {}
        )
        print_json({"lessons": documents, "count": total, "offset": args.offset, **extra})
        return 0
    if not terminal:
        from active_memory.commands.listing import summary_lines

        sys.stdout.write(summary_lines(page, counters if by_effectiveness else None))
        print(f"{total} lessons" + _page_note(len(page), total, args.offset), file=sys.stderr)
        return 0
    from active_memory.commands.render import StaleColumn, lesson_table, stdout_console

    console = stdout_console()
    if not page:
        console.print("No lessons match." if not total else f"No lessons past {args.offset}.")
        return 0
    column = StaleColumn(
        changed={key: len(found) for key, found in stale.items()},
        unjudged=frozenset(judgements[0].unjudged) if judgements else frozenset(),
    )
    console.print(lesson_table(page, counters, total=total, stale=column))
    note = _page_note(len(page), total, args.offset)
    if note:
        console.print(note.strip("; "))
    return 0


async def _whole(store: LessonStore, query: Any, ids: list[str]) -> list[Any]:
    """The whole lessons (or tombstones) of `ids`, in that order."""
    if len(ids) <= 200:  # a page: read just those lessons
        found = [await store.get(lesson_id) for lesson_id in ids]
        return [item for item in found if item is not None]
    by_id = {item.id: item for item in await store.select(query)}
    return [by_id[lesson_id] for lesson_id in ids if lesson_id in by_id]


async def _judge_page(lessons: list[Any], known: Any) -> Any:
    """A page's lessons judged, each against its repository's checkout (in a thread)."""
    import anyio.to_thread

    from active_memory.checkout.by_repository import judge

    return await anyio.to_thread.run_sync(judge, lessons, known)


def _page_note(shown: int, total: int, offset: int) -> str:
    if shown >= total:
        return ""
    return (
        f"; showing {offset + 1}-{offset + shown} of {total}: --offset {offset + shown} "
        "for the next page, --limit N or --all for more"
    )
