"""`active-memory lessons show|history|revert|import|audit|stats`: one lesson, moving
lessons in, checking them, and what the store and the last postmortems say."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import print_json
from active_memory.commands.lessons_store import person, run, run_or_empty

if TYPE_CHECKING:
    from active_memory.lessons import HistoryEntry, Lesson, Tombstone
    from active_memory.store import LessonStore


def show_lessons(args: argparse.Namespace) -> int:
    """`lessons show`."""
    from active_memory.errors import LessonNotFound
    from active_memory.store.effectiveness import Effectiveness

    async def job(
        store: LessonStore,
    ) -> tuple[Lesson | Tombstone | None, list[HistoryEntry], dict[str, Effectiveness]]:
        found = await store.get(args.id)
        return found, await store.history(args.id), await store.effectiveness([args.id])

    lesson, history, counters = run(args, job)
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


def import_lessons(args: argparse.Namespace) -> int:
    """`lessons import`."""
    import contextlib

    from active_memory.commands.files import check_lesson_lines, spool_stdin, stream_lesson_lines
    from active_memory.commands.progress import progress

    author = person()
    with contextlib.ExitStack() as stack:
        source, label = args.file, args.file
        if source == "-":  # read twice (check, then write): kept in a private spool file
            source, label = stack.enter_context(spool_stdin()).name, "stdin"
        # Two passes over the file, holding no record: every line is checked first (a bad
        # one refuses the file, nothing written), then the records are streamed to the
        # store, which writes them in chunks inside its one transaction.
        steps = stack.enter_context(progress("checking", unit="lessons"))
        count = check_lesson_lines(source, label, steps.tick)
        steps.stage("importing", total=count)

        def counted() -> Any:
            for record in stream_lesson_lines(source, label):
                yield record
                steps.advance()

        async def job(store: LessonStore) -> Any:
            return await store.import_lessons(counted(), author)

        report = run(args, job, create=True)
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


def history_lessons(args: argparse.Namespace) -> int:
    """`lessons history`."""
    from active_memory.errors import LessonNotFound

    async def job(store: LessonStore) -> list[HistoryEntry]:
        return await store.history(args.id)

    entries: list[HistoryEntry] = run(args, job)
    if not entries:
        raise LessonNotFound(args.id)
    if args.json:
        print_json({"id": args.id, "history": [e.model_dump(mode="json") for e in entries]})
        return 0
    from active_memory.commands.render import history_table, stdout_console

    stdout_console().print(history_table(args.id, entries))
    return 0


def revert_lessons(args: argparse.Namespace) -> int:
    """`lessons revert`."""
    author = person()

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

    lesson: Lesson | Tombstone = run(args, job)
    if args.json:
        print_json(lesson.model_dump(mode="json"))
        return 0
    print(
        f"{lesson.id} is now r{lesson.revision} ({lesson.status}), "
        f"with the content of r{args.to_revision}."
    )
    return 0


def audit_lessons(args: argparse.Namespace) -> int:
    """`lessons audit`."""
    from active_memory.quality.audit import LessonFinding, audit_store

    async def job(store: LessonStore) -> list[LessonFinding]:
        return await audit_store(store)

    findings: list[LessonFinding] = run(args, job)
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


def stats_lessons(args: argparse.Namespace) -> int:
    """`lessons stats`."""
    from pathlib import Path

    from active_memory.orchestrator.journal import Journal
    from active_memory.quality.stats import count_lessons, stats_json, summarize
    from active_memory.quality.summary import summarize_effectiveness
    from active_memory.store import LessonQuery

    async def job(store: LessonStore) -> tuple[list[Lesson | Tombstone], dict[str, Any]]:
        items = await store.select(LessonQuery(include_retired=True))
        living = [item.id for item in items if item.status != "retired"]
        return items, await store.effectiveness(living)

    items, counters = run_or_empty(args, job) or ([], {})
    counts = count_lessons(items)
    effectiveness = summarize_effectiveness(items, counters)
    from active_memory.store import resolve_store_location

    journal = Journal.of(
        resolve_store_location(args.store), Path(args.journal) if args.journal else None
    )
    if args.journal and not journal.directory.is_dir():
        from active_memory.errors import UsageError

        raise UsageError(f"{args.journal}: no such journal folder")
    summary = summarize(journal.entries(), args.last)
    if args.json:
        print_json(stats_json(counts, summary, args.last) | effectiveness.to_json())
        return 0
    from active_memory.commands.render import stats_tables, stdout_console

    console = stdout_console()
    for table in stats_tables(counts, summary, args.last):
        console.print(table)
    from active_memory.commands.render_stats import effectiveness_tables

    for table in effectiveness_tables(effectiveness):
        console.print(table)
    return 0
