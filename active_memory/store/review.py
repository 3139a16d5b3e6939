"""Manual review (`activeMemory.review: "manual"`): a postmortem's creations and
adaptations wait as *proposals* until a person approves or rejects them.

A proposal lives in its own table (`lesson_proposals`), never in `lessons`: recall,
which reads only `lessons`, cannot deliver it. Approving applies the proposed mutation
(a person's edited card in place of the proposed one, if they edited it) through the
store's ordinary revision-checked publish, in the same transaction that marks the
proposal approved; an adaptation whose lesson changed since it was proposed is a
`RevisionConflict` and stays proposed. A rejection keeps the proposal with its reason;
rejected proposals of a scope are what the next discovery of that scope is shown as
examples of what not to propose (docs/review.md). Both backends share this module; each
only runs the SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from active_memory.errors import Conflict, ProposalNotPending, RevisionConflict, UsageError
from active_memory.lessons import AdaptLesson, Author, Card, CreateLesson

ProposalState = Literal["proposed", "approved", "rejected"]

PROPOSAL_COLUMNS = (
    "seq, state, action, lesson_id, base_revision, scope_kind, repository, graph_hash, "
    "node, mutation, run_id, specialist, at, decided_at, decided_by, decision_reason, "
    "result_id, result_revision"
)

ProposedMutation = CreateLesson | AdaptLesson
_MUTATION: TypeAdapter[ProposedMutation] = TypeAdapter(ProposedMutation)


class Proposal(BaseModel):
    """One proposed change and, once decided, the decision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int
    state: ProposalState
    scope_key: tuple[str, str, str, str]  # (kind, repository, graph hash, node)
    mutation: ProposedMutation = Field(discriminator="action")
    at: str
    decided_at: str | None = None
    decided_by: str | None = None
    decision_reason: str | None = None
    result_id: str | None = None
    result_revision: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The proposal as the API and the review page show it."""
        document = self.model_dump(mode="json")
        kind, repository, graph_hash, node = self.scope_key
        document["scope"] = {
            "kind": kind, "repository": repository, "graph_hash": graph_hash, "node": node,
        }  # fmt: skip
        return document


class ReviewDecision(BaseModel):
    """A person's decision on a proposal: approve (optionally with an edited card) or
    reject with a reason."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    approve: bool
    author: Author
    reason: str = ""
    card: Card | None = None  # approve: the edited card in place of the proposed one


def proposal_rows(
    mutations: Sequence[ProposedMutation], scopes: dict[str, tuple[str, str, str, str]], at: str
) -> list[tuple[Any, ...]]:
    """Insert rows (state .. at, without seq) for `mutations`; `scopes` maps an adapted
    lesson's ID to its scope columns."""
    rows: list[tuple[Any, ...]] = []
    for m in mutations:
        if isinstance(m, CreateLesson):
            scope, lesson_id, base = m.scope.key(), None, None
        else:
            if m.id not in scopes:
                raise RevisionConflict([Conflict(m.id, m.base_revision, None, None)])
            scope, lesson_id, base = scopes[m.id], m.id, m.base_revision
        rows.append(
            ("proposed", m.action, lesson_id, base, *scope, m.model_dump_json(),
             m.author.run_id or "", m.author.specialist, at)
        )  # fmt: skip
    return rows


def row_to_proposal(row: Sequence[Any]) -> Proposal:
    """A `PROPOSAL_COLUMNS` row as a `Proposal`."""
    return Proposal(
        seq=int(row[0]),
        state=row[1],
        scope_key=(row[5], row[6], row[7], row[8]),
        mutation=_MUTATION.validate_json(row[9]),
        at=row[12],
        decided_at=row[13],
        decided_by=row[14],
        decision_reason=row[15],
        result_id=row[16],
        result_revision=row[17],
    )


def approved_mutation(proposal: Proposal, decision: ReviewDecision) -> ProposedMutation:
    """What approving publishes: the proposed mutation, with the person's card and the
    person as author when they edited it; otherwise the specialist's own, noting who
    approved it."""
    m = proposal.mutation
    who = decision.author.specialist
    if decision.card is not None and decision.card != m.card:
        note = f"edited and approved by {who}"
        reason = f"{note}: {decision.reason}" if decision.reason else note
        return m.model_copy(update={"card": decision.card, "author": decision.author,
                                    "reason": reason})  # fmt: skip
    note = f"approved by {who}"
    reason = f"{m.reason} ({note})" if m.reason else note
    return m.model_copy(update={"reason": reason[:600]})


def check_decision(seq: int, state: str | None, decision: ReviewDecision) -> None:
    """Refuse a decision on a missing or decided proposal, or a rejection without reason."""
    if state != "proposed":
        raise ProposalNotPending(seq, state)
    if not decision.approve and not decision.reason.strip():
        raise UsageError(f"proposal {seq}: a rejection needs a reason (the next discovery "
                         "of its scope is shown it)")  # fmt: skip
