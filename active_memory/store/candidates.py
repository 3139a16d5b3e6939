"""Adaptation candidates kept beside each lesson: refused near-duplicate proposals.

A discovery proposal that repeats a living lesson (`quality/duplicates.py`) is not
created. The postmortem stores it here, in its one publish transaction, as a candidate
adaptation of that lesson; the next maintenance task for the lesson carries its pending
candidates, and a published maintenance decision on the lesson (adapt, keep, retire or
defer) consumes the candidates it was shown. `docs/quality.md` ("Duplicates") explains.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from active_memory.errors import InvalidMutation
from active_memory.lessons import Associations

CANDIDATES_KEPT = 5
"""Pending candidates kept per lesson: the latest; older ones are dropped on insert."""

CANDIDATE_COLUMNS = (
    "seq, lesson_id, run_id, specialist, title, recommendation, associations, score, at"
)


class Candidate(BaseModel):
    """A refused near-duplicate proposal, kept as an adaptation candidate of a lesson.

    `seq` and `at` are set by the store; a candidate to publish leaves them unset.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    lesson_id: str = Field(min_length=1)
    run_id: str = Field(min_length=1)
    specialist: str = Field(min_length=1)
    title: str
    recommendation: str
    associations: Associations
    score: float = Field(ge=0, le=100)
    seq: int | None = None
    at: str | None = None


class Consumed(BaseModel):
    """A maintenance decision published on `lesson_id`: its candidates up to `through`
    (the highest `seq` the decision was shown) are cleared."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lesson_id: str = Field(min_length=1)
    through: int = Field(ge=0)


def candidate_rows(
    candidates: Sequence[Candidate], at: str
) -> list[tuple[str, str, str, str, str, str, float, str]]:
    """Insert rows, in lesson ID order (one lock order): lesson ID, run, specialist,
    title, recommendation, associations JSON, score, at."""
    rows = [
        (c.lesson_id, c.run_id, c.specialist, c.title, c.recommendation,
         json.dumps(c.associations.model_dump(mode="json"), sort_keys=True), float(c.score), at)
        for c in candidates
    ]  # fmt: skip
    return sorted(rows, key=lambda row: row[0])


def consumed_rows(consumed: Sequence[Consumed]) -> list[tuple[str, int]]:
    """Delete rows in lesson ID order; raises `InvalidMutation` for a lesson named twice."""
    seen: set[str] = set()
    for c in consumed:
        if c.lesson_id in seen:
            raise InvalidMutation(c.lesson_id, "has its candidates consumed twice in one publish")
        seen.add(c.lesson_id)
    return sorted((c.lesson_id, c.through) for c in consumed)


def row_to_candidate(values: Sequence[Any]) -> Candidate:
    """A row (in `CANDIDATE_COLUMNS` order) as a model."""
    return Candidate(
        seq=int(values[0]),
        lesson_id=values[1],
        run_id=values[2],
        specialist=values[3],
        title=values[4],
        recommendation=values[5],
        associations=Associations.model_validate_json(values[6]),
        score=float(values[7]),
        at=values[8],
    )
