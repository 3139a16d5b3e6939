"""A postmortem when the worker has no lane for it, and what a report says about its lane.

- `needs_model`: would this run's postmortem ask a model? It is run dry (nothing written)
  with sessions that only record that a question was asked (`orchestrator.preview`), so
  the answer comes from the very code that decides in a real run: a session with neither
  qualifying evidence (SPEC §4) nor lessons to maintain asks nothing.
- `RefusingSessions`: the session factory of a postmortem that must not reach a model;
  should it ask anyway (the store changed meanwhile), the specialist fails with kind
  `lane` and the worker puts the entry back, as for any lane that cannot run.
- `lane_failures`: the specialists a lane failed (it could not start, refused the key,
  the provider kept failing), as opposed to a model's answer that failed its checks. A
  postmortem with such a failure is not done: its entry goes back to the queue.
"""

from __future__ import annotations

from pathlib import Path

from active_memory.checkout import Checkout
from active_memory.config import RuntimeConfig
from active_memory.errors import SpecialistFailed
from active_memory.orchestrator import PostmortemReport, run_postmortem
from active_memory.orchestrator.preview import CaptureSessions
from active_memory.runlog.record import RunRecord
from active_memory.specialists.kinds import SpecialistName
from active_memory.specialists.providers import ProviderSession
from active_memory.specialists.providers.base import Request
from active_memory.specialists.providers.function import FunctionSession
from active_memory.store import open_store

LANE_FAILURE_KINDS = ("lane", "harness", "credentials", "provider")
"""`SpecialistFailed.kind`s that say the lane did not answer, whatever the question."""
_IMPORT_FAILURES = ("internal error: ModuleNotFoundError", "internal error: ImportError")
NOTHING_TO_LEARN = (
    "nothing to learn: no qualifying evidence and no lessons to maintain (no model asked)"
)


async def needs_model(
    location: str, record: RunRecord, config: RuntimeConfig, checkout: Checkout | None
) -> bool:
    """Would the postmortem of `record` ask a model? (A dry run: nothing is written.)"""
    captured = CaptureSessions()
    async with open_store(location) as store:
        await run_postmortem(
            record, config, store, checkout=checkout, sessions=captured, dry_run=True
        )
    return bool(captured.captured)


class RefusingSessions:
    """Sessions that fail every question with kind `lane` and `problem` as the detail."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        self.asked = False

    def __call__(self, specialist: SpecialistName, *, deadline: float) -> ProviderSession:
        """A session that refuses to answer."""

        async def refuse(request: Request) -> str:
            self.asked = True
            raise SpecialistFailed(specialist, "lane", self.problem)

        return FunctionSession(specialist, refuse, model="none", deadline=deadline)


def lane_failures(report: PostmortemReport) -> list[str]:
    """`name: reason` of every specialist its lane failed (empty: the lane answered)."""
    found = []
    for name, specialist in report.specialists.items():
        reason = specialist.reason or ""
        if specialist.status != "failed":
            continue
        if reason.startswith(tuple(f"{kind}:" for kind in LANE_FAILURE_KINDS)) or (
            reason.startswith(_IMPORT_FAILURES)
        ):
            found.append(f"{name}: {reason}")
    return found


def checkout_root(checkout: Checkout | None) -> Path | None:
    """The checkout's folder, when the run has one."""
    return Path(checkout.root) if checkout is not None else None
