"""The PostgreSQL store's review queue: the SQL of `store/review.py`'s decisions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from active_memory.lessons import utcnow
from active_memory.store.review import (
    PROPOSAL_COLUMNS,
    Proposal,
    ProposedMutation,
    ReviewDecision,
    approved_mutation,
    check_decision,
    proposal_rows,
    row_to_proposal,
)

if TYPE_CHECKING:
    from active_memory.store.postgres import Connection, PostgresStore

_INSERT = (
    "INSERT INTO lesson_proposals (state, action, lesson_id, base_revision, scope_kind, "
    "repository, graph_hash, node, mutation, run_id, specialist, at) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING seq"
)


async def propose(store: PostgresStore, mutations: Sequence[ProposedMutation]) -> list[int]:
    """Keep `mutations` as proposals, all or none; their sequence numbers."""
    if not mutations:
        return []
    return await store._in_write_transaction(insert_proposals, mutations)


async def insert_proposals(conn: Connection, mutations: Sequence[ProposedMutation]) -> list[int]:
    """Insert `mutations` as proposals inside the caller's write transaction (a publish's
    own, so a crash can never keep one without the other); their sequence numbers."""
    scopes: dict[str, tuple[str, str, str, str]] = {}
    adapted = sorted({m.id for m in mutations if m.action == "adapt"})
    for row in await conn.fetch(
        "SELECT id, scope_kind, repository, graph_hash, node FROM lessons "
        "WHERE id = ANY($1::text[]) AND status <> 'retired'",
        adapted,
    ):
        scopes[row[0]] = (row[1], row[2], row[3], row[4])
    seqs: list[int] = []
    for values in proposal_rows(mutations, scopes, utcnow().isoformat()):
        seqs.append(int(await conn.fetchval(_INSERT, *values)))
    return seqs


async def proposals(store: PostgresStore, state: str | None) -> list[Proposal]:
    """Proposals in `state` (None: all), oldest first."""
    async with store._reading() as conn:
        rows = await conn.fetch(
            f"SELECT {PROPOSAL_COLUMNS} FROM lesson_proposals "
            "WHERE $1::text IS NULL OR state = $1 ORDER BY seq",
            state,
        )
    return [row_to_proposal(tuple(row)) for row in rows]


async def decide(store: PostgresStore, seq: int, decision: ReviewDecision) -> Proposal:
    """Approve (publish) or reject proposal `seq`, in one transaction."""

    async def body(conn: Connection) -> Proposal:
        row = await conn.fetchrow(
            f"SELECT {PROPOSAL_COLUMNS} FROM lesson_proposals WHERE seq = $1 FOR UPDATE", seq
        )
        found = row_to_proposal(tuple(row)) if row is not None else None
        check_decision(seq, found.state if found else None, decision)
        assert found is not None
        result: tuple[str | None, int | None] = (None, None)
        if decision.approve:
            receipt = await store._apply(conn, [approved_mutation(found, decision)], [], ([], []))
            result = (receipt.created or receipt.adapted)[0]
        state = "approved" if decision.approve else "rejected"
        await conn.execute(
            "UPDATE lesson_proposals SET state = $1, decided_at = $2, decided_by = $3, "
            "decision_reason = $4, result_id = $5, result_revision = $6 WHERE seq = $7",
            state, utcnow().isoformat(), decision.author.specialist, decision.reason.strip(),
            *result, seq,
        )  # fmt: skip
        return found.model_copy(
            update={"state": state, "result_id": result[0], "result_revision": result[1],
                    "decision_reason": decision.reason.strip(),
                    "decided_by": decision.author.specialist}
        )  # fmt: skip

    return await store._in_write_transaction(body)
