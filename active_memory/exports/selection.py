"""Which lessons an export keeps: the most effective, non-stale ones first, within a
byte budget (docs/export.md, "Budgets").

The order (`export_order`):

1. lessons that are not stale before stale ones (with `stale="omit"` stale lessons are
   not offered at all);
2. then by the expected share of delivering runs in which the lesson's costly evidence
   recurred, counting one recurrence in two runs before any data
   (`(recurred_when_delivered + 1) / (runs_delivered + 2)`), lowest first: a lesson
   delivered in five runs with no recurrence (1/7) comes before one never delivered
   (1/2), which comes before one delivered in three runs that recurred in all of them
   (4/5);
3. then the most delivered, then the most runs that touched it without delivering it,
   then the lesson ID (natural order).

The ordering is for choosing; no score is shown (docs/quality.md keeps the counts and
rates apart). Filling is greedy in that order: a lesson that does not fit the room left
is skipped and the next one is tried, so a long card never blocks shorter ones after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from active_memory.exports.entries import Candidate, natural
from active_memory.lessons import Lesson
from active_memory.store.effectiveness import Effectiveness

StaleMode = Literal["mark", "omit"]
STALE_MODES: tuple[StaleMode, ...] = ("mark", "omit")
_BLANK = Effectiveness()
T = TypeVar("T")


def order_key(
    candidate: Candidate, counters: Effectiveness
) -> tuple[int, float, int, int, str, int]:
    """The sort key of `export_order` (see the module)."""
    expected = (counters.recurred_when_delivered + 1) / (counters.runs_delivered + 2)
    head, number = natural(candidate.lesson.id)
    return (
        int(candidate.stale is not None),
        expected,
        -counters.runs_delivered,
        -counters.runs_touched_not_delivered,
        head,
        number,
    )


@dataclass(slots=True)
class Offer:
    """What an export is offered: ranked candidates, and the stale lessons left out."""

    ranked: list[Candidate] = field(default_factory=list)
    stale_omitted: list[Lesson] = field(default_factory=list)


def export_order(
    lessons: Sequence[Lesson],
    effectiveness: Mapping[str, Effectiveness],
    stale: Mapping[str, str],
    mode: StaleMode,
) -> Offer:
    """`lessons` ranked for an export (see the module); `stale` maps a stale lesson's ID
    to what changed. With `mode="omit"` stale lessons are set aside, not ranked."""
    offer = Offer()
    for lesson in lessons:
        why = stale.get(lesson.id)
        if why is not None and mode == "omit":
            offer.stale_omitted.append(lesson)
        else:
            offer.ranked.append(Candidate(lesson, why))
    offer.ranked.sort(key=lambda c: order_key(c, effectiveness.get(c.lesson.id, _BLANK)))
    return offer


def fill(
    ranked: Sequence[T],
    budget: int,
    cost: Callable[[T], int],
    size_of: Callable[[Sequence[T]], int],
) -> list[T]:
    """The greedy choice: `ranked` in order, each kept when its `cost` fits the room
    left after what an empty export takes (`size_of([])`); then, while the real size
    of what was kept (`size_of`) is over `budget` (a cost can only estimate shared
    parts), the last kept is dropped."""
    room = budget - size_of([])
    kept: list[T] = []
    for item in ranked:
        needed = cost(item)
        if needed <= room:
            kept.append(item)
            room -= needed
    while kept and size_of(kept) > budget:
        kept.pop()
    return kept
