"""`active-memory postmortem`'s output for people: live progress on stderr (elapsed time,
and on the exchange lane where each task's files are) and the report as tables."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from active_memory.orchestrator import PostmortemReport, ProgressEvent
    from active_memory.specialists.providers.exchange import Pending


# --- progress ------------------------------------------------------------------------


class Display:
    """Progress on stderr: a live rich display on a terminal (each specialist's elapsed
    time), plain lines otherwise (each ending with the time since the postmortem
    started: `(at 12.3s)`)."""

    def __init__(self, *, json_mode: bool) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False)
        self.live = self.console.is_terminal and not os.environ.get("CI")
        self.started = time.monotonic()
        self._tasks: dict[str, Any] = {}
        self._progress: Any = None
        if self.live:
            from rich.progress import (
                BarColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description:<24}"),
                BarColumn(bar_width=20),
                TimeElapsedColumn(),
                TextColumn("{task.fields[status]}"),
                console=self.console,
                transient=False,
            )
            self._progress.start()

    def elapsed(self) -> str:
        """Time since the postmortem started: `12.3s`."""
        return f"{time.monotonic() - self.started:.1f}s"

    def _line(self, text: str) -> None:
        self.console.print(
            f"postmortem: {text} (at {self.elapsed()})", soft_wrap=True, markup=False
        )

    def _task(self, name: str) -> Any:
        task = self._tasks.get(name)
        if task is None:
            task = self._progress.add_task(name, total=None, status="")
            self._tasks[name] = task
        return task

    def event(self, event: ProgressEvent) -> None:
        """One orchestrator progress event (runs on the event loop: never blocks long)."""
        name = event.specialist or "postmortem"
        if event.done is not None and event.total is not None:
            text = f"{event.stage} {event.done}/{event.total}"
        else:
            text = event.stage
        if event.detail:
            text += f": {event.detail}"
        if not self.live:
            self._line(f"{event.specialist}: {text}" if event.specialist else text)
            return
        task = self._task(name)
        if event.stage in ("finished", "published"):
            self._progress.update(task, total=1, completed=1, status=event.detail or event.stage)
        elif event.total:
            self._progress.update(task, total=event.total, completed=event.done or 0, status=text)
        else:
            self._progress.update(task, status=text)

    def waiting(self, pending: Pending) -> None:
        """The exchange lane wrote a task and waits for its answer: say where both are."""
        text = (
            f"{pending.specialist}: waiting for {pending.answer_file} "
            f"(the task is {pending.task_file})"
        )
        if not self.live:
            self._line(text)
            return
        self._progress.update(
            self._task(pending.specialist), status=f"waiting for {pending.answer_file.name}"
        )
        self._progress.console.print(f"postmortem: {text}", soft_wrap=True, markup=False)

    def close(self) -> None:
        """Stop the live display."""
        if self._progress is not None:
            self._progress.stop()


# --- the report ------------------------------------------------------------------------

_STATUS_STYLE = {
    "reconciled": "green",
    "abstained": "yellow",
    "disabled": "dim",
    "failed": "red",
    "timed_out": "red",
}


def render(report: PostmortemReport) -> None:
    """The report as tables on stdout."""
    from rich.console import Console
    from rich.table import Table

    # Piped output gets room for the reasons instead of rich's 80-column default.
    console = Console(soft_wrap=False, highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 120)
    dry = " (dry run)" if report.dry_run else ""
    console.print(f"Postmortem of {report.run_id} ({report.outcome}){dry}", style="bold")
    table = Table(title="Specialists", title_justify="left")
    for column in ("specialist", "status", "supplied", "decided / proposed", "accepted", "notes"):
        table.add_column(column, overflow="fold", no_wrap=column != "notes")
    for name, entry in report.specialists.items():
        if entry.decisions is not None or entry.manifest is not None:
            supplied = str(entry.manifest) if entry.manifest is not None else "-"
            decided = str(len(entry.decisions)) if entry.decisions is not None else "-"
            accepted = "-"
        else:
            supplied = "-"
            decided = str(entry.proposals) if entry.proposals is not None else "-"
            accepted = str(len(entry.accepted)) if entry.accepted is not None else "-"
        style = _STATUS_STYLE.get(entry.status, "")
        repaired = f"{entry.repair_turns} repair turn(s)" if entry.repair_turns else ""
        notes = "; ".join(x for x in (repaired, entry.reason or "") if x)
        table.add_row(name, f"[{style}]{entry.status}[/]", supplied, decided, accepted, notes)
    console.print(table)
    decisions = [(n, d) for n, e in report.specialists.items() for d in e.decisions or ()]
    if decisions:
        table = Table(title="Maintenance decisions", title_justify="left")
        for column in ("lesson", "action", "reason"):
            table.add_column(column, overflow="fold", no_wrap=column != "reason")
        for _name, decision in decisions:
            action: str = decision.action
            if decision.canonical:
                action += f" → {decision.canonical}"
            table.add_row(f"{decision.id} r{decision.revision}", action, decision.reason)
        console.print(table)
    proposals = [
        (name, item.index, item.title, "accepted", "")
        for name, entry in report.specialists.items()
        for item in entry.accepted or ()
    ] + [
        (name, item.index, item.title, "rejected", "; ".join(item.reasons) or item.reason)
        for name, entry in report.specialists.items()
        for item in entry.rejected or ()
    ]
    if proposals:
        table = Table(title="Discovery proposals", title_justify="left")
        for column in ("specialist", "#", "title", "verdict", "reason"):
            table.add_column(column, overflow="fold")
        for name, index, title, verdict, reason in sorted(proposals, key=lambda p: (p[0], p[1])):
            colour = "green" if verdict == "accepted" else "red"
            table.add_row(name, str(index), title, f"[{colour}]{verdict}[/]", reason)
        console.print(table)
    heading = "Would publish (dry run)" if report.dry_run else "Published"
    published = [m for m in report.mutations if m.proposal is None and not _proposed(m, report)]
    proposed = [m for m in report.mutations if m not in published]
    if published:
        table = Table(title=heading, title_justify="left")
        for column in ("action", "lesson", "title", "by"):
            table.add_column(column, overflow="fold")
        for mutation in published:
            table.add_row(mutation.action, _lesson(mutation), _title(mutation), mutation.specialist)
        console.print(table)
    if proposed:
        # Manual review (docs/review.md): kept for a person, not published.
        title = "Would propose for review (dry run)" if report.dry_run else "Proposed for review"
        table = Table(title=title, title_justify="left")
        for column in ("proposal", "action", "lesson", "title", "by"):
            table.add_column(column, overflow="fold")
        for mutation in proposed:
            number = f"#{mutation.proposal}" if mutation.proposal is not None else "-"
            table.add_row(
                number, mutation.action, _lesson(mutation), _title(mutation), mutation.specialist
            )
        console.print(table)
    counts = report.published
    review = ""
    if counts.proposed or proposed:
        review = (
            f"; {counts.proposed or len(proposed)} proposed for review "
            "(approve or reject them in `active-memory ui`, page Review)"
        )
    console.print(
        f"{heading}: {counts.created} created, {counts.adapted} adapted, "
        f"{counts.retired} retired, {counts.deferred} deferred; {counts.kept} kept{review}."
    )
    for conflict in report.conflicts:
        now = "gone" if conflict.current_revision is None else f"now r{conflict.current_revision}"
        console.print(
            f"[red]conflict[/]: {conflict.id} was decided on r{conflict.expected_revision}, "
            f"{now}; not published"
        )
    if report.publish_error:
        console.print(f"[red]publish failed[/]: {report.publish_error}; nothing was written")


def _proposed(mutation: Any, report: PostmortemReport) -> bool:
    """A creation or adaptation a manual-review postmortem kept as a proposal (before or
    without a publish it has no proposal number yet)."""
    return bool(report.published.proposed) and mutation.action in ("create", "adapt")


def _lesson(mutation: Any) -> str:
    lesson = str(mutation.id or "(new)")
    if mutation.revision is not None:
        lesson += f" r{mutation.revision}"
    elif mutation.base_revision is not None:
        lesson += f" from r{mutation.base_revision}"
    return lesson


def _title(mutation: Any) -> str:
    return str(mutation.title or (f"→ {mutation.canonical}" if mutation.canonical else ""))
