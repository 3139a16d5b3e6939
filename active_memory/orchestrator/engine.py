"""The postmortem's engine: scopes, the frozen view, one task group under one deadline,
then one publish, with a journal entry at the start and at the end.

Time: `deadline = start + timeoutMs`. One `CancelScope(deadline=...)` covers reading the
lessons and the task group; every session gets the same absolute deadline, so start-up,
investigation and every batch share it. A specialist still running when it fires is
`timed_out`. The publish runs after the scope, shielded, with its own bound. Before the
clock starts, the lane's provider SDK is imported in a worker thread (cancellable): the
deadline covers the postmortem's work, not a one-time import.

Cancellation by the caller: the task group's specialists are cancelled (sessions close
shielded; CLI children are killed and reaped by their adapters), nothing is published,
the journal records `cancelled`, and the cancellation is re-raised unchanged.

Usage: every session reports each request's usage to the run's `UsageMeter` as it is
known; a journal task in the specialists' task group rewrites the `running` entry with
the total each time it changes (a write in a worker thread that a cancel waits for, never
abandons). A postmortem's end (finished, cancelled or failed) records the meter's total;
a crash leaves the last total written, which `interrupted_postmortems()` reports as
incomplete.
"""

from __future__ import annotations

import functools
import gc
import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import anyio

from active_memory.checkout import Checkout
from active_memory.config import RuntimeConfig
from active_memory.errors import UsageError
from active_memory.evidence import ScanResult, scan
from active_memory.lessons import HistoryEntry, Lesson
from active_memory.orchestrator.journal import Journal, JournalEntry, JournalState
from active_memory.orchestrator.options import PostmortemLimits, Progress
from active_memory.orchestrator.outcome import Outcome
from active_memory.orchestrator.publish import Publication, publish
from active_memory.orchestrator.report import PostmortemReport, UsageReport
from active_memory.orchestrator.run_failures import (
    earlier_signatures,
    lessons_written_against,
    seen_failures,
)
from active_memory.orchestrator.runners import (
    Context,
    deliveries_by_lesson,
    in_thread,
    run_specialist,
    safe_progress,
)
from active_memory.orchestrator.sessions import SessionFactory, lane_sessions
from active_memory.orchestrator.usage import UsageMeter
from active_memory.prompts import Prompts, load_prompts
from active_memory.quality.effectiveness import observe
from active_memory.runlog.record import RunRecord
from active_memory.specialists.kinds import SPECIALISTS, ScopeKind, SpecialistName
from active_memory.specialists.providers import ProviderSession, Usage
from active_memory.specialists.tasks import DeferralView, deferral_of
from active_memory.store import LessonQuery, LessonStore
from active_memory.store.candidates import Candidate
from active_memory.store.effectiveness import RunObservation

log = logging.getLogger("active_memory.orchestrator")


class Postmortem:
    """One postmortem of one run; `await Postmortem(...).run()` once."""

    def __init__(
        self,
        record: RunRecord,
        config: RuntimeConfig,
        store: LessonStore,
        *,
        checkout: Checkout | None,
        sessions: SessionFactory | None,
        dry_run: bool,
        progress: Progress | None,
        limits: PostmortemLimits,
        journal_dir: Path | None,
        prompts: Prompts | None,
        meter: UsageMeter | None = None,
    ) -> None:
        self.meter = meter
        self.record = record
        self.settings = config.settings
        self.lane = config.lane
        self.store = store
        self.checkout = checkout
        self.sessions = sessions
        self.dry_run = dry_run
        self.progress = safe_progress(progress)
        self.limits = limits
        self.journal = None if dry_run else Journal.of(store.location, journal_dir)
        # Load the templates before anything runs: a broken install fails here, loudly.
        self.prompts = prompts or load_prompts()
        self.outcomes = {name: Outcome(name) for name in SPECIALISTS}

    def _disable(self) -> list[Outcome]:
        """Mark the specialists that must not run; return the ones that will."""
        active: list[Outcome] = []
        for name, kind in SPECIALISTS.items():
            out = self.outcomes[name]
            if not self.settings.enabled:
                out.end("disabled", "Active Memory is off (activeMemory.repository and .graph)")
            elif not self.settings.postmortem.enabled:
                out.end("disabled", "globalAgents.postmortem.enabled is false")
            elif not self.settings.collects(kind.scope):
                out.end("disabled", f"activeMemory.{kind.scope} is false")
            else:
                active.append(out)
        return active

    def _factory(self) -> SessionFactory:
        if self.sessions is not None:
            return self.sessions
        if self.lane is None:
            raise UsageError("the postmortem has no specialist lane: set its sourceNode")
        return lane_sessions(self.lane)

    async def run(self) -> PostmortemReport:
        """Run the postmortem and build its report (see `run_postmortem`)."""
        active = self._disable()
        factory = self._factory() if active else _no_sessions
        # The lane's SDK (≈1.4 s cold) is imported off the event loop before the clock
        # starts: imported inside the deadline, the import thread would hold the GIL for
        # long stretches just when the deadline needs the loop.
        prepare = getattr(factory, "prepare", None)
        if prepare is not None:
            await prepare()
        start = anyio.current_time()
        deadline = start + self.settings.timeout_seconds
        # What exists when the postmortem starts (the run record, the caller's objects)
        # outlives it: frozen from here, and thawed only once the report and the
        # journal are done. Thawed earlier, the next full collection would traverse the
        # whole manifest and every decision while they are still alive (0.6 s at 10,000
        # adapted lessons), just before they die.
        with _long_lived_objects_frozen():
            ctx = Context(
                self.record,
                self.checkout,
                self.prompts,
                factory,
                deadline,
                self.limits,
                self.progress,
                deliveries_by_lesson(self.record),
                meter=self.meter or UsageMeter(),
            )
            entry = await self._journal_start() if active else None
            try:
                publication = await self._run(ctx, active, entry)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    await self._journal_end(
                        entry, "cancelled", None, "cancelled by the caller", ctx.meter.total()
                    )
                raise
            except BaseException as exc:
                with anyio.CancelScope(shield=True):
                    reason = f"{type(exc).__name__}: {exc}"
                    await self._journal_end(entry, "failed", None, reason, ctx.meter.total())
                raise
            report = self._report(publication, start)
            await self._journal_end(entry, "finished", report, None, None)
        return report

    async def _journal_usage(self, entry: JournalEntry, meter: UsageMeter) -> None:
        """Rewrite the `running` entry with the usage total each time it changes."""
        journal = self.journal
        assert journal is not None
        async for usage in meter.changes():
            try:
                # Not abandoned on cancel: the end's own write must come after this one.
                write = functools.partial(journal.spent, entry, UsageReport.of(usage))
                await anyio.to_thread.run_sync(write)
            except OSError as exc:
                log.warning("postmortem journal not written: %s", exc)

    async def _run(
        self, ctx: Context, active: Sequence[Outcome], entry: JournalEntry | None = None
    ) -> Publication:
        # (Inside `_long_lived_objects_frozen`: see there.)
        living: dict[ScopeKind, list[Lesson]] = {"graph": [], "repository": []}
        if not active:
            return Publication()
        with anyio.CancelScope(deadline=ctx.deadline) as scope:
            await self._freeze(active, living)
            await self._read_effectiveness(active, living, ctx)
            await self._read_rejected(ctx)
            await self._find_stale(active, living, ctx)
            evidence = await self._scan(active, ctx)
            observations = await self._observe(evidence, living)
            async with anyio.create_task_group() as journalled:
                if entry is not None:
                    journalled.start_soon(self._journal_usage, entry, ctx.meter)
                async with anyio.create_task_group() as group:
                    for out in active:
                        if out.status is None:
                            group.start_soon(
                                run_specialist,
                                ctx,
                                out,
                                living[_scope(out)],
                                evidence,
                                name=out.name,
                            )
                journalled.cancel_scope.cancel()
        if scope.cancelled_caught:
            seconds = self.settings.timeout_seconds
            for out in active:
                if out.status is None:
                    out.end("timed_out", f"the postmortem's deadline ({seconds:g} s) passed")
        candidates = self._candidates()
        # A postmortem whose every specialist failed or timed out writes nothing at all.
        finished = any(out.status in ("reconciled", "abstained") for out in active)
        if not finished:
            observations = []
        shown = {i: max(c.seq or 0 for c in found) for i, found in ctx.candidates.items()}
        return await publish(
            ctx,
            self.store,
            self.outcomes,
            living,
            dry_run=self.dry_run,
            effectiveness=observations,
            candidates=candidates,
            shown=shown,
            review=self._review(),
            mark=entry.publish_mark() if entry is not None else None,
            failures=seen_failures(self.record, dry_run=self.dry_run) if finished else None,
        )

    def _review(self) -> str:
        """The run's review mode: its runtime JSON, else the settings files of its
        checkout, else automatic. A broken settings file means manual: nothing reaches
        recall without a person while the file cannot be read (docs/review.md)."""
        chosen = self.settings.active_memory.review
        if chosen is not None:
            return chosen
        from active_memory.settings import SettingsError, effective_settings

        root = str(self.checkout.root) if self.checkout is not None else None
        try:
            return str(effective_settings(root, use_env=False).values["review"].value)
        except SettingsError as exc:
            log.warning("review: %s; keeping this run's changes for review", exc)
            return "manual"

    def _candidates(self) -> list[Candidate]:
        """Each reconciled discovery's refused near-duplicates, as adaptation candidates
        of the lessons they repeat (published with the mutations; none in a dry run)."""
        if self.dry_run:
            return []
        found: list[Candidate] = []
        for out in self.outcomes.values():
            if out.status != "reconciled" or out.discovery is None:
                continue
            for refused in out.discovery.rejected:
                if refused.duplicate_of is None or refused.proposal is None:
                    continue
                found.append(
                    Candidate(
                        lesson_id=refused.duplicate_of,
                        run_id=self.record.run_id,
                        specialist=out.name,
                        title=refused.proposal.title,
                        recommendation=refused.proposal.recommendation,
                        associations=refused.proposal.associations,
                        score=refused.similarity or 0.0,
                    )
                )
        return found

    async def _freeze(
        self, active: Sequence[Outcome], living: dict[ScopeKind, list[Lesson]]
    ) -> None:
        """One read per scope that a specialist needs: the lessons maintenance judges, and
        those discovery's proposals are compared with for duplicates."""
        run_repository = self.record.repository.namespace if self.record.repository else None
        run_graph = self.record.graph.hash if self.record.graph else None
        needs: dict[ScopeKind, list[Outcome]] = {}
        for out in active:
            # Maintenance reads its scope even without delivery evidence: deferred
            # lessons come back whatever the deliveries (SPEC §9, 2026-12).
            needs.setdefault(SPECIALISTS[out.name].scope, []).append(out)
        for scope_kind, outs in needs.items():
            if scope_kind == "repository":
                query = LessonQuery(kind="repository", repository=run_repository)
                known = run_repository is not None
            else:
                query = LessonQuery(kind="graph", graph_hash=run_graph)
                known = run_graph is not None
            try:
                found = await self.store.select(query) if known else []
            except Exception as exc:  # an unreadable store fails those specialists only
                log.warning("reading %s lessons failed: %s", scope_kind, exc)
                for out in outs:
                    out.end("failed", f"cannot read the {scope_kind} lessons: {exc}")
                continue
            # Sorted by ID: the tasks' `others` are the first of them (runners.py).
            living[scope_kind] = sorted(
                (x for x in found if isinstance(x, Lesson)), key=lambda x: x.id
            )
        # The lessons just read live for the whole postmortem: keep the cycle collector
        # from traversing them again at every full collection (at 10,000 lessons those
        # traversals were most of the checks' time). `_long_lived_objects_frozen` thaws
        # them at the end.
        gc.freeze()

    async def _read_effectiveness(
        self, active: Sequence[Outcome], living: dict[ScopeKind, list[Lesson]], ctx: Context
    ) -> None:
        """The frozen lessons' counters and pending adaptation candidates, which
        maintenance judges them with; an unreadable store fails the maintenance
        specialists still running."""
        ids = [lesson.id for lessons in living.values() for lesson in lessons]
        if not ids:
            return
        deferred = [x.id for lessons in living.values() for x in lessons if x.status == "deferred"]
        try:
            ctx.effectiveness.update(await self.store.effectiveness(ids))
            ctx.candidates.update(await self.store.candidates(ids))
            for lesson_id in deferred[:MAX_DEFERRALS_READ]:
                ctx.deferrals[lesson_id] = _deferral(await self.store.history(lesson_id), ctx)
        except Exception as exc:
            log.warning("reading effectiveness counters or candidates failed: %s", exc)
            for out in active:
                if SPECIALISTS[out.name].is_maintenance and out.status is None:
                    out.end("failed", f"cannot read the effectiveness counters: {exc}")

    async def _find_stale(
        self, active: Sequence[Outcome], living: dict[ScopeKind, list[Lesson]], ctx: Context
    ) -> None:
        """The active repository lessons the run did not deliver whose cited code changed
        against the run's checkout: repository maintenance is offered some of them
        (`manifest`, docs/staleness.md). One pass for all (one `check_paths`, each file
        read once), in a worker thread the deadline can abandon. Without a checkout, or
        when git fails, nothing is offered (logged): the rest of maintenance goes on."""
        checkout = self.checkout
        if checkout is None or not any(out.name == "repository_maintenance" for out in active):
            return
        delivered = set(ctx.deliveries)
        candidates = [
            x
            for x in living["repository"]
            if x.status == "active" and x.id not in delivered and x.evidence.citations
        ]
        if not candidates:
            return
        from active_memory.checkout.staleness import stale_lessons

        try:
            found = await in_thread(functools.partial(stale_lessons, checkout, candidates))
        except Exception as exc:
            log.warning("finding stale lessons failed: %s; none offered", exc)
            return
        ctx.stale.update(found)

    async def _read_rejected(self, ctx: Context) -> None:
        """Proposals a person rejected (manual review): shown to discovery as examples of
        what not to propose. Unreadable: discovery runs without them (logged)."""
        try:
            ctx.rejected.extend(await self.store.proposals("rejected"))
        except Exception as exc:
            log.warning("reading rejected proposals failed: %s", exc)

    async def _observe(
        self, evidence: ScanResult | None, living: dict[ScopeKind, list[Lesson]]
    ) -> list[RunObservation]:
        """The run's effectiveness observations of the frozen lessons (none in a dry run,
        or without delivery evidence); they are published with the mutations."""
        if self.dry_run or self.record.deliveries is None:
            return []
        lessons = [*living["graph"], *living["repository"]]
        if not lessons:
            return []
        if evidence is None:
            earlier = await earlier_signatures(self.store, self.record)
            evidence = await in_thread(functools.partial(scan, self.record, earlier))
        written = await lessons_written_against(self.store, lessons)
        return observe(self.record, evidence.evidence, lessons, written)

    async def _scan(self, active: Sequence[Outcome], ctx: Context) -> ScanResult | None:
        """The run's evidence: discovery cites it, maintenance sees what concerns its
        lessons."""
        if not active:
            return None
        earlier = await earlier_signatures(self.store, self.record)
        found = await in_thread(functools.partial(scan, self.record, earlier))
        ctx.scanned.append(found)
        return found

    async def _journal_start(self) -> JournalEntry | None:
        if self.journal is None:
            return None
        journal = self.journal
        try:
            return await in_thread(
                functools.partial(journal.started, self.record.run_id, self.record.outcome)
            )
        except OSError as exc:  # a journal that cannot be written must not stop the postmortem
            log.warning("postmortem journal not written: %s", exc)
            return None

    async def _journal_end(
        self,
        entry: JournalEntry | None,
        state: JournalState,
        report: PostmortemReport | None,
        reason: str | None,
        usage: Usage | None,
    ) -> None:
        if self.journal is None or entry is None:
            return
        journal = self.journal
        try:
            await anyio.to_thread.run_sync(
                functools.partial(
                    journal.ended,
                    entry,
                    state,
                    report=report,
                    reason=reason,
                    usage=UsageReport.of(usage) if usage is not None else None,
                    deliveries=dict(Counter(d.lesson for d in self.record.deliveries or ())),
                )
            )
        except OSError as exc:
            log.warning("postmortem journal not written: %s", exc)

    def _report(self, publication: Publication, start: float) -> PostmortemReport:
        specialists = {name: out.report() for name, out in self.outcomes.items()}
        total = UsageReport()
        for entry in specialists.values():
            total = total.plus(entry.usage)
        return PostmortemReport(
            run_id=self.record.run_id,
            outcome=self.record.outcome,
            dry_run=self.dry_run,
            specialists=specialists,
            published=publication.counts,
            conflicts=publication.conflicts,
            mutations=publication.mutations,
            publish_error=publication.error,
            usage=total,
            timeout_ms=self.settings.postmortem.timeout_ms,
            elapsed_ms=round((anyio.current_time() - start) * 1000),
        )


MAX_DEFERRALS_READ = 1_000
"""Deferred lessons whose history is read per postmortem (one read each); past it a
deferred lesson is still offered, with an empty deferral reason."""


def _deferral(history: Sequence[HistoryEntry], ctx: Context) -> DeferralView:
    """The latest deferral of a lesson's history: its reason and time."""
    entry = next((h for h in reversed(history) if h.action == "defer"), None)
    if entry is None:
        return DeferralView(reason="")
    return deferral_of(entry.reason, entry.at, ctx.record)


def _scope(out: Outcome) -> ScopeKind:
    return SPECIALISTS[out.name].scope


def _no_sessions(specialist: SpecialistName, *, deadline: float) -> ProviderSession:
    """The factory when no specialist runs: it is never called."""
    raise AssertionError(f"{specialist} does not run")


@contextmanager
def _long_lived_objects_frozen() -> Iterator[None]:
    """Move what exists now out of the cycle collector's reach, and thaw at the end of
    the postmortem everything `gc.freeze()` moved during it (the manifest once read,
    each batch's results: docs/orchestrator.md)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
