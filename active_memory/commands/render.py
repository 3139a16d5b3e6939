"""Rich renderings of lessons and their history for people (never used with --json)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from active_memory.commands.listing import summary_scope
from active_memory.lessons import GraphScope, HistoryEntry, Lesson, Tombstone
from active_memory.quality.reasons import REJECTION_KINDS
from active_memory.store.models import LessonSummary

if TYPE_CHECKING:  # only types: `lessons list` need not load the store and the journal
    from active_memory.quality.audit import LessonFinding
    from active_memory.quality.stats import JournalSummary, ScopeCount
    from active_memory.store.effectiveness import Effectiveness


PIPED_WIDTH = 200
"""The width tables get when stdout is not a terminal (a pipe, a file): wide enough that
nothing is cut; cells still wrap past it."""


def stdout_console() -> Console:
    """A console on stdout that keeps long IDs and paths whole (and, piped, a wide page
    instead of 80 columns)."""
    console = Console(soft_wrap=False, highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, PIPED_WIDTH)
    return console


def scope_label(lesson: Lesson | Tombstone | LessonSummary) -> str:
    """`repo:github.com/acme/api` or `graph 7d5d…/worker @ repo:…`."""
    if isinstance(lesson, LessonSummary):
        return summary_scope(lesson)
    scope = lesson.scope
    if isinstance(scope, GraphScope):
        label = f"graph {scope.graph_hash[:12]}…/{scope.node}"
        return f"{label} @ {scope.repository}" if scope.repository else label
    return scope.repository


@dataclass(frozen=True, slots=True)
class StaleColumn:
    """What the table's stale column knows: how many citations of each stale lesson
    changed, and which lessons were not judged (no checkout of their repository here)."""

    changed: Mapping[str, int] = field(default_factory=dict)
    unjudged: Collection[str] = frozenset()

    def cell(self, lesson: Lesson | Tombstone | LessonSummary) -> Text:
        """`stale (2)`, `no`, `?` (not judged: no checkout known) or `-` (retired)."""
        if lesson.status == "retired":
            return Text("-", style="dim")
        if lesson.id in self.unjudged:
            return Text("?", style="dim")
        count = self.changed.get(lesson.id)
        return Text(f"stale ({count})", style="yellow") if count else Text("no")

    def caption(self) -> str:
        """What the column compared with."""
        text = "stale (n): n cited ranges changed in the checkout of the lesson's repository"
        if self.unjudged:
            text += "; ?: no checkout of its repository known here (pass --checkout DIR)"
        return text


def _rate(count: int, runs: int) -> str:
    return f"{count} ({count / runs:.0%})" if runs else "-"


def lesson_table(
    lessons: Sequence[Lesson | Tombstone | LessonSummary],
    counters: Mapping[str, Effectiveness] | None = None,
    *,
    total: int | None = None,
    stale: StaleColumn | None = None,
) -> Table:
    """One row per lesson: ID, revision, status, [stale,] [effectiveness: runs that
    delivered it and how many of them its evidence recurred in, runs that touched it
    without delivering it and how many recurred,] scope, title."""
    count = len(lessons) if total is None else total
    table = Table(title=f"{count} lessons", title_justify="left")
    table.add_column("ID", no_wrap=True)
    table.add_column("rev", justify="right")
    table.add_column("status")
    if stale is not None:
        table.add_column("stale", no_wrap=True)
    if counters is not None:
        # Two pairs: delivered in N runs → recurred in k; touched only in M → recurred in j.
        for column in ("delivered", "then recurred", "touched only", "then recurred"):
            table.add_column(column, justify="right")
    table.add_column("scope", overflow="fold")
    table.add_column("title", overflow="fold")
    notes = []
    if stale is not None:
        notes.append(stale.caption())
    if counters is not None:
        notes.append(
            "delivered: runs that delivered the lesson, then recurred: in how many its "
            "evidence came back; touched only: runs that touched its files or node without "
            "it, then recurred: in how many it came back"
        )
    if notes:
        table.caption = "; ".join(notes)
        table.caption_justify = "left"
    for lesson in lessons:
        title: str | Text = Text("(retired)", style="dim")
        if isinstance(lesson, Lesson) or (isinstance(lesson, LessonSummary) and lesson.title):
            title = lesson.title or ""
        cells: list[str | Text] = []
        if stale is not None:
            cells.append(stale.cell(lesson))
        if counters is not None:
            c = counters.get(lesson.id)
            delivered = c.runs_delivered if c else 0
            touched = c.runs_touched_not_delivered if c else 0
            cells += [
                f"{delivered} runs",
                _rate(c.recurred_when_delivered if c else 0, delivered),
                f"{touched} runs",
                _rate(c.recurred_when_not_delivered if c else 0, touched),
            ]
        table.add_row(
            lesson.id, str(lesson.revision), lesson.status, *cells, scope_label(lesson), title
        )
    return table


def history_table(lesson_id: str, entries: Sequence[HistoryEntry]) -> Table:
    """One row per revision: when, who, what and why. Who (specialist, run, model) and the
    change (action, the status it left) share a cell each, so the reason keeps its room
    on an 80-column terminal: cells wrap, nothing is cut."""
    table = Table(title=f"History of {lesson_id}", title_justify="left")
    table.add_column("rev", no_wrap=True, justify="right")
    table.add_column("change", no_wrap=True)
    table.add_column("when (UTC)")
    table.add_column("by", overflow="fold")
    table.add_column("reason", overflow="fold")
    for entry in entries:
        who = [entry.author.specialist, entry.author.run_id or "", entry.author.model or ""]
        table.add_row(
            str(entry.revision),
            f"{entry.action}\n{entry.status}",
            entry.at.strftime("%Y-%m-%d %H:%M"),
            "\n".join(part for part in who if part),
            entry.reason,
        )
    return table


def lesson_panel(
    lesson: Lesson | Tombstone,
    history: Sequence[HistoryEntry],
    effectiveness: Effectiveness | None = None,
) -> Panel:
    """A lesson's card, scope, associations, evidence and effectiveness counters, with its
    history below."""
    heading = f"{lesson.id} r{lesson.revision} · {lesson.status} · {scope_label(lesson)}"
    parts: list[Text | Table] = []
    if isinstance(lesson, Lesson):
        parts.append(Text(lesson.title, style="bold"))
        parts.append(Text(lesson.recommendation))
        a = lesson.associations
        for label, values in (
            ("files", a.files),
            ("folders", a.folders),
            ("identifiers", a.identifiers),
            ("keywords", [" + ".join(group) for group in a.keywords]),
            ("commands", a.commands),
            ("runs", lesson.evidence.run_ids),
            ("evidence", lesson.evidence.evidence_ids),
            # The citations that count (a place a keep let go is not one of them).
            ("citations", [_cited(c.path, c.lines) for c in lesson.evidence.counted_citations()]),
        ):
            if values:
                parts.append(Text(f"{label}: {', '.join(values)}", style="dim"))
        if effectiveness is not None:
            parts.append(Text(f"effectiveness: {effectiveness.describe()}", style="dim"))
    else:
        absorbed = f" into {lesson.canonical}" if lesson.canonical else ""
        parts.append(Text(f"Retired{absorbed}; the content is in the history below."))
    if history:
        parts.append(history_table(lesson.id, history))
    return Panel(Group(*parts), title=heading, title_align="left")


def findings_table(findings: Sequence[LessonFinding]) -> Table:
    """One row per stored secret: lesson, field, kind and the masked excerpt."""
    table = Table(title=f"{len(findings)} credentials stored (masked)", title_justify="left")
    table.add_column("lesson", no_wrap=True)
    table.add_column("field", overflow="fold")
    table.add_column("kind")
    table.add_column("excerpt", overflow="fold")
    for found in findings:
        finding = found.finding
        # Text, not markup: an excerpt's `[REDACTED:kind]` must print as written.
        table.add_row(found.lesson_id, finding.field, finding.kind, Text(finding.excerpt))
    return table


def stats_tables(counts: Sequence[ScopeCount], summary: JournalSummary, last: int) -> list[Table]:
    """`lessons stats` for people: lessons per scope and status, then what the last
    postmortems delivered and refused."""
    statuses = ("active", "deferred", "retired")
    lessons = Table(title="Lessons per scope", title_justify="left")
    lessons.add_column("scope", overflow="fold")
    for status in statuses:
        lessons.add_column(status, justify="right")
    by_scope: dict[str, dict[str, int]] = {}
    for count in counts:
        by_scope.setdefault(count.scope, {})[count.status] = count.count
    for scope, row in by_scope.items():
        lessons.add_row(Text(scope), *(str(row.get(status, 0)) for status in statuses))
    title = f"Last {summary.postmortems} finished postmortems (of at most {last})"
    recent = Table(title=title, title_justify="left")
    recent.add_column("what")
    recent.add_column("count", justify="right")
    recent.add_row("deliveries", str(sum(summary.deliveries.values())))
    recent.add_row("lessons delivered", str(len(summary.deliveries)))
    recent.add_row("proposals rejected", str(summary.rejected))
    for kind in REJECTION_KINDS:
        if summary.rejected_by_kind[kind]:
            recent.add_row(f"  {kind}", str(summary.rejected_by_kind[kind]))
    for lesson_id, refused in sorted(summary.duplicates.items()):
        recent.add_row(f"  duplicates of {lesson_id}", str(refused))
    return [lessons, recent]


def _cited(path: str, lines: tuple[int, int] | None) -> str:
    """`path:first-last` (or `path:first`, or the path of a whole-file citation)."""
    if lines is None:
        return path
    return f"{path}:{lines[0]}" if lines[0] == lines[1] else f"{path}:{lines[0]}-{lines[1]}"
