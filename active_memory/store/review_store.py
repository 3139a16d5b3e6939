"""Manual review's proposals in the store, written once over its dialect; every decision
is `store/review.py`'s."""

from __future__ import annotations

from collections.abc import Sequence

from active_memory.lessons import utcnow
from active_memory.store.dialect import Dialect, Tx
from active_memory.store.review import (
    PROPOSAL_COLUMNS,
    Proposal,
    ProposedMutation,
    ReviewDecision,
    approved_mutation,
    check_decision,
    row_to_proposal,
)
from active_memory.store.writing import apply_publish, insert_proposals


async def propose(d: Dialect, mutations: Sequence[ProposedMutation]) -> list[int]:
    """Keep `mutations` as proposals, all or none; their sequence numbers."""
    if not mutations:
        return []
    return await d.write(lambda tx: insert_proposals(tx, d, mutations))


async def read_proposals(d: Dialect, state: str | None) -> list[Proposal]:
    """Proposals in `state` (None: all), oldest first."""
    where, params = ("WHERE state = ? ", (state,)) if state is not None else ("", ())
    async with d.reading(snapshot=False) as tx:
        rows = await tx.fetch(
            f"SELECT {PROPOSAL_COLUMNS} FROM lesson_proposals {where}ORDER BY seq", *params
        )
    return [row_to_proposal(tuple(row)) for row in rows]


async def decide(d: Dialect, seq: int, decision: ReviewDecision) -> Proposal:
    """Approve (publish, revision-checked) or reject proposal `seq`, in one transaction."""

    async def body(tx: Tx) -> Proposal:
        row = await tx.fetchone(
            f"SELECT {PROPOSAL_COLUMNS} FROM lesson_proposals WHERE seq = ?{d.lock_rows}", seq
        )
        found = row_to_proposal(tuple(row)) if row is not None else None
        check_decision(seq, found.state if found else None, decision)
        assert found is not None
        result: tuple[str | None, int | None] = (None, None)
        if decision.approve:
            receipt = await apply_publish(tx, d, [approved_mutation(found, decision)])
            result = (receipt.created or receipt.adapted)[0]
        state = "approved" if decision.approve else "rejected"
        reason, by = decision.reason.strip(), decision.author.specialist
        await tx.execute(
            "UPDATE lesson_proposals SET state = ?, decided_at = ?, decided_by = ?, "
            "decision_reason = ?, result_id = ?, result_revision = ? WHERE seq = ?",
            state, utcnow().isoformat(), by, reason, *result, seq,
        )  # fmt: skip
        return found.model_copy(
            update={"state": state, "result_id": result[0], "result_revision": result[1],
                    "decision_reason": reason, "decided_by": by}
        )  # fmt: skip

    return await d.write(body)
