"""The checks as the ask loop's `AnswerCheck`: what a repair turn lists, and what it must not.

`discovery_check(task, ...)` and `maintenance_check(task, ...)` return a `KeptCheck`: the
ask loop (`providers/repair.py`) calls it with each schema-valid answer and reads a
`Verdict`; the caller reads the detailed result of the last answer it checked
(`.result()`), which is the answer the ask returned. The checks run in a worker thread
(git and the file system), abandoned when the deadline cancels the ask.

What a repair turn lists (SPEC §6): every failure of schema, size, citations, evidence,
scope and the content rules, as the checks state them. Not listed:
- a safety refusal (`refused by <rule>`): it means no repair turn at all;
- a discovery proposal refused as a near-duplicate of a living lesson, or kept as an
  adaptation candidate (`duplicate_of`): that is a result, not a fault;
- proposals past `MAX_PROPOSALS`, which are refused unchecked.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import anyio.to_thread

from active_memory.checkout import Checkout
from active_memory.lessons import Lesson
from active_memory.quality.duplicates import DuplicateLimits
from active_memory.specialists.answers import (
    GraphDiscoveryAnswer,
    MaintenanceAnswer,
    RepositoryDiscoveryAnswer,
)
from active_memory.specialists.checks.core import MAX_PROPOSALS, check_discovery, check_maintenance
from active_memory.specialists.checks.gate import is_safety_refusal
from active_memory.specialists.checks.results import DiscoveryResult, Failed, MaintenanceResult
from active_memory.specialists.providers.repair import Verdict
from active_memory.specialists.tasks import DiscoveryTask, MaintenanceTask

R = TypeVar("R")

MAINTENANCE_AGAIN = (
    "Decide again for the same lessons: every decision again (not only the ones listed)."
)
DISCOVERY_AGAIN = (
    "Propose again: every lesson you still propose (those not listed too), each corrected, "
    "or left out when it cannot be; zero lessons is a good answer."
)


def _split(reasons: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    safety = tuple(r for r in reasons if is_safety_refusal(r))
    return tuple(r for r in reasons if not is_safety_refusal(r)), safety


def maintenance_verdict(result: MaintenanceResult) -> Verdict:
    """A batch's verdict: every reason of a failed batch, its safety refusals apart."""
    if not isinstance(result, Failed):
        return Verdict(again=MAINTENANCE_AGAIN)
    failures, safety = _split(result.reasons)
    return Verdict(failures, safety, MAINTENANCE_AGAIN)


def discovery_verdict(result: DiscoveryResult) -> Verdict:
    """A discovery answer's verdict: the reasons of its refused proposals (see the
    module docstring for what is not listed)."""
    reasons = [
        reason
        for rejection in result.rejected
        if rejection.duplicate_of is None and rejection.index < MAX_PROPOSALS
        for reason in rejection.reasons
    ]
    failures, safety = _split(reasons)
    return Verdict(failures, safety, DISCOVERY_AGAIN)


class KeptCheck(Generic[R]):
    """An `AnswerCheck` that keeps the detailed result of the last answer it checked."""

    def __init__(self, run: Callable[[Any], R], verdict: Callable[[R], Verdict]) -> None:
        self._run = run
        self._verdict = verdict
        self._last: list[R] = []
        self.checked = 0  # how many answers it judged (2: the repair's was judged too)

    async def __call__(self, answer: Any) -> Verdict:
        """Check `answer` in a worker thread; its verdict."""
        result = await anyio.to_thread.run_sync(
            functools.partial(self._run, answer), abandon_on_cancel=True
        )
        self._last[:] = [result]
        self.checked += 1
        return self._verdict(result)

    def result(self) -> R:
        """The result of the last answer checked (the answer the ask returned)."""
        if not self._last:
            raise LookupError("no answer was checked")
        return self._last[0]


def discovery_check(
    task: DiscoveryTask,
    *,
    checkout: Checkout | None,
    living: Sequence[Lesson] = (),
    duplicates: DuplicateLimits | None = None,
) -> KeptCheck[DiscoveryResult]:
    """The check of a discovery answer to `task` (`check_discovery`)."""

    def run(answer: RepositoryDiscoveryAnswer | GraphDiscoveryAnswer) -> DiscoveryResult:
        return check_discovery(
            task, answer, checkout=checkout, living=living, duplicates=duplicates
        )

    return KeptCheck(run, discovery_verdict)


def maintenance_check(
    task: MaintenanceTask, *, checkout: Checkout | None
) -> KeptCheck[MaintenanceResult]:
    """The check of a maintenance batch's answer to `task` (`check_maintenance`)."""

    def run(answer: MaintenanceAnswer) -> MaintenanceResult:
        return check_maintenance(task, answer, checkout=checkout)

    return KeptCheck(run, maintenance_verdict)
