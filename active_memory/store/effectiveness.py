"""Effectiveness counters kept beside each lesson (not in its card).

A postmortem observes, per lesson, whether the run delivered it or touched its scope
without delivering it, and whether the costly evidence the lesson was written against
recurred. The store adds these observations to four counters in the postmortem's one
publish transaction; `docs/quality.md` ("Effectiveness") explains the measure and its
limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from active_memory.errors import InvalidMutation


class RunObservation(BaseModel):
    """What one run showed of one lesson: delivered or only touched, and recurrence."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lesson_id: str = Field(min_length=1)
    run_id: str = Field(min_length=1)
    delivered: bool
    recurred: bool

    def counts(self) -> tuple[int, int, int, int]:
        """The increments of the four counters, in `Effectiveness` field order."""
        return (
            int(self.delivered),
            int(self.delivered and self.recurred),
            int(not self.delivered),
            int(not self.delivered and self.recurred),
        )


class Effectiveness(BaseModel):
    """A lesson's counters: runs that delivered it or touched it without, and recurrences."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    runs_delivered: int = 0
    recurred_when_delivered: int = 0
    runs_touched_not_delivered: int = 0
    recurred_when_not_delivered: int = 0
    last_run_id: str | None = None

    @property
    def recurrence_when_delivered(self) -> float | None:
        """Share of delivering runs in which the evidence recurred; None before any."""
        if not self.runs_delivered:
            return None
        return self.recurred_when_delivered / self.runs_delivered

    @property
    def recurrence_when_not_delivered(self) -> float | None:
        """Share of touching, non-delivering runs in which it recurred; None before any."""
        if not self.runs_touched_not_delivered:
            return None
        return self.recurred_when_not_delivered / self.runs_touched_not_delivered

    def to_json(self) -> dict[str, Any]:
        """The four counts, the last run counted and the two rates (null before any)."""
        return {
            **self.model_dump(mode="json"),
            "recurrence_when_delivered": self.recurrence_when_delivered,
            "recurrence_when_not_delivered": self.recurrence_when_not_delivered,
        }

    def describe(self) -> str:
        """One line for people: both counts and rates, never a combined score."""
        return (
            f"delivered in {self.runs_delivered} run(s), its evidence recurred in "
            f"{self.recurred_when_delivered}{_rate(self.recurrence_when_delivered)}; "
            f"touched without delivery in {self.runs_touched_not_delivered}, recurred in "
            f"{self.recurred_when_not_delivered}{_rate(self.recurrence_when_not_delivered)}"
        )


def _rate(rate: float | None) -> str:
    return "" if rate is None else f" ({rate:.0%})"


def effectiveness_order(
    lesson_id: str, counters: Effectiveness
) -> tuple[int, float, int, int, str]:
    """Sort key of `lessons list --sort effectiveness`: delivered lessons first, the
    highest recurrence rate when delivered first, then the most delivered; then lessons
    never delivered, the most runs that touched them first; ties by ID."""
    if counters.runs_delivered:
        rate = counters.recurrence_when_delivered or 0.0
        return (0, -rate, -counters.runs_delivered, 0, lesson_id)
    return (1, 0.0, 0, -counters.runs_touched_not_delivered, lesson_id)


EFFECTIVENESS_COLUMNS = (
    "runs_delivered, recurred_when_delivered, runs_touched_not_delivered, "
    "recurred_when_not_delivered, last_run_id"
)


def observation_rows(
    observations: Sequence[RunObservation],
) -> list[tuple[str, int, int, int, int, str]]:
    """One row per observation, in lesson ID order (one lock order for every writer):
    lesson ID, the four increments, run ID.

    Raises `InvalidMutation` for two observations of one lesson in one publish.
    """
    seen: set[str] = set()
    rows = []
    for obs in observations:
        if obs.lesson_id in seen:
            raise InvalidMutation(obs.lesson_id, "is observed twice in one publish")
        seen.add(obs.lesson_id)
        rows.append((obs.lesson_id, *obs.counts(), obs.run_id))
    return sorted(rows)


def row_to_effectiveness(values: Sequence[Any]) -> Effectiveness:
    """A counters row (in `EFFECTIVENESS_COLUMNS` order) as a model."""
    return Effectiveness(
        runs_delivered=int(values[0]),
        recurred_when_delivered=int(values[1]),
        runs_touched_not_delivered=int(values[2]),
        recurred_when_not_delivered=int(values[3]),
        last_run_id=values[4],
    )
