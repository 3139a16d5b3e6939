"""The SQLite store's review queue: the SQL of `store/review.py`'s decisions."""

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
    from aiosqlite import Connection

    from active_memory.store.sqlite import SqliteStore

_INSERT = (
    "INSERT INTO lesson_proposals (state, action, lesson_id, base_revision, scope_kind, "
    "repository, graph_hash, node, mutation, run_id, specialist, at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


async def propose(store: SqliteStore, mutations: Sequence[ProposedMutation]) -> list[int]:
    """Keep `mutations` as proposals, all or none; their sequence numbers."""
    if not mutations:
        return []
    return await store._in_write_transaction(insert_proposals, store._conn, mutations)


async def insert_proposals(conn: Connection, mutations: Sequence[ProposedMutation]) -> list[int]:
    """Insert `mutations` as proposals inside the caller's write transaction (a publish's
    own, so a crash can never keep one without the other); their sequence numbers."""
    scopes: dict[str, tuple[str, str, str, str]] = {}
    for m in mutations:
        if m.action == "adapt":
            rows = await conn.execute_fetchall(
                "SELECT scope_kind, repository, graph_hash, node FROM lessons "
                "WHERE id = ? AND status <> 'retired'",
                (m.id,),
            )
            for row in rows:
                scopes[m.id] = (row[0], row[1], row[2], row[3])
    seqs: list[int] = []
    for values in proposal_rows(mutations, scopes, utcnow().isoformat()):
        cursor = await conn.execute(_INSERT, values)
        assert cursor.lastrowid is not None
        seqs.append(cursor.lastrowid)
    return seqs


async def proposals(store: SqliteStore, state: str | None) -> list[Proposal]:
    """Proposals in `state` (None: all), oldest first."""
    with store._translated():
        rows = await store._conn.execute_fetchall(
            f"SELECT {PROPOSAL_COLUMNS} FROM lesson_proposals "
            "WHERE ? IS NULL OR state = ? ORDER BY seq",
            (state, state),
        )
    return [row_to_proposal(tuple(row)) for row in rows]


async def decide(store: SqliteStore, seq: int, decision: ReviewDecision) -> Proposal:
    """Approve (publish) or reject proposal `seq`, in one transaction."""

    async def body() -> Proposal:
        conn = store._conn
        rows = list(
            await conn.execute_fetchall(
                f"SELECT {PROPOSAL_COLUMNS} FROM lesson_proposals WHERE seq = ?", (seq,)
            )
        )
        found = row_to_proposal(tuple(rows[0])) if rows else None
        check_decision(seq, found.state if found else None, decision)
        assert found is not None
        result: tuple[str | None, int | None] = (None, None)
        if decision.approve:
            receipt = await store._apply([approved_mutation(found, decision)], [], ([], []))
            result = (receipt.created or receipt.adapted)[0]
        await conn.execute(
            "UPDATE lesson_proposals SET state = ?, decided_at = ?, decided_by = ?, "
            "decision_reason = ?, result_id = ?, result_revision = ? WHERE seq = ?",
            ("approved" if decision.approve else "rejected", utcnow().isoformat(),
             decision.author.specialist, decision.reason.strip(), *result, seq),
        )  # fmt: skip
        return found.model_copy(
            update={"state": "approved" if decision.approve else "rejected",
                    "result_id": result[0], "result_revision": result[1],
                    "decision_reason": decision.reason.strip(),
                    "decided_by": decision.author.specialist}
        )  # fmt: skip

    return await store._in_write_transaction(body)
