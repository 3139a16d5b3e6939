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


# --- dated history (schema 7) ----------------------------------------------------------
#
# Beside the counters, every counted observation is kept as a dated event (one per lesson
# and run), written in the same publish transaction. Counters older than the migration to
# version 7 have no dates: the history starts then (`EVENTS_SINCE_KEY`), never invented.

EVENTS_SINCE_KEY = "effectiveness_events_since"
"""`store_meta` key: epoch seconds from which effectiveness events are recorded."""


class EffectivenessPoint(BaseModel):
    """One run's observation of one lesson, or (`run_id` None) one UTC day's sum over
    every lesson, in the counters' four terms."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at: str  # ISO time of the publish, or the day (YYYY-MM-DD) of a sum
    run_id: str | None
    delivered: int
    recurred_when_delivered: int
    touched_not_delivered: int
    recurred_when_not_delivered: int


class EffectivenessHistory(BaseModel):
    """Dated effectiveness events, and since when the store records them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    since: str | None  # ISO UTC; None: a store without the events table (never here)
    points: list[EffectivenessPoint]

    def to_json(self) -> dict[str, Any]:
        """`{"since", "points": [...]}` as the API gives it."""
        return self.model_dump(mode="json")


def event_rows(
    observations: Sequence[tuple[str, int, int, int, int, str]], at: str
) -> list[tuple[str, str, int, int, str]]:
    """Event rows (lesson ID, run ID, delivered, recurred, at) of `observation_rows`."""
    return [(row[0], row[5], row[1], int(bool(row[2] or row[4])), at) for row in observations]


EVENT_POINT_SQL = (
    "SELECT at, run_id, delivered, delivered * recurred, 1 - delivered, "
    "(1 - delivered) * recurred FROM lesson_effectiveness_events "
    "WHERE lesson_id = {p} ORDER BY at, seq"
)
"""One lesson's events, oldest first (`{p}`: the backend's placeholder)."""

DAY_POINT_SQL = (
    "SELECT substr(at, 1, 10) AS day, NULL, SUM(delivered), SUM(delivered * recurred), "
    "SUM(1 - delivered), SUM((1 - delivered) * recurred) FROM lesson_effectiveness_events "
    "GROUP BY day ORDER BY day"
)
"""Every lesson's events summed per UTC day, oldest first."""


REPOSITORY_DAY_POINT_SQL = (
    "SELECT substr(e.at, 1, 10) AS day, NULL, SUM(e.delivered), SUM(e.delivered * e.recurred), "
    "SUM(1 - e.delivered), SUM((1 - e.delivered) * e.recurred) "
    "FROM lesson_effectiveness_events AS e JOIN lessons AS l ON l.id = e.lesson_id "
    "WHERE l.repository = {p} GROUP BY day ORDER BY day"
)
"""One repository's lessons' events (graph lessons qualified by it too) per UTC day."""

PER_REPOSITORY_SQL = (
    "SELECT l.repository, SUM(c.runs_delivered), SUM(c.recurred_when_delivered), "
    "SUM(c.runs_touched_not_delivered), SUM(c.recurred_when_not_delivered), COUNT(*) "
    "FROM lesson_effectiveness AS c JOIN lessons AS l ON l.id = c.lesson_id "
    "WHERE l.repository <> '' GROUP BY l.repository ORDER BY l.repository"
)
"""Every repository's lessons' counters summed, with how many lessons were observed."""


def row_to_point(row: Sequence[Any]) -> EffectivenessPoint:
    """An `EVENT_POINT_SQL` / `DAY_POINT_SQL` row as a point."""
    return EffectivenessPoint(
        at=str(row[0]),
        run_id=row[1],
        delivered=int(row[2]),
        recurred_when_delivered=int(row[3]),
        touched_not_delivered=int(row[4]),
        recurred_when_not_delivered=int(row[5]),
    )


def since_iso(value: object) -> str | None:
    """The `EVENTS_SINCE_KEY` value (epoch seconds) as ISO UTC."""
    if value is None:
        return None
    from datetime import UTC, datetime

    return datetime.fromtimestamp(int(str(value)), UTC).isoformat()
