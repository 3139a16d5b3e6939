"""`active-memory postmortem`'s report as tables for people (`--json` prints the document)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from active_memory.orchestrator import PostmortemReport

_STATUS_STYLE = {
    "reconciled": "green",
    "abstained": "yellow",
    "disabled": "dim",
    "failed": "red",
    "timed_out": "red",
}


def render_report(report: PostmortemReport) -> None:
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
    if report.mutations:
        table = Table(title=heading, title_justify="left")
        for column in ("action", "lesson", "title", "by"):
            table.add_column(column, overflow="fold")
        for mutation in report.mutations:
            lesson = mutation.id or "(new)"
            if mutation.revision is not None:
                lesson += f" r{mutation.revision}"
            elif mutation.base_revision is not None:
                lesson += f" from r{mutation.base_revision}"
            title = mutation.title or (f"→ {mutation.canonical}" if mutation.canonical else "")
            table.add_row(mutation.action, lesson, title, mutation.specialist)
        console.print(table)
    counts = report.published
    console.print(
        f"{heading}: {counts.created} created, {counts.adapted} adapted, "
        f"{counts.retired} retired, {counts.deferred} deferred; {counts.kept} kept."
    )
    for conflict in report.conflicts:
        now = "gone" if conflict.current_revision is None else f"now r{conflict.current_revision}"
        console.print(
            f"[red]conflict[/]: {conflict.id} was decided on r{conflict.expected_revision}, "
            f"{now}; not published"
        )
    if report.publish_error:
        console.print(f"[red]publish failed[/]: {report.publish_error}; nothing was written")
