"""Effectiveness over time as chart buckets: per lesson, per repository, over every
lesson; counts and the two recurrence rates (docs/ui.md, "Effectiveness over time").

Buckets: a lesson's observations per run while there are at most `PER_RUN_MAX` of
them; sums per UTC day while they span at most `PER_DAY_MAX` days; else per ISO week;
past `PER_WEEK_MAX` weeks per month. Each bucket has the four counts, the runs that
delivered or touched without the evidence recurring, and the two rates (None: no run
of that kind in the bucket, never shown as 0 %). One run is 0 % or 100 %, which says
little, so the charts draw each rate over the latest `RATE_RUNS` runs of its kind up to
the bucket (`recent_rate_when_…`: whole buckets, back until that many runs).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from active_memory.store.effectiveness import EffectivenessHistory, EffectivenessPoint
from active_memory.store.lesson_store import LessonStore

PER_RUN_MAX = 60
PER_DAY_MAX = 90
PER_WEEK_MAX = 156
RATE_RUNS = 10
"""Runs of one kind (delivered, touched only) a charted rate is taken over, at least."""

TERMS = (
    "delivered",
    "recurred_when_delivered",
    "touched_not_delivered",
    "recurred_when_not_delivered",
)


def week_of(at: str) -> str:
    """The ISO week (`2026-W48`) of an ISO date or time."""
    year, week, _ = date.fromisoformat(at[:10]).isocalendar()
    return f"{year}-W{week:02d}"


def _keys(points: list[EffectivenessPoint], per_run: bool) -> tuple[str, list[str]]:
    if per_run and len(points) <= PER_RUN_MAX:
        return "run", [p.run_id or p.at for p in points]
    days = [p.at[:10] for p in points]
    if len(set(days)) <= PER_DAY_MAX:
        return "day", days
    weeks = [week_of(p.at) for p in points]
    if len(set(weeks)) <= PER_WEEK_MAX:
        return "week", weeks
    return "month", [p.at[:7] for p in points]


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def recent_rates(
    runs: list[int], recurred: list[int], window: int = RATE_RUNS
) -> list[float | None]:
    """Per bucket, the share of recurrences over the latest `window` runs up to it (whole
    buckets, going back until at least `window` runs; fewer when there are no more)."""
    out: list[float | None] = []
    for end in range(len(runs)):
        total = hits = 0
        start = end
        while start >= 0 and total < window:
            total += runs[start]
            hits += recurred[start]
            start -= 1
        out.append(hits / total if total else None)
    return out


def effectiveness_series(history: EffectivenessHistory, *, per_run: bool) -> dict[str, Any]:
    """The chart's buckets of `history` (see the module docstring)."""
    bucket, keys = _keys(history.points, per_run)
    labels: list[str] = []
    sums: dict[str, list[int]] = {term: [] for term in TERMS}
    for key, point in zip(keys, history.points, strict=True):
        if not labels or labels[-1] != key:
            labels.append(key)
            for term in TERMS:
                sums[term].append(0)
        for term in TERMS:
            sums[term][-1] += getattr(point, term)
    d, rd = sums["delivered"], sums["recurred_when_delivered"]
    t, rt = sums["touched_not_delivered"], sums["recurred_when_not_delivered"]
    return {
        "since": history.since, "bucket": bucket, "labels": labels, **sums,
        "clean_when_delivered": [a - b for a, b in zip(d, rd, strict=True)],
        "clean_when_not_delivered": [a - b for a, b in zip(t, rt, strict=True)],
        "rate_when_delivered": [_rate(b, a) for a, b in zip(d, rd, strict=True)],
        "rate_when_not_delivered": [_rate(b, a) for a, b in zip(t, rt, strict=True)],
        "recent_rate_when_delivered": recent_rates(d, rd),
        "recent_rate_when_not_delivered": recent_rates(t, rt),
        "rate_runs": RATE_RUNS,
    }  # fmt: skip


async def effectiveness_history(
    store: LessonStore, lesson_id: str | None, repository: str | None = None
) -> dict[str, Any]:
    """`/api/...`'s effectiveness over time of one lesson, one repository's lessons, or
    (both None) every lesson: the dated points and the chart's buckets."""
    history = await store.effectiveness_history(lesson_id, repository=repository)
    return {
        **history.to_json(),
        "repository": repository,
        "series": effectiveness_series(history, per_run=lesson_id is not None),
    }
