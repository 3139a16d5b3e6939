"""The run controller's post-settle hook: `after_run_settled`.

The run's outcome is latched before the postmortem starts and returned unchanged,
whatever the postmortem does. A failing postmortem is logged and reported in
`SettledRun.error`, never raised into the controller; only the caller's own cancellation
propagates (after the specialists stopped and nothing was published). The postmortem's
model usage comes back separately (`SettledRun.usage`) so the controller can add it to
the run's cost without it entering the run's execution history; it is read from the
postmortem's `UsageMeter`, so a postmortem that raised still reports what it spent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from active_memory.checkout import Checkout
from active_memory.config import RuntimeConfig
from active_memory.orchestrator.options import PostmortemLimits, Progress
from active_memory.orchestrator.postmortem import run_postmortem
from active_memory.orchestrator.report import PostmortemReport, UsageReport
from active_memory.orchestrator.sessions import SessionFactory
from active_memory.orchestrator.usage import UsageMeter
from active_memory.runlog.record import RunRecord
from active_memory.store import LessonStore

log = logging.getLogger("active_memory.orchestrator")


@dataclass(frozen=True, slots=True)
class SettledRun:
    """A settled run after its postmortem: the latched outcome, the report (None when the
    postmortem itself could not run), the error if it failed, and its model usage."""

    run_id: str
    outcome: str
    postmortem: PostmortemReport | None
    error: str | None
    usage: UsageReport


async def after_run_settled(
    record: RunRecord,
    config: RuntimeConfig,
    store: LessonStore,
    *,
    checkout: Checkout | None = None,
    sessions: SessionFactory | None = None,
    progress: Progress | None = None,
    limits: PostmortemLimits | None = None,
    journal_dir: Path | None = None,
) -> SettledRun:
    """Run the postmortem of a settled run; return the run's latched outcome unchanged.

    Never raises for a postmortem failure (it is logged and in `error`); re-raises the
    caller's cancellation, as anyio requires, within a short grace.
    """
    outcome = record.outcome  # latched: nothing below may change what the run was
    meter: UsageMeter | None = None
    try:
        meter = UsageMeter()
        report = await run_postmortem(
            record,
            config,
            store,
            checkout=checkout,
            sessions=sessions,
            progress=progress,
            limits=limits,
            journal_dir=journal_dir,
            meter=meter,
        )
    except Exception as exc:  # every postmortem failure is data for the controller
        log.exception("postmortem of run %s failed", record.run_id)
        spent = _spent(meter)
        return SettledRun(record.run_id, outcome, None, f"{type(exc).__name__}: {exc}", spent)
    error = None if report.ok else _summary(report)
    if error is not None:
        log.warning("postmortem of run %s: %s", record.run_id, error)
    return SettledRun(record.run_id, outcome, report, error, report.usage)


def _spent(meter: UsageMeter | None) -> UsageReport:
    """What the meter counted (a lower bound after a failure), never raising itself."""
    if meter is None:
        return UsageReport(complete=False)
    try:
        return UsageReport.of(meter.total())
    except Exception:  # the usage must come back whatever failed
        log.exception("reading the postmortem's usage failed")
        return UsageReport(complete=False)


def _summary(report: PostmortemReport) -> str:
    parts = [
        f"{name} {entry.status}" + (f" ({entry.reason})" if entry.reason else "")
        for name, entry in report.specialists.items()
        if entry.status in ("failed", "timed_out")
    ]
    if report.conflicts:
        parts.append(f"{len(report.conflicts)} unresolved revision conflict(s)")
    if report.publish_error:
        parts.append(f"publish failed: {report.publish_error}")
    return "; ".join(parts)
