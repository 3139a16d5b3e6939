"""`lessons stats`' effectiveness tables for people (never used with --json)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from active_memory.quality.summary import MIN_RUNS, EffectivenessSummary, Noted, Pooled


def _rate(pooled: Pooled) -> str:
    return "-" if pooled.rate is None else f"{pooled.rate:.0%}"


def effectiveness_tables(summary: EffectivenessSummary) -> list[Table]:
    """The pooled counts, then the lessons worth a look (when there are any)."""
    pooled = Table(
        title=f"Effectiveness of the {summary.living} living lessons "
        f"({summary.observed} observed in a run, {summary.delivered} delivered)",
        title_justify="left",
        caption="runs are counted per lesson: a run that delivered two lessons counts twice",
        caption_justify="left",
    )
    pooled.add_column("runs")
    pooled.add_column("count", justify="right")
    pooled.add_column("evidence recurred", justify="right")
    pooled.add_column("rate", justify="right")
    for label, counted in (
        ("that delivered a lesson", summary.when_delivered),
        ("that touched a lesson without delivering it", summary.when_not_delivered),
    ):
        pooled.add_row(label, str(counted.runs), str(counted.recurred), _rate(counted))
    tables = [pooled]
    if summary.recurring:
        tables.append(
            _noted(
                f"Recurring though delivered: {summary.recurring_count} lessons delivered in "
                f"{MIN_RUNS}+ runs, evidence back in half or more (adapt or retire?)",
                summary.recurring,
                delivered=True,
            )
        )
    if summary.never_delivered:
        tables.append(
            _noted(
                f"Never delivered: {summary.never_delivered_count} lessons touched in "
                f"{MIN_RUNS}+ runs without being delivered (do their associations match?)",
                summary.never_delivered,
                delivered=False,
            )
        )
    return tables


def _noted(title: str, noted: list[Noted], *, delivered: bool) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("ID", no_wrap=True)
    table.add_column("title", overflow="fold")
    table.add_column("delivered in" if delivered else "touched in", justify="right")
    table.add_column("recurred", justify="right")
    for item in noted:
        c = item.counters
        runs = c.runs_delivered if delivered else c.runs_touched_not_delivered
        again = c.recurred_when_delivered if delivered else c.recurred_when_not_delivered
        table.add_row(item.id, Text(item.title), f"{runs} runs", f"{again} ({again / runs:.0%})")
    return table
