"""`active-memory lessons list|show|export|import|history|revert|audit|stats`."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import add_json_option, add_store_option, print_json

if TYPE_CHECKING:
    from active_memory.lessons import Author, HistoryEntry, Lesson, Tombstone
    from active_memory.store import LessonStore


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `lessons` and its subcommands."""
    lessons = subcommands.add_parser("lessons", help="inspect, move and undo lessons")
    actions = lessons.add_subparsers(dest="lessons_command", metavar="ACTION", required=True)

    listing = actions.add_parser("list", help="lessons of the store, one per row")
    listing.add_argument("--repository", metavar="NS", help="only this repository namespace")
    listing.add_argument("--graph", metavar="HASH", help="only lessons of this graph hash")
    listing.add_argument("--node", metavar="NODE", help="only lessons of this graph node")
    listing.add_argument("--kind", choices=["repository", "graph"], help="only this scope kind")
    listing.add_argument("--retired", action="store_true", help="include retired tombstones")
    listing.add_argument(
        "--stale",
        action="store_true",
        help="only lessons whose cited code changed since they were published "
        "(against --checkout, default: the checkout around the current directory)",
    )
    listing.add_argument(
        "--checkout", metavar="DIR", default=None, help="the checkout --stale compares with"
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
        type=_positive,
        metavar="N",
        help="show at most N lessons (default: what fits the screen on a terminal, all otherwise)",
    )
    listing.add_argument(
        "--offset", type=_non_negative, default=0, metavar="N", help="skip the first N lessons"
    )
    listing.add_argument(
        "--all", action="store_true",
        help="every lesson: retired tombstones included, no paging (even on a terminal)",
    )  # fmt: skip
    listing.add_argument(
        "--table", action="store_true", help="a table even when stdout is not a terminal"
    )
    listing.set_defaults(handler=_list)

    show = actions.add_parser("show", help="one lesson: card, scope, evidence, history")
    show.add_argument("id", metavar="ID")
    show.set_defaults(handler=_show)

    export = actions.add_parser(
        "export",
        help="every lesson as JSON Lines (tombstones too), or a scope's active lessons as "
        "AGENTS.md / CLAUDE.md sections, Cursor rules or an Agent Skill",
        description="JSON Lines (the default) is the store's own format: `lessons import` "
        "reads it back, which is how a team shares lessons through git. The other formats "
        "write the active repository lessons of one namespace as the rules files agents "
        "already read (docs/export.md); a re-export replaces only what is ours.",
    )
    export.add_argument("-o", "--output", metavar="FILE", help="jsonl: write here, not stdout")
    export.add_argument(
        "--format",
        choices=["jsonl", "agents-md", "claude-md", "cursor-rules", "skill"],
        default="jsonl",
        help="jsonl (default); agents-md, claude-md: our section of AGENTS.md / CLAUDE.md; "
        "cursor-rules: .cursor/rules/active-memory-<id>.mdc; skill: an Agent Skill folder",
    )
    export.add_argument(
        "--scope",
        metavar="NAMESPACE",
        help="the repository namespace (repo:…) to export (default with a rules format: "
        "the checkout holding --dir); jsonl: only this namespace's lessons",
    )
    export.add_argument(
        "--dir",
        metavar="DIR",
        help="rules formats: where to write (default: the root of the current checkout)",
    )
    add_json_option(export)
    export.set_defaults(handler=_export)

    importing = actions.add_parser("import", help="add lessons from an export, all or nothing")
    importing.add_argument("file", metavar="FILE", help="JSON Lines file, or - for stdin")
    importing.set_defaults(handler=_import)

    history = actions.add_parser("history", help="every revision of a lesson: who, what, why")
    history.add_argument("id", metavar="ID")
    history.set_defaults(handler=_history)

    revert = actions.add_parser("revert", help="make an earlier revision current again")
    revert.add_argument("id", metavar="ID")
    revert.add_argument("--to", type=int, required=True, metavar="REV", dest="to_revision")
    revert.set_defaults(handler=_revert)

    audit = actions.add_parser(
        "audit", help="screen stored lessons for credentials; exit 1 if any is found"
    )
    audit.set_defaults(handler=_audit)

    stats = actions.add_parser(
        "stats", help="lessons per scope and status; deliveries and refusals of recent postmortems"
    )
    stats.add_argument(
        "--last", type=_positive, default=20, metavar="N", help="postmortems to read (default 20)"
    )
    stats.add_argument(
        "--journal",
        metavar="DIR",
        help="postmortem journal folder (default: the store's)",
    )
    stats.set_defaults(handler=_stats)

    for parser in (listing, show, export, importing, history, revert, audit, stats):
        add_store_option(parser)
        if parser is not export:
            add_json_option(parser)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 0, got {text!r}")
    return value


def _run(args: argparse.Namespace, job: Any, *, create: bool = False) -> Any:
    """Open the store named by the options, run `job(store)` on anyio, close it."""
    import anyio

    from active_memory.store import open_store, resolve_store_location

    location = resolve_store_location(args.store)

    async def main() -> Any:
        async with open_store(location, create=create) as store:
            return await job(store)

    return anyio.run(main, backend="asyncio")


def _run_or_empty(args: argparse.Namespace, job: Any) -> Any:
    """Like `_run`, but a store that does not exist yet reads as empty."""
    from active_memory.errors import StoreMissing

    try:
        return _run(args, job)
    except StoreMissing as missing:
        print(f"active-memory: {missing}", file=sys.stderr)
        return []


def _person() -> Author:
    import getpass

    from active_memory.lessons import Author

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return Author(specialist=f"person:{user}")


def _list(args: argparse.Namespace) -> int:
    """`lessons list`: a page of lessons, plain when not on a terminal, and the count.

    Reads summaries (no cards, no evidence) unless `--json` asks for whole lessons. On a
    terminal, a rich table of what fits the screen (or `--limit`) and a line saying how
    many there are and how to see more; to a pipe, one tab-separated line per lesson
    (ID, revision, status, scope, title) and the count on stderr.
    """
    from active_memory.quality.effectiveness import effectiveness_order
    from active_memory.store import LessonQuery
    from active_memory.store.effectiveness import Effectiveness

    if args.deferred:
        from active_memory.commands.lessons_deferred import list_deferred

        return list_deferred(args, _run_or_empty)

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

    checkout = _stale_checkout(args) if args.stale else None
    stale: dict[str, list[Any]] = {}

    async def job(store: LessonStore) -> tuple[list[Any], dict[str, Effectiveness], int]:
        summaries = await store.summaries(query)
        if checkout is not None:
            import anyio.to_thread

            from active_memory.checkout.staleness import stale_lessons

            lessons = await store.select(query)
            stale.update(await anyio.to_thread.run_sync(stale_lessons, checkout, lessons))
            summaries = [item for item in summaries if item.id in stale]
        counters = {}
        if by_effectiveness:
            counters = await store.effectiveness([item.id for item in summaries])
            blank = Effectiveness()
            summaries.sort(
                key=lambda item: effectiveness_order(item.id, counters.get(item.id, blank))
            )
        page = summaries[args.offset : None if limit is None else args.offset + limit]
        if not args.json:
            return page, counters, len(summaries)
        if len(page) <= 200:  # a page: read just those lessons
            found = [await store.get(item.id) for item in page]
            return [item for item in found if item is not None], counters, len(summaries)
        by_id = {item.id: item for item in await store.select(query)}
        return [by_id[item.id] for item in page if item.id in by_id], counters, len(summaries)

    page, counters, total = _run_or_empty(args, job) or ([], {}, 0)
    if args.json:
        documents = []
        for item in page:
            document = item.model_dump(mode="json")
            if args.stale:
                document["stale"] = [
                    {"path": c.citation.path, "lines": c.citation.lines, "why": c.why}
                    | ({"path_now": c.path_now} if c.path_now else {})
                    for c in stale.get(item.id, [])
                ]
            if by_effectiveness:
                document["effectiveness"] = counters.get(item.id, Effectiveness()).to_json()
            documents.append(document)
        print_json({"lessons": documents, "count": total, "offset": args.offset})
        return 0
    if not terminal:
        from active_memory.commands.listing import summary_lines

        sys.stdout.write(summary_lines(page, counters if by_effectiveness else None))
        print(f"{total} lessons" + _page_note(len(page), total, args.offset), file=sys.stderr)
        return 0
    from active_memory.commands.render import lesson_table, stdout_console

    console = stdout_console()
    if not page:
        console.print("No lessons match." if not total else f"No lessons past {args.offset}.")
        return 0
    console.print(lesson_table(page, counters if by_effectiveness else None, total=total))
    note = _page_note(len(page), total, args.offset)
    if note:
        console.print(note.strip("; "))
    return 0


def _stale_checkout(args: argparse.Namespace) -> Any:
    """The checkout `--stale` compares the cited code with."""
    from active_memory.checkout import Checkout, NotACheckout
    from active_memory.errors import UsageError

    try:
        return Checkout(args.checkout or ".")
    except NotACheckout as exc:
        where = f"--checkout {args.checkout}" if args.checkout else "the current directory"
        raise UsageError(
            f"--stale compares cited code with a checkout; {where} is not one ({exc.reason}): "
            "run it inside the repository or pass --checkout DIR"
        ) from None


def _page_note(shown: int, total: int, offset: int) -> str:
    if shown >= total:
        return ""
    return (
        f"; showing {offset + 1}-{offset + shown} of {total}: --offset {offset + shown} "
        "for the next page, --limit N or --all for more"
    )


def _show(args: argparse.Namespace) -> int:
    from active_memory.errors import LessonNotFound
    from active_memory.store.effectiveness import Effectiveness

    async def job(
        store: LessonStore,
    ) -> tuple[Lesson | Tombstone | None, list[HistoryEntry], dict[str, Effectiveness]]:
        found = await store.get(args.id)
        return found, await store.history(args.id), await store.effectiveness([args.id])

    lesson, history, counters = _run(args, job)
    if lesson is None:
        raise LessonNotFound(args.id)
    effectiveness = counters.get(args.id, Effectiveness())
    if args.json:
        document = lesson.model_dump(mode="json")
        document["effectiveness"] = effectiveness.to_json()
        document["history"] = [entry.model_dump(mode="json") for entry in history]
        print_json(document)
        return 0
    from active_memory.commands.render import lesson_panel, stdout_console

    stdout_console().print(lesson_panel(lesson, history, effectiveness))
    return 0


def _export(args: argparse.Namespace) -> int:
    from active_memory.store import LessonQuery

    if args.format != "jsonl":
        return _export_rules(args)
    if args.dir:
        from active_memory.errors import UsageError

        raise UsageError("--dir: only with a rules --format; jsonl writes to -o FILE or stdout")

    async def job(store: LessonStore) -> list[Lesson | Tombstone]:
        found = await store.select(LessonQuery(include_retired=True))
        return [item for item in found if args.scope is None or _of(item, args.scope)]

    found: list[Lesson | Tombstone] = _run_or_empty(args, job)
    lines = "".join(item.model_dump_json() + "\n" for item in found)
    if args.output:
        from active_memory.atomic_files import write_output_file

        write_output_file(args.output, lines)
        print(f"exported {len(found)} lessons to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(lines)
    return 0


def _of(item: Lesson | Tombstone, namespace: str) -> bool:
    return item.scope.repository == namespace


def _export_rules(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from active_memory.errors import UsageError
    from active_memory.exports import export
    from active_memory.lessons import Lesson
    from active_memory.recall.environment import find_checkout_root, repository_namespace
    from active_memory.store import LessonQuery

    if args.output:
        raise UsageError(f"-o: not with --format {args.format}; use --dir DIR")
    folder = os.path.abspath(args.dir or os.getcwd())
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"--dir {args.dir}: is a file, not a folder")
    existing = folder  # a --dir to be made: its checkout is the one of its nearest parent
    while not os.path.isdir(existing):
        existing = os.path.dirname(existing)
    root = find_checkout_root(existing)
    namespace = args.scope or (repository_namespace(root) if root else None)
    if not namespace:
        raise UsageError(
            "no repository here to export for: run inside a checkout or pass --scope repo:…"
        )
    target = Path(folder if args.dir else (root or folder))

    async def job(store: LessonStore) -> list[Lesson | Tombstone]:
        return await store.select(LessonQuery(repository=namespace, kind="repository"))

    found = _run_or_empty(args, job)
    lessons = [item for item in found if isinstance(item, Lesson) and item.status == "active"]
    try:
        target.mkdir(parents=True, exist_ok=True)  # --dir is made, as -o's folder is not
    except OSError as exc:
        raise UsageError(f"--dir {args.dir}: cannot create it ({exc.strerror})") from None
    written = export(args.format, lessons, namespace, target)
    if args.json:
        print_json(
            {
                "format": args.format,
                "scope": namespace,
                "lessons": [lesson.id for lesson in lessons],
                "files": [{"path": str(w.path), "action": w.action} for w in written],
            }
        )
        return 0
    changed = [w for w in written if w.action != "unchanged"]
    print(
        f"exported {len(lessons)} lessons of {namespace} as {args.format}: "
        f"{len(changed)} files changed, {len(written) - len(changed)} unchanged"
    )
    for item in changed:
        print(f"  {item.action} {item.path}")
    return 0


def _import(args: argparse.Namespace) -> int:
    import contextlib

    from active_memory.commands.files import check_lesson_lines, spool_stdin, stream_lesson_lines

    author = _person()
    with contextlib.ExitStack() as stack:
        source, label = args.file, args.file
        if source == "-":  # read twice (check, then write): kept in a private spool file
            source, label = stack.enter_context(spool_stdin()).name, "stdin"
        # Two passes over the file, holding no record: every line is checked first (a bad
        # one refuses the file, nothing written), then the records are streamed to the
        # store, which writes them in chunks inside its one transaction.
        count = check_lesson_lines(source, label)

        async def job(store: LessonStore) -> Any:
            return await store.import_lessons(stream_lesson_lines(source, label), author)

        report = _run(args, job, create=True)
    if args.json:
        print_json(report.model_dump(mode="json"))
        return 0
    from active_memory.commands.render import stdout_console

    console = stdout_console()
    console.print(
        f"Imported {count} records: {len(report.added)} added, "
        f"{len(report.updated)} updated, {len(report.unchanged)} left as they were."
    )
    for lesson_id, why in report.unchanged:
        console.print(f"  {lesson_id}: {why}")
    return 0


def _history(args: argparse.Namespace) -> int:
    from active_memory.errors import LessonNotFound

    async def job(store: LessonStore) -> list[HistoryEntry]:
        return await store.history(args.id)

    entries: list[HistoryEntry] = _run(args, job)
    if not entries:
        raise LessonNotFound(args.id)
    if args.json:
        print_json({"id": args.id, "history": [e.model_dump(mode="json") for e in entries]})
        return 0
    from active_memory.commands.render import history_table, stdout_console

    stdout_console().print(history_table(args.id, entries))
    return 0


def _revert(args: argparse.Namespace) -> int:
    author = _person()

    async def job(store: LessonStore) -> Lesson | Tombstone:
        from active_memory.credentials import secret_reasons
        from active_memory.errors import UsageError

        # A card with a credential stays in history (audit lists it) but is never current.
        for entry in await store.history(args.id):
            if entry.revision == args.to_revision and entry.card is not None:
                found = secret_reasons(entry.card.model_dump(mode="json"), "card")
                if found:
                    raise UsageError(
                        f"{args.id} r{args.to_revision} holds a credential; not reverted: "
                        + "; ".join(found)
                    )
        return await store.revert(args.id, args.to_revision, author)

    lesson: Lesson | Tombstone = _run(args, job)
    if args.json:
        print_json(lesson.model_dump(mode="json"))
        return 0
    print(
        f"{lesson.id} is now r{lesson.revision} ({lesson.status}), "
        f"with the content of r{args.to_revision}."
    )
    return 0


def _audit(args: argparse.Namespace) -> int:
    from active_memory.quality.audit import LessonFinding, audit_store

    async def job(store: LessonStore) -> list[LessonFinding]:
        return await audit_store(store)

    findings: list[LessonFinding] = _run(args, job)
    if args.json:
        print_json({"findings": [finding.to_json() for finding in findings]})
        return 1 if findings else 0
    from active_memory.commands.render import findings_table, stdout_console

    console = stdout_console()
    if not findings:
        console.print("No credentials found in the store.")
        return 0
    console.print(findings_table(findings))
    return 1


def _stats(args: argparse.Namespace) -> int:
    from pathlib import Path

    from active_memory.orchestrator.journal import Journal
    from active_memory.quality.stats import ScopeCount, lesson_counts, stats_json, summarize

    async def job(store: LessonStore) -> list[ScopeCount]:
        return await lesson_counts(store)

    counts: list[ScopeCount] = _run_or_empty(args, job)
    from active_memory.store import resolve_store_location

    journal = Journal.of(
        resolve_store_location(args.store), Path(args.journal) if args.journal else None
    )
    if args.journal and not journal.directory.is_dir():
        from active_memory.errors import UsageError

        raise UsageError(f"{args.journal}: no such journal folder")
    summary = summarize(journal.entries(), args.last)
    if args.json:
        print_json(stats_json(counts, summary, args.last))
        return 0
    from active_memory.commands.render import stats_tables, stdout_console

    console = stdout_console()
    for table in stats_tables(counts, summary, args.last):
        console.print(table)
    return 0
