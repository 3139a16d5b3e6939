"""Plain `lessons list` output: what a pipe gets, without rich (docs/store.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from active_memory.store.effectiveness import Effectiveness
    from active_memory.store.models import LessonSummary


COUNT_NAMES = ("runs_delivered", "recurred_when_delivered", "runs_touched_not_delivered",
               "recurred_when_not_delivered")  # fmt: skip
"""The effectiveness counts of `--sort effectiveness`, named as in `--json`'s
`effectiveness` (runs delivered, of them recurred; runs that touched the lesson's files
without its card, of them recurred)."""


def summary_scope(item: LessonSummary) -> str:
    """`repo:github.com/acme/api` or `graph 7d5d…/worker @ repo:…`."""
    if item.scope_kind == "repository":
        return item.repository
    label = f"graph {item.graph_hash[:12]}…/{item.node}"
    return f"{label} @ {item.repository}" if item.repository else label


def summary_lines(
    lessons: Sequence[LessonSummary], counters: Mapping[str, Effectiveness] | None = None
) -> str:
    """Plain listing: one tab-separated line per lesson (ID, revision, status, [four
    effectiveness counts, each labelled `name=N`,] scope, title); tabs and newlines inside
    a title become spaces."""
    lines = []
    for item in lessons:
        counts = ""
        if counters is not None:
            c = counters.get(item.id)
            values = (
                (c.runs_delivered, c.recurred_when_delivered, c.runs_touched_not_delivered,
                 c.recurred_when_not_delivered) if c else (0, 0, 0, 0)
            )  # fmt: skip
            counts = "".join(f"{name}={value}\t" for name, value in zip(COUNT_NAMES, values,
                                                                          strict=True))  # fmt: skip
        title = " ".join((item.title or "(retired)").split())
        lines.append(
            f"{item.id}\t{item.revision}\t{item.status}\t{counts}{summary_scope(item)}\t{title}\n"
        )
    return "".join(lines)
