"""One specialist's work inside the postmortem's task group: open its session, ask, check.

Maintenance asks one question per batch (in order, or a few at once with
`batch_concurrency`). A batch whose answer fails the checks gets one repair turn that
lists every failure; a batch that fails again stops the specialist: it publishes nothing
then, so the rest would only cost tokens (the decisions of the batches already
reconciled are reported). Discovery asks once, and not at all when the run has no
evidence it may cite (no proposal could be accepted).

A batch is bounded by what the model receives: the manifest is cut into batches whose
lessons take at most `LESSON_SHARE` of `batch_bytes`, and each batch's task is fitted
(file contents, completions) so that the rendered prompt stays within `batch_bytes`.

Blocking work (reading files of the checkout into a task, git queries of the checks)
runs in worker threads the deadline can abandon, so the event loop stays on time.
"""

from __future__ import annotations

import functools
import gc
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import anyio.to_thread

from active_memory.checkout import Checkout
from active_memory.errors import SpecialistFailed, SpecialistTimedOut
from active_memory.evidence import ScanResult
from active_memory.lessons import Lesson
from active_memory.orchestrator.options import PostmortemLimits, Progress, ProgressEvent
from active_memory.orchestrator.outcome import Outcome
from active_memory.orchestrator.sessions import SessionFactory
from active_memory.orchestrator.usage import UsageMeter
from active_memory.prompts import Prompts
from active_memory.runlog.record import Delivery, RunRecord
from active_memory.specialists.answers import (
    GraphDiscoveryAnswer,
    MaintenanceAnswer,
    RepositoryDiscoveryAnswer,
    answer_schema,
)
from active_memory.specialists.checks import Failed, MaintenanceResult
from active_memory.specialists.checks.verdicts import discovery_check, maintenance_check
from active_memory.specialists.kinds import SpecialistName, kind_of
from active_memory.specialists.mutations import (
    discovery_mutations,
    maintenance_mutations,
    reactivations,
    refreshed,
)
from active_memory.specialists.providers import ProviderSession
from active_memory.specialists.tasks import (
    NO_DELIVERY_EVIDENCE,
    CodeCache,
    DeferralView,
    LessonRef,
    MaintenanceTask,
    Recited,
    build_discovery,
    build_graph_maintenance,
    build_repository_maintenance,
    cut_by_serialized_size,
    manifest,
    recited,
    stale_offered,
    with_changed_code,
    with_rejected,
)
from active_memory.store.candidates import Candidate
from active_memory.store.effectiveness import Effectiveness
from active_memory.store.review import Proposal

log = logging.getLogger("active_memory.orchestrator")
_T = TypeVar("_T")


async def in_thread(function: Callable[[], _T]) -> _T:
    """Run blocking work in a worker thread; a cancellation (the deadline) abandons it."""
    return await anyio.to_thread.run_sync(function, abandon_on_cancel=True)


def deliveries_by_lesson(record: RunRecord) -> dict[str, tuple[Delivery, ...]]:
    """The record's deliveries grouped by lesson ID, in record order."""
    found: dict[str, list[Delivery]] = {}
    for delivery in record.deliveries or ():
        found.setdefault(delivery.lesson, []).append(delivery)
    return {lesson: tuple(items) for lesson, items in found.items()}


@dataclass(frozen=True, slots=True)
class Context:
    """What every specialist run shares."""

    record: RunRecord
    checkout: Checkout | None
    prompts: Prompts
    sessions: SessionFactory
    deadline: float
    limits: PostmortemLimits
    progress: Callable[[ProgressEvent], None]
    deliveries: Mapping[str, tuple[Delivery, ...]]  # the record's, by lesson ID
    # Effectiveness counters of the frozen lessons, by ID (filled when they are frozen).
    effectiveness: dict[str, Effectiveness] = field(default_factory=dict)
    # Pending adaptation candidates of the frozen lessons, by ID (read with the counters).
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)
    # Proposals a person rejected (manual review), for discovery's `rejected` examples.
    rejected: list[Proposal] = field(default_factory=list)
    # Why and when each frozen deferred lesson was deferred, by ID.
    deferrals: dict[str, DeferralView] = field(default_factory=dict)
    # Active repository lessons the run did not deliver whose cited code changed (IDs):
    # maintenance is offered some of them (docs/staleness.md).
    stale: set[str] = field(default_factory=set)
    # Per lesson ID, the changed and moved citations its task showed: a keep or an
    # adapt of it cites them again, fingerprinted against the checkout at publish.
    shown_changed: dict[str, Recited] = field(default_factory=dict)
    # The run's evidence (0 or 1 scan), which maintenance shows per lesson.
    scanned: list[ScanResult] = field(default_factory=list)
    # Git's answers about the checkout, shared by every task of this postmortem.
    code: list[CodeCache] = field(default_factory=list)
    # The frozen lessons' references (`others` of every batch), built once.
    refs: dict[str, LessonRef] = field(default_factory=dict)
    # Every session's usage as it is spent (the journal records it while the run goes on).
    meter: UsageMeter = field(default_factory=UsageMeter)

    def code_cache(self) -> CodeCache | None:
        """The postmortem's one `CodeCache` of its checkout (made on first use)."""
        if self.checkout is None:
            return None
        if not self.code:
            self.code.append(CodeCache(self.checkout))
        return self.code[0]

    def task_bytes(self, name: SpecialistName) -> int:
        """The bound on a task of `name`: the batch bound less the prompt's own text."""
        return max(1, self.limits.batch_bytes - self.prompts.fixed_bytes(name))

    def batches(self, lessons: Sequence[Lesson]) -> list[list[Lesson]]:
        """`lessons` cut into batches whose lessons, as the prompt shows them, take at most
        `LESSON_SHARE` of the bound: the rest is for the evidence, files and template."""
        return cut_by_serialized_size(lessons, self.limits.batch_bytes)

    def notify(self, stage: str, specialist: str | None = None, detail: str = "", **n: int) -> None:
        """Tell the progress callback, never letting it break the postmortem."""
        self.progress(ProgressEvent(stage, specialist, detail, n.get("done"), n.get("total")))


def safe_progress(callback: Progress | None) -> Callable[[ProgressEvent], None]:
    """A progress callback that logs instead of raising."""

    def call(event: ProgressEvent) -> None:
        if callback is None:
            return
        try:
            callback(event)
        except Exception:
            log.exception("the progress callback failed on %s", event)

    return call


@asynccontextmanager
async def session_for(ctx: Context, out: Outcome) -> AsyncIterator[ProviderSession]:
    """A new session for `out`'s specialist; its usage is counted whatever happens."""
    session = ctx.sessions(out.name, deadline=ctx.deadline)
    ctx.meter.opened(out.name, session)
    try:
        yield session
    finally:
        out.add_usage(session)
        ctx.meter.closed(out.name, session)
        with anyio.CancelScope(shield=True):
            await session.aclose()


async def run_specialist(
    ctx: Context, out: Outcome, frozen: Sequence[Lesson], evidence: ScanResult | None
) -> None:
    """Run one specialist to its end and record it in `out`; never raises but cancellation."""
    ctx.notify("started", out.name)
    try:
        if kind_of(out.name).is_maintenance:
            await maintain(ctx, out, frozen)
        else:
            await discover(ctx, out, evidence, frozen)
    except SpecialistTimedOut as exc:
        out.end("timed_out", exc.detail)
    except SpecialistFailed as exc:
        out.end("failed", _failure(exc))
    except Exception as exc:  # a bug must cost this specialist only, and be visible
        log.exception("%s failed", out.name)
        out.end("failed", f"internal error: {type(exc).__name__}: {exc}")
    ctx.notify("finished", out.name, out.status or "")


def _failure(exc: SpecialistFailed) -> str:
    errors = "; ".join(exc.errors[:5])
    return f"{exc.kind}: {exc.detail}" + (f" ({errors})" if errors else "")


async def maintain(ctx: Context, out: Outcome, frozen: Sequence[Lesson]) -> None:
    """Maintenance: the manifest in batches; every batch must reconcile."""
    lessons = manifest(out.name, ctx.record, frozen, stale=ctx.stale)
    if lessons is None:
        out.end("abstained", NO_DELIVERY_EVIDENCE)
        return
    out.manifest = len(lessons)
    out.stale_offered = len(stale_offered(out.name, ctx.record, frozen, ctx.stale))
    batches = ctx.batches(lessons)
    out.batches = len(batches)
    out.decisions = {}
    if not batches:
        out.end("reconciled")
        return
    async with session_for(ctx, out) as session:
        failure = await decide(ctx, out, session, batches, living=frozen)
    if failure is not None:
        out.end("failed", *failure)
        return
    out.end("reconciled")


async def decide(
    ctx: Context,
    out: Outcome,
    session: ProviderSession,
    batches: Sequence[Sequence[Lesson]],
    *,
    living: Sequence[Lesson],
) -> list[str] | None:
    """Ask and check every batch; record decisions and mutations in `out`.

    Returns the reasons of the first failed batch (the others are cancelled), or None.
    """
    failure: list[str] | None = None
    error: Exception | None = None
    limiter = anyio.CapacityLimiter(max(1, ctx.limits.batch_concurrency))
    done = 0

    async def one(index: int, batch: Sequence[Lesson]) -> None:
        nonlocal failure, error, done
        try:
            async with limiter:
                result, turns = await ask_batch(ctx, out.name, session, batch, living)
        except Exception as exc:  # re-raised below, unwrapped from the task group
            if failure is None and error is None:
                error = exc
            group.cancel_scope.cancel()
            return
        out.repair_turns += turns - 1
        if isinstance(result, Failed):
            if failure is None:
                how = "after one repair turn" if turns > 1 else "refused, no repair turn"
                where = f"batch {index + 1} of {len(batches)} ({how})"
                failure = [f"{where}: {reason}" for reason in result.reasons]
            group.cancel_scope.cancel()
            return
        assert out.decisions is not None
        for decision in result.decisions:
            out.decisions[decision.id] = decision
        out.decided_on.update((x.id, x) for x in batch)
        run_id, model = ctx.record.run_id, session.model
        found = [
            *maintenance_mutations(result, run_id=run_id, model=model),
            *reactivations(result, batch, run_id=run_id, model=model),
        ]
        shown = {x.id: ctx.shown_changed[x.id] for x in batch if x.id in ctx.shown_changed}
        out.mutations.extend(refreshed(found, result, batch, shown, run_id=run_id, model=model))
        done += 1
        # The batch's decisions and mutations live until the publish: out of the cycle
        # collector's reach like the manifest (engine.py thaws both at the end), or every
        # full collection traverses all the batches decided so far again.
        gc.freeze()
        ctx.notify("batch", out.name, done=done, total=len(batches))

    async with anyio.create_task_group() as group:
        for index, batch in enumerate(batches):
            group.start_soon(one, index, batch)
    if error is not None:
        raise error
    if failure is not None and out.decisions:
        failure.append(
            f"{len(out.decisions)} decision(s) of the batches already reconciled are "
            "reported, not published"
        )
    return failure


async def ask_batch(
    ctx: Context,
    name: SpecialistName,
    session: ProviderSession,
    batch: Sequence[Lesson],
    living: Sequence[Lesson],
) -> tuple[MaintenanceResult, int]:
    """One batch: build its task, ask, and check the answer (all or nothing); the checks
    run inside the ask, so a refused answer gets the one repair turn that lists every
    failure (`providers/repair.py`). The result of the last answer, and the turns taken."""
    task = await in_thread(functools.partial(_maintenance_task, ctx, name, batch, living))
    if ctx.checkout is not None:
        change = functools.partial(
            with_changed_code, task, ctx.checkout, ctx.task_bytes(name), offered=ctx.stale
        )
        task = await in_thread(change)
        for supplied in task.lessons:
            # What the task showed is what a keep or an adapt cites again (`refreshed`).
            shown = recited(supplied)
            if shown:
                ctx.shown_changed[supplied.id] = shown
            else:
                ctx.shown_changed.pop(supplied.id, None)
    data = task.to_json()
    prompt = ctx.prompts.render(name, task, data)
    check = maintenance_check(task, checkout=ctx.checkout)
    reply = await session.ask(prompt, answer_schema(name), input=data, check=check)
    assert isinstance(reply.answer, MaintenanceAnswer)
    return check.result(), reply.turns


def _maintenance_task(
    ctx: Context, name: SpecialistName, batch: Sequence[Lesson], living: Sequence[Lesson]
) -> MaintenanceTask:
    # The builders scan the record's deliveries and every living lesson per batch, which
    # is quadratic over a large manifest. Give them only what changes the task: the
    # batch's deliveries, and (living being sorted by ID) the first `others_max +
    # len(batch)` lessons, which always hold the first `others_max` outside the batch.
    # The task, and so its digest, is the same as with the whole record and list.
    record = ctx.record.model_copy(
        update={"deliveries": tuple(d for x in batch for d in ctx.deliveries.get(x.id, ()))}
    )
    living = living[: ctx.limits.task.others_max + len(batch)]
    evidence = ctx.scanned[0] if ctx.scanned else None
    if name == "repository_maintenance":
        return build_repository_maintenance(
            record,
            batch,
            checkout=ctx.checkout,
            living=living,
            limits=ctx.limits.task,
            effectiveness=ctx.effectiveness,
            candidates=ctx.candidates,
            evidence=evidence,
            deferrals=ctx.deferrals,
            max_bytes=ctx.task_bytes(name),
            cache=ctx.code_cache(),
            refs=ctx.refs,
        )
    return build_graph_maintenance(
        record,
        batch,
        living=living,
        limits=ctx.limits.task,
        effectiveness=ctx.effectiveness,
        candidates=ctx.candidates,
        evidence=evidence,
        deferrals=ctx.deferrals,
        max_bytes=ctx.task_bytes(name),
        refs=ctx.refs,
    )


REJECTED_NOTE = (
    "\n\nThe task's `rejected` holds lessons a person rejected for this scope, each with "
    "why (`rejected_because`): never propose them again, nor anything they were rejected for.\n"
)
"""Added to a discovery prompt whose task carries rejections (none: the prompt is as
authored)."""


async def discover(
    ctx: Context, out: Outcome, evidence: ScanResult | None, living: Sequence[Lesson] = ()
) -> None:
    """Discovery: one task with the evidence it may cite, one answer, per-proposal checks.

    `living` (the frozen snapshot) is what a proposal is compared with for duplicates.
    """
    name = out.name
    assert name in ("graph_discovery", "repository_discovery")
    task = await in_thread(
        functools.partial(
            build_discovery,
            name,
            ctx.record,
            evidence=evidence,
            limits=ctx.limits.task,
            checkout=ctx.checkout,
            living=living,
            max_bytes=ctx.task_bytes(name),
            cache=ctx.code_cache(),
        )
    )
    if not task.evidence:
        out.end("reconciled", "no evidence in this run qualifies; nothing to propose")
        return
    task = with_rejected(task, ctx.rejected)
    async with session_for(ctx, out) as session:
        data = task.to_json()
        prompt = ctx.prompts.render(name, task, data)
        if task.rejected:
            prompt += REJECTED_NOTE
        check = discovery_check(
            task, checkout=ctx.checkout, living=living, duplicates=ctx.limits.duplicates
        )
        # The checks run inside the ask: a refused proposal (a citation out of range, an
        # unknown field) gets the one repair turn, a safety refusal none (SPEC §6).
        reply = await session.ask(prompt, answer_schema(name), input=data, check=check)
        assert isinstance(reply.answer, RepositoryDiscoveryAnswer | GraphDiscoveryAnswer)
        out.repair_turns += reply.turns - 1
        result = check.result()
        out.discovery = result
        out.mutations = list(
            discovery_mutations(result, run_id=ctx.record.run_id, model=session.model)
        )
    out.end("reconciled")
