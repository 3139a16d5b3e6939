"""`lessons list --deferred`: each deferred lesson and what deferred it (docs/specialists.md,
"defer that comes back")."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import print_json

if TYPE_CHECKING:
    from active_memory.lessons import HistoryEntry
    from active_memory.store import LessonStore


def list_deferred(args: argparse.Namespace, run: Any) -> int:
    """`lessons list --deferred`: each deferred lesson and its latest deferral; `run`
    runs a store job (`lessons_store.run_or_empty`)."""
    from datetime import UTC, datetime

    from active_memory.lessons import Lesson
    from active_memory.store import LessonQuery

    query = LessonQuery(
        repository=args.repository, graph_hash=args.graph, node=args.node, kind=args.kind
    )

    async def job(store: LessonStore) -> list[tuple[Lesson, HistoryEntry | None]]:
        found: list[tuple[Lesson, HistoryEntry | None]] = []
        for item in await store.select(query):
            if isinstance(item, Lesson) and item.status == "deferred":
                history = await store.history(item.id)
                found.append((item, _deferral(history)))
        return found

    deferred: list[tuple[Lesson, HistoryEntry | None]] = run(args, job) or []
    reasons = {lesson.id: _deferral_reason(entry) for lesson, entry in deferred}
    now = datetime.now(UTC)
    rows = []
    for lesson, entry in deferred:
        at = entry.at if entry is not None else None
        age = (now - at).days if at is not None and at.tzinfo is not None else None
        rows.append(
            {
                **lesson.model_dump(mode="json"),
                "deferral": {
                    "reason": reasons[lesson.id],
                    "action": entry.action if entry is not None else None,
                    "at": at.isoformat() if at is not None else None,
                    "by": entry.author.model_dump(mode="json") if entry is not None else None,
                    "age_days": age,
                },
            }
        )
    if args.json:
        print_json({"lessons": rows})
        return 0
    from rich.table import Table

    from active_memory.commands.render import stdout_console

    console = stdout_console()
    if not rows:
        console.print("No deferred lessons match.")
        return 0
    table = Table("id", "rev", "title", "deferred", "by", "reason")
    for row in rows:
        deferral = row["deferral"]
        by = deferral["by"] or {}
        when = f"{deferral['age_days']} d ago" if deferral["age_days"] is not None else "?"
        table.add_row(
            row["id"],
            str(row["revision"]),
            row["title"],
            when,
            str(by.get("specialist") or "?"),
            deferral["reason"] or "(no reason recorded)",
        )
    console.print(table)
    console.print(
        "Deferred lessons are not shown to agents; the next postmortem of their scope "
        "offers them to maintenance again (keep, adapt or retire)."
    )
    return 0


def _deferral(history: list[HistoryEntry]) -> HistoryEntry | None:
    """The revision that made a lesson deferred: its latest `defer`, else the latest one
    that left it deferred (an import of a deferred lesson, a revert)."""
    latest = next((h for h in reversed(history) if h.action == "defer"), None)
    return latest or next((h for h in reversed(history) if h.status == "deferred"), None)


def _deferral_reason(entry: HistoryEntry | None) -> str:
    if entry is None:
        return ""
    if entry.action == "defer":
        return entry.reason
    said = f": {entry.reason}" if entry.reason and entry.reason != "imported" else ""
    return f"deferred by {'an ' if entry.action == 'import' else 'a '}{entry.action}{said}"
