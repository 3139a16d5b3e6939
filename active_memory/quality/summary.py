"""`lessons stats`' effectiveness summary: the counters of every living lesson, pooled.

The store keeps four counts per lesson (docs/quality.md, "Effectiveness"). Pooled over
the living lessons they say how often a lesson's costly evidence came back in the runs
that delivered it, against the runs that touched it without delivering it; two short
lists name the lessons worth a look: those delivered in at least `MIN_RUNS` runs whose
evidence recurred in at least half of them (candidates to adapt or retire), and those
touched in at least `MIN_RUNS` runs without ever being delivered (their associations
may not match how agents reach the code). Counts and rates only; no combined score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from active_memory.lessons import Lesson, Tombstone
from active_memory.store.effectiveness import Effectiveness

MIN_RUNS = 3
LISTED = 5


@dataclass(frozen=True, slots=True)
class Pooled:
    """Runs counted over every lesson (a run that delivered two lessons counts twice),
    and in how many of them the evidence recurred."""

    runs: int = 0
    recurred: int = 0

    @property
    def rate(self) -> float | None:
        """`recurred / runs`; None before any run."""
        return self.recurred / self.runs if self.runs else None

    def to_json(self) -> dict[str, Any]:
        """`{"runs", "recurred", "rate"}`."""
        return {"runs": self.runs, "recurred": self.recurred, "rate": self.rate}


@dataclass(frozen=True, slots=True)
class Noted:
    """A lesson named in the summary, with its counters."""

    id: str
    title: str
    counters: Effectiveness

    def to_json(self) -> dict[str, Any]:
        """`{"id", "title", ...the four counts and both rates}`."""
        return {"id": self.id, "title": self.title, **self.counters.to_json()}


@dataclass(slots=True)
class EffectivenessSummary:
    """Everything `lessons stats` says about effectiveness (see the module)."""

    living: int = 0
    observed: int = 0
    delivered: int = 0
    when_delivered: Pooled = Pooled()
    when_not_delivered: Pooled = Pooled()
    recurring: list[Noted] = field(default_factory=list)
    recurring_count: int = 0
    never_delivered: list[Noted] = field(default_factory=list)
    never_delivered_count: int = 0

    def to_json(self) -> dict[str, Any]:
        """`{"effectiveness": {...}}`, merged into `lessons stats --json`."""
        return {
            "effectiveness": {
                "lessons": {
                    "living": self.living,
                    "observed": self.observed,
                    "delivered": self.delivered,
                },
                "when_delivered": self.when_delivered.to_json(),
                "when_not_delivered": self.when_not_delivered.to_json(),
                "min_runs": MIN_RUNS,
                "recurring": {
                    "count": self.recurring_count,
                    "lessons": [n.to_json() for n in self.recurring],
                },
                "never_delivered": {
                    "count": self.never_delivered_count,
                    "lessons": [n.to_json() for n in self.never_delivered],
                },
            }
        }


def summarize_effectiveness(
    items: Sequence[Lesson | Tombstone], counters: Mapping[str, Effectiveness]
) -> EffectivenessSummary:
    """The summary over the living lessons among `items` (see the module)."""
    living = [item for item in items if isinstance(item, Lesson)]
    summary = EffectivenessSummary(living=len(living))
    recurring: list[Noted] = []
    never: list[Noted] = []
    delivered = recurred = touched = recurred_without = 0
    for lesson in living:
        c = counters.get(lesson.id)
        if c is None:
            continue
        summary.observed += 1
        summary.delivered += int(c.runs_delivered > 0)
        delivered += c.runs_delivered
        recurred += c.recurred_when_delivered
        touched += c.runs_touched_not_delivered
        recurred_without += c.recurred_when_not_delivered
        if c.runs_delivered >= MIN_RUNS and 2 * c.recurred_when_delivered >= c.runs_delivered:
            recurring.append(Noted(lesson.id, lesson.title, c))
        if not c.runs_delivered and c.runs_touched_not_delivered >= MIN_RUNS:
            never.append(Noted(lesson.id, lesson.title, c))
    summary.when_delivered = Pooled(delivered, recurred)
    summary.when_not_delivered = Pooled(touched, recurred_without)
    recurring.sort(
        key=lambda n: (-(n.counters.recurrence_when_delivered or 0), -n.counters.runs_delivered)
    )
    never.sort(key=lambda n: -n.counters.runs_touched_not_delivered)
    summary.recurring, summary.recurring_count = recurring[:LISTED], len(recurring)
    summary.never_delivered, summary.never_delivered_count = never[:LISTED], len(never)
    return summary
