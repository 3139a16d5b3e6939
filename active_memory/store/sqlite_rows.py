"""SQLite-specific rows: one batched write of a change set, and evidence loading."""

from __future__ import annotations

import json
from typing import Any

import aiosqlite

from active_memory.errors import StoreError
from active_memory.store.rows import LESSON_COLUMNS, ChangeSet


async def write_changes(conn: aiosqlite.Connection, changes: ChangeSet, location: str) -> None:
    """Write a change set, inside the caller's transaction."""
    if changes.inserts:
        await conn.executemany(
            f"INSERT INTO lessons ({LESSON_COLUMNS}, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            changes.inserts,
        )
    if changes.updates:
        cursor = await conn.executemany(
            "UPDATE lessons SET revision = ?, status = ?, title = ?, recommendation = ?, "
            "associations = ?, canonical = ?, updated_at = ? WHERE id = ? AND revision = ?",
            changes.updates,
        )
        # BEGIN IMMEDIATE makes a lost race impossible; if it ever happens, write nothing.
        if cursor.rowcount != len(changes.updates):
            raise StoreError(f"{location}: revision check lost a race; nothing written")
    changed = [row[0] for row in changes.inserts] + [row[7] for row in changes.updates]
    if changed:
        # One new store version per write, stamped on every lesson it changed (recall
        # generations read "what changed since V" from it; docs/store.md).
        await conn.execute(
            "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'change_version'"
        )
        await conn.execute(
            "UPDATE lessons SET change_version = (SELECT CAST(value AS INTEGER) FROM store_meta "
            "WHERE key = 'change_version') WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(changed),),
        )
    if changes.dropped_evidence:
        await conn.executemany(
            "DELETE FROM lesson_evidence WHERE lesson_id = ?", changes.dropped_evidence
        )
    if changes.evidence:
        # A citation cited again moves to the end (a new seq): the latest fingerprint of
        # a range is its last row, also when the code went back to an earlier text.
        await conn.executemany(
            "INSERT INTO lesson_evidence (lesson_id, kind, value) VALUES (?, ?, ?) "
            "ON CONFLICT (lesson_id, kind, value) DO UPDATE "
            "SET seq = (SELECT max(seq) + 1 FROM lesson_evidence) "
            "WHERE excluded.kind = 'citation'",
            changes.evidence,
        )
    if changes.history:
        await conn.executemany(
            "INSERT INTO lesson_history (lesson_id, revision, previous_revision, action, "
            "status, scope, card, specialist, run_id, model, reason, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            changes.history,
        )


async def load_evidence(
    conn: aiosqlite.Connection, lesson_ids: list[str]
) -> dict[str, dict[str, list[Any]]]:
    """Evidence of the given lessons by kind, in the order it was recorded."""
    evidence: dict[str, dict[str, list[Any]]] = {}
    if not lesson_ids:
        return evidence
    rows = await conn.execute_fetchall(
        "SELECT lesson_id, kind, value FROM lesson_evidence "
        "WHERE lesson_id IN (SELECT value FROM json_each(?)) ORDER BY seq",
        (json.dumps(lesson_ids),),
    )
    for lesson_id, kind, value in rows:
        slot = evidence.setdefault(lesson_id, {"run": [], "evidence": [], "citation": []})
        slot[kind].append(json.loads(value) if kind == "citation" else value)
    return evidence
