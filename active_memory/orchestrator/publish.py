"""The one publish of a postmortem, and refresh-and-reconcile on a revision conflict.

Every accepted mutation of every reconciled specialist goes to the store in one
`publish` (one transaction), shielded and with its own short bound, after the task
group. A `RevisionConflict` writes nothing; the lessons another writer changed are read
again and the maintenance specialist that decided them is asked again about their
current revision (a new session, the same deadline). Then everything is published again
in one transaction. When the deadline or `reconcile_rounds` runs out, or the second
answer fails, that specialist publishes nothing and the conflict is reported; the
others still publish. A newer revision is never overwritten: the store refuses any
mutation decided on an older one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from active_memory.checkout import Checkout
from active_memory.errors import (
    Conflict,
    DeadlineExceeded,
    InvalidMutation,
    RevisionConflict,
    SpecialistFailed,
    SpecialistTimedOut,
)
from active_memory.lessons import AdaptLesson, CreateLesson, Lesson, PublishReceipt, Tombstone
from active_memory.orchestrator.outcome import Outcome
from active_memory.orchestrator.report import ConflictReport, MutationReport, PublishedCounts
from active_memory.orchestrator.run_failures import with_cited
from active_memory.orchestrator.runners import Context, decide, session_for
from active_memory.specialists.kinds import ScopeKind, SpecialistName, kind_of
from active_memory.specialists.mutations import AnyMutation
from active_memory.store import LessonStore
from active_memory.store.candidates import Candidate, Consumed
from active_memory.store.effectiveness import RunObservation
from active_memory.store.failure_signatures import SeenFailures
from active_memory.store.models import PublishMark

log = logging.getLogger("active_memory.orchestrator")


@dataclass(slots=True)
class Publication:
    """What the publish did (or, in a dry run, would do)."""

    counts: PublishedCounts = field(default_factory=PublishedCounts)
    mutations: list[MutationReport] = field(default_factory=list)
    conflicts: list[ConflictReport] = field(default_factory=list)
    error: str | None = None


def _pending(outcomes: Mapping[SpecialistName, Outcome]) -> list[AnyMutation]:
    return [m for o in outcomes.values() if o.status == "reconciled" for m in o.mutations]


def _kept(outcomes: Mapping[SpecialistName, Outcome]) -> int:
    return sum(o.kept for o in outcomes.values() if o.status == "reconciled")


def describe(
    pending: Sequence[AnyMutation], receipt: PublishReceipt | None
) -> list[MutationReport]:
    """One report per mutation; with a receipt, the IDs and revisions written."""
    created = iter(receipt.created) if receipt is not None else iter(())
    found: list[MutationReport] = []
    for m in pending:
        if isinstance(m, CreateLesson):
            lesson_id, revision = next(created, (None, None))
            found.append(
                MutationReport.model_construct(
                    action="create",
                    specialist=m.author.specialist,
                    id=lesson_id,
                    revision=revision,
                    title=m.card.title,
                )
            )
            continue
        found.append(
            MutationReport.model_construct(  # from validated mutations: no second validation
                action=m.action,
                specialist=m.author.specialist,
                id=m.id,
                base_revision=m.base_revision,
                revision=m.base_revision + 1 if receipt is not None else None,
                title=m.card.title if m.action == "adapt" else None,
                canonical=m.canonical if m.action == "retire" else None,
            )
        )
    return found


def _counts(pending: Sequence[AnyMutation], kept: int, proposed: int = 0) -> PublishedCounts:
    actions = [m.action for m in pending]
    return PublishedCounts(
        created=actions.count("create"),
        adapted=actions.count("adapt"),
        retired=actions.count("retire"),
        deferred=actions.count("defer"),
        kept=kept,
        proposed=proposed,
    )


def fingerprinted(pending: Sequence[Any], checkout: Checkout | None) -> list[Any]:
    """`pending` with each new or adapted lesson's citations fingerprinted against the
    checkout (the hash of the cited lines, for staleness; docs/staleness.md)."""
    if checkout is None:
        return list(pending)
    from active_memory.checkout.staleness import fingerprint

    out: list[Any] = []
    for m in pending:
        if isinstance(m, CreateLesson | AdaptLesson) and m.evidence.citations:
            cited = fingerprint(checkout, m.evidence.citations)
            m = m.model_copy(
                update={"evidence": m.evidence.model_copy(update={"citations": cited})}
            )
        out.append(m)
    return out


def _for_review(
    pending: list[AnyMutation], review: str, living: Mapping[ScopeKind, Sequence[Lesson]]
) -> tuple[list[AnyMutation], list[Any]]:
    """Manual review: (what is published, the creations and adaptations proposed).

    An adapt of an active lesson to its own card (a kept stale lesson cited again,
    docs/staleness.md) changes no text an agent is shown: it is published, not proposed."""
    if review != "manual":
        return pending, []
    current = {x.id: x for lessons in living.values() for x in lessons}

    def proposes(m: AnyMutation) -> bool:
        if isinstance(m, CreateLesson):
            return True
        if not isinstance(m, AdaptLesson):
            return False
        now = current.get(m.id)
        return not (
            now is not None
            and now.status == "active"
            and now.revision == m.base_revision
            and now.card() == m.card
        )

    proposed = [m for m in pending if proposes(m)]
    return [m for m in pending if not proposes(m)], proposed


def describe_proposed(
    proposed: Sequence[CreateLesson | AdaptLesson], seqs: Sequence[int] | None
) -> list[MutationReport]:
    """One report per proposal; with `seqs`, the numbers they were kept under."""
    numbers = iter(seqs or ())
    return [
        MutationReport.model_construct(
            action=m.action,
            specialist=m.author.specialist,
            id=m.id if isinstance(m, AdaptLesson) else None,
            base_revision=m.base_revision if isinstance(m, AdaptLesson) else None,
            title=m.card.title,
            proposal=next(numbers, None),
        )
        for m in proposed
    ]


def consumed_candidates(
    outcomes: Mapping[SpecialistName, Outcome], shown: Mapping[str, int]
) -> list[Consumed]:
    """The candidates a publish consumes: those each reconciled maintenance decision
    (adapt, keep, retire or defer) was shown, up to the highest `seq` it saw."""
    decided = {
        lesson_id
        for out in outcomes.values()
        if out.status == "reconciled" and out.decisions
        for lesson_id in out.decisions
    }
    return [Consumed(lesson_id=i, through=shown[i]) for i in sorted(decided) if i in shown]


PUBLISH_GRACE = 0.1
"""Seconds a publish may wait for the store's lock when the deadline has already passed."""


async def bounded_publish(
    store: LessonStore,
    pending: Sequence[AnyMutation],
    seconds: float,
    effectiveness: Sequence[RunObservation] = (),
    *,
    candidates: Sequence[Candidate] = (),
    consumed: Sequence[Consumed] = (),
    wait_until: float | None = None,
    mark: PublishMark | None = None,
    proposals: Sequence[CreateLesson | AdaptLesson] = (),
    failures: SeenFailures | None = None,
) -> PublishReceipt:
    """`store.publish`, shielded from the caller's cancellation, bounded by `seconds`.

    With `wait_until` (the postmortem's deadline), waiting for another writer's lock
    also ends then, or `PUBLISH_GRACE` from now if that is later: a locked store never
    holds the postmortem past its deadline. Once the store holds the lock, the write
    itself finishes (the store shields it).
    """
    now = anyio.current_time()
    limit = now + seconds
    if wait_until is not None:
        limit = min(limit, max(wait_until, now + PUBLISH_GRACE))
    with anyio.CancelScope(shield=True):
        with anyio.CancelScope(deadline=limit) as bound:
            extra: dict[str, Any] = {}
            if mark is not None:
                extra["mark"] = mark
            if proposals:  # manual review: kept in the publish's own transaction
                extra["proposals"] = proposals
            if failures is not None:
                extra["failures"] = failures
            return await store.publish(
                pending, effectiveness, candidates=candidates, consumed=consumed, **extra
            )
    assert bound.cancelled_caught
    raise DeadlineExceeded("the publish (waiting for the store's lock)", limit - now)


async def publish(
    ctx: Context,
    store: LessonStore,
    outcomes: Mapping[SpecialistName, Outcome],
    living: Mapping[ScopeKind, Sequence[Lesson]],
    *,
    dry_run: bool,
    effectiveness: Sequence[RunObservation] = (),
    candidates: Sequence[Candidate] = (),
    shown: Mapping[str, int] | None = None,
    review: str = "automatic",
    mark: PublishMark | None = None,
    failures: SeenFailures | None = None,
) -> Publication:
    """Publish every reconciled specialist's mutations, the run's effectiveness
    observations of lessons, its refused near-duplicates as adaptation `candidates`, and
    the consumption of the candidates each maintenance decision was `shown` (highest seq
    by lesson ID), in one transaction (see module). With `review="manual"`, creations and
    adaptations are kept as proposals for a person instead (docs/review.md), in that same
    transaction: a crash never keeps the publish without its proposals. The run's
    `failures` (its failure signatures) are kept in that transaction too, with the
    failures of the `ev-tf-` items its creations, adaptations and proposals cite."""
    unresolved: list[ConflictReport] = []
    rounds = 0
    while True:
        found = _pending(outcomes)
        if not dry_run:  # git and file reads: off the event loop
            found = await anyio.to_thread.run_sync(fingerprinted, found, ctx.checkout)
        pending, proposed = _for_review(found, review, living)
        items = [item for result in ctx.scanned for item in result.evidence]
        cited = with_cited(failures, [*pending, *proposed], items)
        consumed = consumed_candidates(outcomes, shown or {})
        # The changes as reported before (or without) a publish; built only when the
        # report shows them so (10,000 reports cost as much as a tenth of the publish).
        result = Publication(_counts(pending, _kept(outcomes), len(proposed)), [], unresolved)
        if dry_run or not (
            pending or proposed or effectiveness or candidates or consumed or failures
        ):
            result.mutations = describe(pending, None) + describe_proposed(proposed, None)
            return result
        # A caller that cancelled before the publish began gets nothing published.
        await anyio.lowlevel.checkpoint()
        ctx.notify("publishing", detail=f"{len(pending)} change(s)")
        try:
            receipt = await bounded_publish(
                store,
                pending,
                ctx.limits.publish_seconds,
                effectiveness,
                candidates=candidates,
                consumed=consumed,
                wait_until=ctx.deadline,
                mark=mark,
                proposals=proposed,
                failures=cited,
            )
        except RevisionConflict as exc:
            stale: dict[str, Conflict | None] = {c.lesson_id: c for c in exc.conflicts}
        except InvalidMutation as exc:  # e.g. a canonical card retired by another writer
            stale = {exc.lesson_id: None}
        except Exception as exc:  # the store's failure is the report's, not the caller's
            log.warning("publish of run %s failed: %s", ctx.record.run_id, exc)
            result.error = f"{type(exc).__name__}: {exc}"
            result.counts = PublishedCounts()
            result.mutations = describe(pending, None) + describe_proposed(proposed, None)
            return result
        else:
            ctx.notify("published", detail=f"{len(pending)} change(s)")
            result.mutations = describe(pending, receipt)
            if proposed:
                ctx.notify("proposed", detail=f"{len(receipt.proposed)} change(s) for review")
                result.mutations += describe_proposed(proposed, receipt.proposed)
            return result
        rounds += 1
        ctx.notify("conflict", detail=", ".join(sorted(stale)))
        owners = _owners(outcomes, stale)
        if not owners:  # a refusal no specialist's decision caused: retrying cannot help
            result.error = f"the store refused the publish: {', '.join(sorted(stale))}"
            result.counts, result.mutations = PublishedCounts(), describe(pending, None)
            return result
        retry = rounds <= ctx.limits.reconcile_rounds and anyio.current_time() < ctx.deadline
        for out, ids in owners.items():
            if retry and await rereconcile(ctx, store, out, ids, living[kind_of(out.name).scope]):
                continue
            unresolved.extend(_conflict_reports(out, ids, stale))
            if out.status == "reconciled":
                out.end("failed", f"revision conflict on {', '.join(ids)}: not decided again")


def _owners(
    outcomes: Mapping[SpecialistName, Outcome], stale: Mapping[str, Conflict | None]
) -> dict[Outcome, list[str]]:
    owners: dict[Outcome, list[str]] = {}
    for out in outcomes.values():
        if out.status != "reconciled":
            continue
        ids = sorted(
            {m.id for m in out.mutations if not isinstance(m, CreateLesson) and m.id in stale}
        )
        if ids:
            owners[out] = ids
    return owners


def _conflict_reports(
    out: Outcome, ids: Sequence[str], stale: Mapping[str, Conflict | None]
) -> list[ConflictReport]:
    found = []
    for lesson_id in ids:
        conflict = stale.get(lesson_id)
        decided = out.decided_on.get(lesson_id)
        found.append(
            ConflictReport(
                id=lesson_id,
                specialist=out.name,
                expected_revision=conflict.expected_revision
                if conflict
                else (decided.revision if decided else 0),
                current_revision=conflict.current_revision if conflict else None,
                current_status=conflict.current_status if conflict else None,
            )
        )
    return found


async def rereconcile(
    ctx: Context, store: LessonStore, out: Outcome, ids: Sequence[str], living: Sequence[Lesson]
) -> bool:
    """Read `ids` again and ask `out`'s specialist about their current revisions.

    True when every one is decided again (or was retired meanwhile: nothing to decide);
    False, with `out` ended failed or timed out, otherwise.
    """
    wanted = set(ids)
    out.mutations = [m for m in out.mutations if isinstance(m, CreateLesson) or m.id not in wanted]
    try:
        with anyio.CancelScope(deadline=ctx.deadline) as scope:
            fresh = {i: await store.get(i) for i in ids}
            current = [x for x in fresh.values() if isinstance(x, Lesson)]
            for lesson_id, found in fresh.items():
                if found is None or isinstance(found, Tombstone):
                    (out.decisions or {}).pop(lesson_id, None)  # retired by another writer
            refreshed = {x.id: x for x in current}
            view = [refreshed.get(x.id, x) for x in living]
            failure = None
            if current:
                batches = ctx.batches(current)
                async with session_for(ctx, out) as session:
                    failure = await decide(ctx, out, session, batches, living=view)
    except SpecialistTimedOut as exc:
        out.end("timed_out", f"deciding {', '.join(ids)} again: {exc.detail}")
        return False
    except SpecialistFailed as exc:
        out.end("failed", f"deciding {', '.join(ids)} again: {exc.kind}: {exc.detail}")
        return False
    except Exception as exc:
        log.exception("%s: deciding %s again failed", out.name, ", ".join(ids))
        out.end("failed", f"deciding {', '.join(ids)} again: {type(exc).__name__}: {exc}")
        return False
    if scope.cancelled_caught:
        out.end("timed_out", f"the deadline passed while deciding {', '.join(ids)} again")
        return False
    if failure is not None:
        out.end("failed", *(f"deciding again: {reason}" for reason in failure))
        return False
    out.rereconciled.extend(i for i in ids if i not in out.rereconciled)
    return True
