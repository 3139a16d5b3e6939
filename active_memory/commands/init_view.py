"""`active-memory init` for people on a terminal: the same document as `--json`, readable.

The session and its phase, the inventory (selected and excluded runs), then what to do
next: the tasks waiting for answers (each task file and the answer file it wants), or
the receipt of the publication.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

SHOWN_ROWS = 20
"""At most this many rows per table; `--json` has them all."""


def render_init(document: Mapping[str, Any], console: Console) -> None:
    """Print one `init` document (phase, inventory, tasks or receipt, next action)."""
    phase = str(document.get("phase", "?"))
    console.print(Text(f"init: {phase}", style="bold"), Text(f"  session {document['session']}"))
    inventory = document.get("inventory") or {}
    selected: Sequence[Mapping[str, Any]] = inventory.get("selected") or []
    excluded: Sequence[Mapping[str, Any]] = inventory.get("excluded") or []
    console.print(f"Runs: {len(selected)} selected, {len(excluded)} excluded")
    if selected:
        table = _table(f"Selected runs ({len(selected)})", "run", "repository", "graph", "checkout")
        for run in selected[:SHOWN_ROWS]:
            graph = (run.get("graph") or {}).get("name") or "-"
            table.add_row(*(Text(str(v)) for v in (run["run_id"], run["repository"], graph,
                                                     run["workspace"])))  # fmt: skip
        _print(console, table, len(selected))
    if excluded:
        table = _table(f"Excluded runs ({len(excluded)})", "run", "why", "detail")
        for run in excluded[:SHOWN_ROWS]:
            table.add_row(
                Text(str(run["run_id"])), Text(str(run["kind"])), Text(str(run["reason"]))
            )
        _print(console, table, len(excluded))
    tasks: Sequence[Mapping[str, Any]] = document.get("tasks") or []
    if tasks:
        table = _table(f"Tasks waiting for an answer ({len(tasks)})", "specialist", "task file",
                       "answer file (beside it)")  # fmt: skip
        for task in tasks[:SHOWN_ROWS]:
            answer = str(task["answer_file"]).rsplit("/", 1)[-1]
            table.add_row(Text(str(task["specialist"])), Text(str(task["task_file"])),
                          Text(answer))  # fmt: skip
        _print(console, table, len(tasks))
    receipt = document.get("receipt")
    if isinstance(receipt, Mapping):
        published = receipt.get("published") or {}
        counts = ", ".join(
            f"{_count(published.get(key))} {key}"
            for key in ("created", "adapted", "retired", "deferred")
        )
        console.print(f"Published into {receipt.get('store', '?')}: {counts}")
    console.print(Text(f"Next: {document.get('next_action', '')}"), soft_wrap=True)


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _print(console: Console, table: Table, total: int) -> None:
    console.print(table)
    if total > SHOWN_ROWS:
        console.print(f"… and {total - SHOWN_ROWS} more (all of them with --json)")


def _count(value: Any) -> int:
    return len(value) if isinstance(value, list | tuple) else int(value or 0)
