"""The checks an answer must pass before anything of it is published (SPEC §5, §6).

- `check_discovery(task, answer, checkout=)` → `DiscoveryResult`: each proposal is
  checked on its own; `accepted` holds the ones that passed (as `lessons.Proposal` with
  their scope), `rejected` one entry per refused proposal with every reason.
- `check_maintenance(task, answer, checkout=)` → `Reconciled` (one valid decision per
  supplied `(id, revision)`, in batch order) or `Failed` (every reason). Any violation
  fails the batch as a whole: a decision that cannot be applied is as good as missing,
  and maintenance never guesses.

Nothing here raises on a bad answer: every violation becomes a reason string that names
the answer's JSON path (`lessons[2].title: ...`). A credential anywhere in a proposal or a
decision is such a violation (`credentials.py`), and every reason and rejected title
is masked, so no secret reaches a report, the journal or a log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from active_memory.checkout import Checkout
from active_memory.credentials import mask, secret_reasons
from active_memory.evidence import EvidenceItem
from active_memory.lessons import (
    Associations,
    Decision,
    GraphScope,
    Lesson,
    Proposal,
    RepositoryScope,
    Scope,
)
from active_memory.quality.duplicates import DuplicateLimits, find_duplicate, text_similarity
from active_memory.specialists.answers import (
    GraphDiscoveryAnswer,
    GraphProposalDraft,
    MaintenanceAnswer,
    ProposalDraft,
    RepositoryDiscoveryAnswer,
)
from active_memory.specialists.checks.citations import Paths, current_citations
from active_memory.specialists.checks.gate import card_refusals, is_safety_refusal
from active_memory.specialists.checks.results import (
    AcceptedProposal,
    DiscoveryResult,
    Failed,
    MaintenanceResult,
    Reconciled,
    Rejection,
)
from active_memory.specialists.kinds import kind_of
from active_memory.specialists.tasks import DiscoveryTask, MaintenanceTask, SuppliedLesson
from active_memory.validation import error_lines

MAX_PROPOSALS = 20
"""Proposals checked per discovery answer; later ones are refused unchecked, so that a
runaway answer can neither flood the store nor cost a git call per proposal."""


def _safety_alone(reasons: Sequence[str]) -> Sequence[str]:
    """`reasons`, or only its safety refusals when there are any: a card (a batch) refused
    by a safety rule is refused by that alone, with no other fault named (SPEC §6)."""
    unsafe = [reason for reason in reasons if is_safety_refusal(reason)]
    return unsafe or reasons


def _validate(model: type[BaseModel], data: dict[str, Any], path: str) -> tuple[Any, list[str]]:
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        return None, error_lines(exc, data, prefix=path)


# --- discovery ----------------------------------------------------------------------


def check_discovery(
    task: DiscoveryTask,
    answer: RepositoryDiscoveryAnswer | GraphDiscoveryAnswer,
    *,
    checkout: Checkout | None,
    living: Sequence[Lesson] = (),
    duplicates: DuplicateLimits | None = None,
) -> DiscoveryResult:
    """Check each proposal of a discovery answer against `task` and the checkout.

    A proposal that passes every check but repeats an active lesson of its scope in
    `living` (`quality/duplicates.py`) is refused with `duplicate_of` set.
    """
    limits = duplicates or DuplicateLimits()
    lessons: Sequence[ProposalDraft] = answer.lessons
    accepted: list[AcceptedProposal] = []
    rejected: list[Rejection] = []
    titles: dict[str, int] = {}
    evidence = task.evidence_by_id()
    validated = [
        _validate(Proposal, draft.model_dump(exclude={"node", "adapts"}), f"lessons[{index}]")
        for index, draft in enumerate(lessons[:MAX_PROPOSALS])
    ]
    paths = Paths(checkout) if checkout is not None else None
    if paths is not None:
        paths.prefetch(c.path for found, _ in validated if found for c in found.citations)
    for index, draft in enumerate(lessons):
        if index >= MAX_PROPOSALS:
            reason = f"lessons[{index}]: only the first {MAX_PROPOSALS} proposals are considered"
            rejected.append(Rejection(index, mask(draft.title), (reason,)))
            continue
        found, errors = validated[index]
        scope, reasons = _check_proposal(task, draft, found, errors, index, paths)
        reasons.extend(secret_reasons(draft.model_dump(), f"lessons[{index}]"))
        key = " ".join(draft.title.casefold().split())
        if key in titles:
            reasons.append(f"lessons[{index}]: repeats the title of lessons[{titles[key]}]")
        titles.setdefault(key, index)
        if reasons or found is None or scope is None:
            # A reason may quote the answer (a bad path, a repeated title): mask it too.
            masked = tuple(mask(reason) for reason in _safety_alone(reasons))
            rejected.append(Rejection(index, mask(draft.title), masked))
            continue
        if draft.adapts is not None:
            rejected.append(_adaptation(task, draft.adapts, found, index, living))
            continue
        repeated = find_duplicate(found, scope, living, limits)
        if repeated is not None:
            reason = (
                f"lessons[{index}]: near-duplicate of {repeated.describe()}; not created, "
                "left to maintenance as an adaptation candidate of that lesson"
            )
            rejected.append(
                Rejection(
                    index,
                    mask(draft.title),
                    (reason,),
                    repeated.lesson_id,
                    proposal=found,
                    similarity=repeated.score,
                )
            )
            continue
        items = tuple(evidence[e] for e in found.evidence)
        accepted.append(AcceptedProposal(index, found, scope, items))
    return DiscoveryResult(task.specialist, tuple(accepted), tuple(rejected))


def _adaptation(
    task: DiscoveryTask, target: str, proposal: Proposal, index: int, living: Sequence[Lesson]
) -> Rejection:
    """A checked proposal that names the lesson it adapts: never created, kept as that
    lesson's adaptation candidate (or refused when the target is not one shown)."""
    shown = {x.id for x in task.lessons}
    title = mask(proposal.title)
    if target not in shown:
        reason = (
            f"lessons[{index}].adapts: {target!r} is not one of the active lessons of this "
            "scope in the task"
        )
        return Rejection(index, title, (mask(reason),))
    lesson = next((x for x in living if x.id == target), None)
    score = text_similarity(proposal, lesson.card()) if lesson is not None else None
    reason = (
        f"lessons[{index}]: proposed as an adaptation of {target}; not created, left to "
        "maintenance as an adaptation candidate of that lesson"
    )
    return Rejection(index, title, (reason,), target, proposal=proposal, similarity=score)


def _check_proposal(
    task: DiscoveryTask,
    draft: ProposalDraft,
    proposal: Proposal | None,
    errors: list[str],
    index: int,
    paths: Paths | None,
) -> tuple[Scope | None, list[str]]:
    path = f"lessons[{index}]"
    reasons = list(errors)
    cited = _cited_evidence(task, draft.evidence, path, reasons)
    repository = task.specialist != "graph_discovery"
    node_name = draft.node if isinstance(draft, GraphProposalDraft) else None
    instructions = next(
        (n.instructions for n in task.nodes if n.node == node_name and not repository), None
    )
    reasons.extend(
        card_refusals(
            path,
            title=draft.title,
            recommendation=draft.recommendation,
            associations=proposal.associations if proposal is not None else Associations(),
            citations=proposal.citations if proposal is not None else (),
            evidence=cited,
            repository=repository,
            instructions=instructions,
            read_file=paths.read if paths is not None else None,
        )
    )
    scope: Scope | None = None
    if task.specialist == "graph_discovery":
        node = draft.node if isinstance(draft, GraphProposalDraft) else None
        scope = _graph_target(task, node, cited, path, reasons)
        if proposal is not None and proposal.citations:
            current_citations(
                proposal.citations, proposal.associations, paths, path, reasons,
                need_match=False,
            )  # fmt: skip
    else:
        scope = _repository_target(task, path, reasons)
        if proposal is not None:
            if proposal.associations.is_empty():
                reasons.append(f"{path}.associations: a repository lesson needs one at least")
            current_citations(
                proposal.citations, proposal.associations, paths, path, reasons,
                need_match=True,
            )  # fmt: skip
    return scope, reasons


def _cited_evidence(
    task: DiscoveryTask, ids: Sequence[str], path: str, reasons: list[str]
) -> list[EvidenceItem]:
    kind = kind_of(task.specialist)
    given = task.evidence_by_id()
    cited: list[EvidenceItem] = []
    for position, evidence_id in enumerate(ids):
        item = given.get(evidence_id)
        where = f"{path}.evidence[{position}]"
        if item is None:
            reasons.append(f"{where}: {evidence_id!r} is not an evidence item of this task")
        elif item.kind not in kind.evidence_kinds or task.specialist not in item.specialists:
            reasons.append(
                f"{where}: {evidence_id} is {item.kind} evidence, which {task.specialist} "
                "may not cite (graph discovery: repeated failures only)"
            )
        else:
            cited.append(item)
    return cited


def _graph_target(
    task: DiscoveryTask,
    node: str | None,
    cited: Sequence[EvidenceItem],
    path: str,
    reasons: list[str],
) -> GraphScope | None:
    allowed = sorted({n for item in cited for n in item.nodes})
    if not node:
        reasons.append(f"{path}.node: required: one of the cited evidence's nodes {allowed}")
        return None
    if node not in allowed:
        reasons.append(f"{path}.node: {node!r} is not a node of the cited evidence {allowed}")
        return None
    if node not in task.run.executed_nodes:
        reasons.append(f"{path}.node: {node!r} did not execute in run {task.run.run_id}")
        return None
    try:
        return GraphScope(graph_hash=task.run.graph_hash or "", node=node)
    except ValidationError:
        reasons.append(f"{path}: the run's graph hash is unknown; a graph lesson needs it")
        return None


def _repository_target(task: DiscoveryTask, path: str, reasons: list[str]) -> Scope | None:
    if not task.run.repository:
        reasons.append(f"{path}: the run has no repository namespace to scope the lesson to")
        return None
    return RepositoryScope(repository=task.run.repository)


# --- maintenance --------------------------------------------------------------------


@dataclass(slots=True)
class _Ledger:
    reasons: list[str] = field(default_factory=list)
    decided: dict[str, int] = field(default_factory=dict)
    valid: dict[str, Decision] = field(default_factory=dict)


def check_maintenance(
    task: MaintenanceTask, answer: MaintenanceAnswer, *, checkout: Checkout | None
) -> MaintenanceResult:
    """Reconcile a maintenance answer with its batch: all or nothing."""
    supplied = task.supplied()
    others = {ref.id: ref for ref in task.others}
    ledger = _Ledger()
    pending: list[tuple[str, Scope, Decision]] = []  # shaped right; content checked next
    for index, draft in enumerate(answer.decisions):
        path = f"decisions[{index}]"
        lesson = supplied.get(draft.id)
        dump = draft.model_dump()  # read, never changed, by the screen and the validation
        ledger.reasons.extend(secret_reasons(_changed_text(dump, lesson), path))
        if lesson is None:
            where = "outside this batch" if draft.id in others else "not supplied to you"
            ledger.reasons.append(
                f"{path}: {draft.id!r} is {where} (unknown, or another scope's lesson)"
            )
            continue
        if draft.id in ledger.decided:
            first = ledger.decided[draft.id]
            ledger.reasons.append(
                f"{path}: a second decision for {draft.id} (the first is decisions[{first}])"
            )
            continue
        ledger.decided[draft.id] = index
        if draft.revision != lesson.revision:
            ledger.reasons.append(
                f"{path}: {draft.id} was supplied at revision {lesson.revision}, "
                f"not {draft.revision}"
            )
            continue
        decision, errors = _validate(Decision, dump, path)
        ledger.reasons.extend(errors)
        if decision is None:
            continue
        pending.append((path, lesson.scope, decision))
    paths = Paths(checkout) if checkout is not None else None
    if paths is not None:
        paths.prefetch(c.path for _, _, d in pending for c in d.citations)
        if task.specialist == "repository_maintenance":
            paths.prefetch(
                f for _, _, d in pending if d.lesson for f in d.lesson.associations.files
            )
    for path, scope, decision in pending:
        problems = _decision_problems(task, scope, decision, path, paths)
        if decision.citations:
            lesson = supplied[decision.id]
            associations = decision.lesson.associations if decision.lesson else lesson.associations
            current_citations(
                decision.citations, associations, paths, path, problems,
                need_match=task.specialist == "repository_maintenance",
            )  # fmt: skip
        ledger.reasons.extend(problems)
        if not problems:
            ledger.valid[decision.id] = decision
    for lesson in task.lessons:
        if lesson.id not in ledger.decided:
            ledger.reasons.append(f"{lesson.id} (revision {lesson.revision}) has no decision")
    for decision in ledger.valid.values():
        target = ledger.valid.get(decision.canonical or "")
        if target is not None and target.action == "retire":
            ledger.reasons.append(
                f"{decision.id}: canonical {decision.canonical} is retired in the same answer"
            )
    if ledger.reasons:
        reasons = _safety_alone(ledger.reasons)
        return Failed(task.specialist, tuple(mask(reason) for reason in reasons))
    deferred = frozenset(x.id for x in task.lessons if x.status == "deferred")
    return Reconciled(task.specialist, tuple(ledger.valid[x.id] for x in task.lessons), deferred)


def _changed_text(dump: dict[str, Any], lesson: SuppliedLesson | None) -> dict[str, Any]:
    """`dump` without the card fields it repeats unchanged from the stored `lesson`: those
    were screened when they were stored, so screening costs what the answer changed.

    Also without the `id` (it is the stored lesson's own) and the `action` (the wire
    model admits only keep/adapt/retire/defer) when the lesson is a supplied one."""
    if lesson is None:
        return dump
    dump = {k: v for k, v in dump.items() if k not in ("id", "action")}
    card = dump.get("lesson")
    if not isinstance(card, dict):
        return dump
    kept = dict(card)
    if kept.get("title") == lesson.title:
        kept.pop("title")
    if kept.get("recommendation") == lesson.recommendation:
        kept.pop("recommendation")
    # A draft always carries `commands`; a stored lesson's dump leaves an empty one out.
    if kept.get("associations") == {"commands": [], **lesson.associations.model_dump()}:
        kept.pop("associations")
    return {**dump, "lesson": kept}


def _decision_problems(
    task: MaintenanceTask,
    own_scope: Scope,
    decision: Decision,
    path: str,
    paths: Paths | None,
) -> list[str]:
    problems: list[str] = []
    if decision.canonical is not None:
        scopes = {x.id: x.scope for x in task.lessons} | {x.id: x.scope for x in task.others}
        scope = scopes.get(decision.canonical)
        if scope is None:
            problems.append(
                f"{path}.canonical: {decision.canonical!r} is not a living lesson of this scope"
            )
        elif scope != own_scope:
            problems.append(
                f"{path}.canonical: {decision.canonical} has another scope than {decision.id}"
            )
    if decision.lesson is not None:
        card = decision.lesson
        supplied = task.supplied().get(decision.id)
        node = supplied.scope.node if supplied and isinstance(supplied.scope, GraphScope) else None
        problems.extend(
            card_refusals(
                f"{path}.lesson",
                title=card.title,
                recommendation=card.recommendation,
                associations=card.associations,
                citations=decision.citations,
                evidence=[],
                repository=task.specialist == "repository_maintenance",
                instructions=next(
                    (n.instructions for n in task.nodes if node and n.node == node), None
                ),
                read_file=None,
            )
        )
        if task.specialist == "repository_maintenance":
            problems.extend(_repository_associations(card.associations, paths, path))
    return problems


def _repository_associations(
    associations: Associations, paths: Paths | None, path: str
) -> list[str]:
    where = f"{path}.lesson.associations"
    if associations.is_empty():
        return [f"{where}: a repository lesson needs one at least"]
    if not associations.files:
        return []
    if paths is None:
        return [f"{where}.files: no checkout to verify them against"]
    verdicts = [paths.verdict(name) for name in associations.files]
    return [
        f"{where}.files[{position}]: not a current file: {verdict.reason}"
        for position, verdict in enumerate(verdicts)
        if not verdict.current
    ]
