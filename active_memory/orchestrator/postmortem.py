"""`run_postmortem`: the four specialists on one settled run, under one deadline.

1. Scopes: `postmortem.enabled: false` or a scope turned off reports that scope's
   specialists `disabled`; nothing of them runs.
2. Freeze: one `store.select` per scope reads the lessons the whole postmortem judges.
3. One task group under one `CancelScope` whose deadline is `timeoutMs` from the start;
   each specialist opens its own session with that absolute deadline, so provider
   start-up, investigation and every maintenance batch share it. A specialist that
   fails, times out or abstains is reported and never cancels the others.
4. One shielded `store.publish` of every accepted mutation after the group, with its own
   short bound; on `RevisionConflict` the changed lessons are refreshed and decided again
   while the deadline allows (`publish.py`).
"""

from __future__ import annotations

from pathlib import Path

from active_memory.checkout import Checkout
from active_memory.config import RuntimeConfig
from active_memory.orchestrator.options import PostmortemLimits, Progress
from active_memory.orchestrator.report import PostmortemReport
from active_memory.orchestrator.sessions import SessionFactory
from active_memory.orchestrator.usage import UsageMeter
from active_memory.prompts import Prompts
from active_memory.runlog.record import RunRecord
from active_memory.store import LessonStore


async def run_postmortem(
    record: RunRecord,
    config: RuntimeConfig,
    store: LessonStore,
    *,
    checkout: Checkout | None = None,
    sessions: SessionFactory | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    limits: PostmortemLimits | None = None,
    journal_dir: Path | None = None,
    prompts: Prompts | None = None,
    meter: UsageMeter | None = None,
) -> PostmortemReport:
    """Run the postmortem of `record` and return its report (SPEC §10).

    - `config`: the run's validated settings and the specialists' lane (`config.lane`).
    - `store`: where lessons are read (frozen at the start) and published (once).
    - `checkout`: the run's checkout for file authority and citation checks; None marks
      every file unverifiable (repository proposals are refused then).
    - `sessions`: a `SessionFactory`; default `lane_sessions(config.lane)` (the API lane).
    - `dry_run`: decide everything, publish nothing, write nothing (no journal either);
      the report says what would be published.
    - `progress`: called with `ProgressEvent`s (display only).
    - `journal_dir`: where the journal goes (default: the store's, `store_journal_dir`).
    - `meter`: a `UsageMeter` the caller reads what the postmortem spent from, even when
      it raised (default: its own).

    Specialist failures, timeouts and publish failures are in the report, never raised.
    Raises only for misuse (`UsageError`, a broken prompt install) and re-raises the
    caller's cancellation after stopping every specialist; nothing is published then.
    """
    from active_memory.orchestrator.engine import Postmortem
    from active_memory.runlog.screening import screen_record

    run = Postmortem(
        # What a model is shown comes from here: no credential in it, whether an importer
        # sealed the record or a run controller handed it over as it was.
        screen_record(record),
        config,
        store,
        checkout=checkout,
        sessions=sessions,
        dry_run=dry_run,
        progress=progress,
        limits=limits or PostmortemLimits(),
        journal_dir=journal_dir,
        prompts=prompts,
        meter=meter,
    )
    return await run.run()
