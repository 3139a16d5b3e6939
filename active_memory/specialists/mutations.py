"""Accepted answers → the store's mutations (SPEC §7 publishes them in one transaction).

Only checked results go in: a `Reconciled` batch (never a `Failed` one) and the
`accepted` proposals of a `DiscoveryResult` (never the rejected ones). Every mutation
carries `Author(specialist, run_id, model)`; adapt and retire are checked by the store
against the revision they were decided on (`base_revision`).

- keep → nothing (the report counts it), except for a deferred lesson: keeping it
  reactivates it, an `AdaptLesson` with its own card (`reactivations`); adapt →
  `AdaptLesson` (the run's ID added to the lesson's evidence, with the decision's
  `citations`); retire → `RetireLesson` (with `canonical`); defer → `DeferLesson`,
  except for a lesson that is deferred already (a new revision would change nothing
  and only race other writers).
- a lesson whose task showed changed or moved code (`cited_code_changed`,
  `cited_code_moved`), or a keep that carries `citations`: a keep or an adapt cites
  them again (`refreshed`; a keep becomes an adapt to its own card), so the publish
  fingerprints them anew.
- an accepted proposal → `CreateLesson` with its scope, card, and `Evidence(run_ids,
  evidence_ids, citations)`; `why_recurs` becomes the history's reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from active_memory.lessons import (
    AdaptLesson,
    Author,
    Card,
    CreateLesson,
    DeferLesson,
    Evidence,
    Lesson,
    RetireLesson,
)
from active_memory.specialists.checks import DiscoveryResult, Failed, Reconciled
from active_memory.specialists.tasks.changed_code import Recited

MaintenanceMutation = AdaptLesson | RetireLesson | DeferLesson
AnyMutation = CreateLesson | AdaptLesson | RetireLesson | DeferLesson


def author(specialist: str, run_id: str, model: str | None) -> Author:
    """Who made the change: the specialist, in which run's postmortem, with which model."""
    return Author(specialist=specialist, run_id=run_id, model=model)


def maintenance_mutations(
    result: Reconciled, *, run_id: str, model: str | None
) -> list[MaintenanceMutation]:
    """One mutation per decision that changes something, in the batch's order."""
    by = author(result.specialist, run_id, model)
    found: list[MaintenanceMutation] = []
    for decision in result.decisions:
        if decision.action == "adapt" and decision.lesson is not None:
            found.append(
                AdaptLesson(
                    id=decision.id,
                    base_revision=decision.revision,
                    card=decision.lesson,
                    evidence=Evidence(run_ids=[run_id], citations=list(decision.citations)),
                    author=by,
                    reason=decision.reason,
                )
            )
        elif decision.action == "retire":
            found.append(
                RetireLesson(
                    id=decision.id,
                    base_revision=decision.revision,
                    canonical=decision.canonical,
                    author=by,
                    reason=decision.reason,
                )
            )
        elif decision.action == "defer" and decision.id not in result.already_deferred:
            found.append(
                DeferLesson(
                    id=decision.id,
                    base_revision=decision.revision,
                    author=by,
                    reason=decision.reason,
                )
            )
    return found


def reactivations(
    result: Reconciled, batch: Sequence[Lesson], *, run_id: str, model: str | None
) -> list[AdaptLesson]:
    """A `keep` of a deferred lesson makes it active again, card unchanged: an adapt to its
    own card (the store's adapt makes a lesson active; a new revision records who)."""
    by = author(result.specialist, run_id, model)
    lessons = {x.id: x for x in batch}
    found: list[AdaptLesson] = []
    for decision in result.decisions:
        lesson = lessons.get(decision.id)
        if decision.action != "keep" or lesson is None or lesson.status != "deferred":
            continue
        found.append(
            AdaptLesson(
                id=decision.id,
                base_revision=decision.revision,
                card=lesson.card(),
                evidence=Evidence(run_ids=[run_id], citations=list(decision.citations)),
                author=by,
                reason=decision.reason or "kept by maintenance: reactivated",
            )
        )
    return found


def refreshed(
    found: Sequence[MaintenanceMutation],
    result: Reconciled,
    batch: Sequence[Lesson],
    shown: Mapping[str, Recited],
    *,
    run_id: str,
    model: str | None,
) -> list[MaintenanceMutation]:
    """`found` (a batch's mutations) with what each task showed cited again (`shown`, by
    lesson ID: `changed_code.recited`), so that the publish fingerprints it against the
    checkout now (docs/staleness.md): an adapt (a reactivation included) carries it,
    before the decision's own citations, and a `keep` of an active lesson that showed
    changed or moved code, or that carries citations, becomes an adapt to its own card
    that does. The decision was made with the diff shown: the lesson now holds for the
    code as it is, and is not offered again until that code changes."""
    decisions = {d.id: d for d in result.decisions}
    out: list[MaintenanceMutation] = []
    cited_again: set[str] = set()
    for m in found:
        decision = decisions.get(m.id)
        if isinstance(m, AdaptLesson) and decision is not None:
            own = list(decision.citations)
            cited = shown[m.id].with_decision(own) if m.id in shown else own
            if cited:
                evidence = Evidence(
                    run_ids=m.evidence.run_ids, evidence_ids=m.evidence.evidence_ids,
                    citations=cited,
                )  # fmt: skip
                m = m.model_copy(update={"evidence": evidence})
                cited_again.add(m.id)
        out.append(m)
    by = author(result.specialist, run_id, model)
    lessons = {x.id: x for x in batch}
    for decision in result.decisions:
        lesson = lessons.get(decision.id)
        if decision.action != "keep" or lesson is None or decision.id in cited_again:
            continue
        recited = shown.get(decision.id)
        cited = recited.with_decision(list(decision.citations)) if recited else decision.citations
        if not cited or lesson.status != "active":
            continue
        out.append(
            AdaptLesson(
                id=decision.id,
                base_revision=decision.revision,
                card=lesson.card(),
                evidence=Evidence(run_ids=[run_id], citations=list(cited)),
                author=by,
                reason=decision.reason or "kept by maintenance, cited where its code is now",
            )
        )
    return out


def discovery_mutations(
    result: DiscoveryResult, *, run_id: str, model: str | None
) -> list[CreateLesson]:
    """One `CreateLesson` per accepted proposal, in answer order."""
    by = author(result.specialist, run_id, model)
    return [
        CreateLesson(
            scope=accepted.scope,
            card=Card(
                title=accepted.proposal.title,
                recommendation=accepted.proposal.recommendation,
                associations=accepted.proposal.associations,
            ),
            evidence=Evidence(
                run_ids=[run_id],
                evidence_ids=list(accepted.proposal.evidence),
                citations=list(accepted.proposal.citations),
            ),
            author=by,
            reason=accepted.proposal.why_recurs,
        )
        for accepted in result.accepted
    ]


def mutations(
    result: Reconciled | Failed | DiscoveryResult, *, run_id: str, model: str | None
) -> list[AnyMutation]:
    """The mutations of any checked result; a `Failed` batch yields none."""
    if isinstance(result, Failed):
        return []
    if isinstance(result, Reconciled):
        return list(maintenance_mutations(result, run_id=run_id, model=model))
    return list(discovery_mutations(result, run_id=run_id, model=model))
