"""The write path of publish, revert, import and an approved proposal, written once: the
statements each runs inside its dialect's write transaction (`planning.py` decides what
to write, this module writes it).

One lock order for every writer, on both backends: the ID counter row first (a publish
that creates lessons, an import), then the lesson rows it reads, in ID order
(`current_rows`), then the rows beside them (effectiveness, candidates; each in lesson ID
order), the repository's failure signatures, the publish mark last. On PostgreSQL the
fixed order is what rules out a lock cycle between writers (`postgres.py`); a SQLite
write holds the whole file, and takes its steps in the same order, so one reading of
this code holds for both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from active_memory.lessons import Author, Lesson, Mutation, PublishReceipt, Tombstone, utcnow
from active_memory.store.candidates import CANDIDATES_KEPT
from active_memory.store.dialect import Dialect, Tx
from active_memory.store.effectiveness import EFFECTIVENESS_COLUMNS, event_rows
from active_memory.store.failure_signatures import SeenFailures, record_signatures
from active_memory.store.models import MARK_PREFIX, ImportReport, PublishMark
from active_memory.store.planning import (
    Current,
    check_distinct_records,
    check_revert,
    chunks,
    create_count,
    next_number_after,
    plan_import,
    plan_publish,
    plan_revert,
    touched_ids,
)
from active_memory.store.review import ProposedMutation, proposal_rows
from active_memory.store.rows import LESSON_COLUMNS, ChangeSet, row_scope

Extras = tuple[list[tuple[str, int]], list[tuple[Any, ...]]]
"""(consumed candidate rows, new candidate rows) of a publish."""

_ADD_COUNTS = (
    ", ".join(
        f"{name} = lesson_effectiveness.{name} + excluded.{name}"
        for name in EFFECTIVENESS_COLUMNS.split(", ")[:4]
    )
    + ", last_run_id = excluded.last_run_id"
)


async def apply_publish(
    tx: Tx,
    d: Dialect,
    mutations: Sequence[Mutation],
    observations: Sequence[tuple[Any, ...]] = (),
    extras: Extras = ([], []),
    mark: PublishMark | None = None,
    proposals: Sequence[ProposedMutation] = (),
    failures: SeenFailures | None = None,
) -> PublishReceipt:
    """Write one publish (see `LessonStore.publish`) inside the transaction `tx`."""
    receipt = PublishReceipt()
    if mutations:
        new_ids = await allocate_ids(tx, create_count(mutations))  # the counter row first
        current = await current_rows(tx, d, touched_ids(mutations))
        rows, receipt = plan_publish(mutations, current, new_ids)
        await write_changes(tx, d, rows)
    if observations:
        await tx.executemany(
            f"INSERT INTO lesson_effectiveness (lesson_id, {EFFECTIVENESS_COLUMNS}) "
            "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM lessons WHERE id = ?) "
            f"ON CONFLICT (lesson_id) DO UPDATE SET {_ADD_COUNTS} "
            f"WHERE lesson_effectiveness.last_run_id {d.distinct} excluded.last_run_id",
            [(*row, row[0]) for row in observations],
        )
        # The dated history beside the counters (schema 7): one event per lesson and run.
        await tx.executemany(
            "INSERT INTO lesson_effectiveness_events (lesson_id, run_id, delivered, "
            "recurred, at) SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM lessons WHERE id = ?) "
            "ON CONFLICT (lesson_id, run_id) DO NOTHING",
            [(*row, row[0]) for row in event_rows(observations, utcnow().isoformat())],
        )
    consumed, candidates = extras
    if consumed:
        await tx.executemany(
            "DELETE FROM lesson_candidates WHERE lesson_id = ? AND seq <= ?", consumed
        )
    if candidates:
        # Only for a living lesson; a repeated postmortem of one run adds nothing.
        await tx.executemany(
            "INSERT INTO lesson_candidates (lesson_id, run_id, specialist, title, "
            "recommendation, associations, score, at) SELECT ?, ?, ?, ?, ?, ?, ?, ? "
            "WHERE EXISTS (SELECT 1 FROM lessons WHERE id = ? AND status <> 'retired') "
            "ON CONFLICT (lesson_id, run_id, specialist, title) DO NOTHING",
            [(*row, row[0]) for row in candidates],
        )
        await tx.executemany(
            "DELETE FROM lesson_candidates WHERE lesson_id = ? AND seq NOT IN "
            "(SELECT seq FROM lesson_candidates WHERE lesson_id = ? ORDER BY seq DESC LIMIT ?)",
            [(i, i, CANDIDATES_KEPT) for i in sorted({row[0] for row in candidates})],
        )
    if failures is not None:
        await record_signatures(tx, failures)
    if mark is not None:
        await tx.execute(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            f"{MARK_PREFIX}{mark.key}",
            mark.token,
        )
    if proposals:
        proposed = await insert_proposals(tx, d, proposals)
        receipt = receipt.model_copy(update={"proposed": proposed})
    return receipt


async def apply_revert(
    tx: Tx, d: Dialect, lesson_id: str, to_revision: int, author: Author
) -> None:
    """Make revision `to_revision` of `lesson_id` current again, as a new revision."""
    current = await current_rows(tx, d, [lesson_id])
    now = check_revert(lesson_id, to_revision, current.get(lesson_id))
    found = await tx.fetchone(
        "SELECT status, card FROM lesson_history WHERE lesson_id = ? AND revision = ?",
        lesson_id,
        to_revision,
    )
    rows = plan_revert(lesson_id, to_revision, now, (found[0], found[1]) if found else None, author)
    await write_changes(tx, d, rows)


async def apply_import(
    tx: Tx, d: Dialect, records: Iterable[Lesson | Tombstone], author: Author
) -> ImportReport:
    """Import `records` in chunks of `IMPORT_CHUNK` (a streamed file is never held whole)."""
    await tx.fetchval(  # the counter row first
        f"SELECT value FROM store_meta WHERE key = 'next_lesson_number'{d.lock_rows}"
    )
    seen: set[str] = set()
    report = ImportReport(added=[], updated=[], unchanged=[])
    for first, chunk in chunks(records):
        check_distinct_records(chunk, seen, first)
        current = await current_rows(tx, d, (r.id for r in chunk))
        await write_changes(tx, d, plan_import(chunk, current, author, report, first))
        next_number = next_number_after(chunk)
        if next_number is not None:  # allocated IDs stay clear of imported `L-<n>` IDs
            await tx.execute(
                f"UPDATE store_meta SET value = {d.greatest('CAST(value AS BIGINT)', '?')} "
                "WHERE key = 'next_lesson_number'",
                next_number,
            )
    return report


async def allocate_ids(tx: Tx, count: int) -> list[str]:
    """`count` new lesson IDs from the store's counter (its row stays locked)."""
    if count == 0:
        return []
    end = await tx.fetchval(
        "UPDATE store_meta SET value = value + ? WHERE key = 'next_lesson_number' RETURNING value",
        count,
    )
    first = int(end) - count
    return [f"L-{n}" for n in range(first, first + count)]


async def current_rows(tx: Tx, d: Dialect, ids: Iterable[str]) -> dict[str, Current]:
    """Lock and read each existing ID's row, in ID order (the fixed lock order)."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    where, param = d.among("id", wanted)
    rows = await tx.fetch(
        f"SELECT {LESSON_COLUMNS} FROM lessons WHERE {where} ORDER BY id{d.lock_rows}", param
    )
    at = d.location
    return {
        row[0]: Current(row[1], row[2], row_scope(row, at), (row[7], row[8], row[9]), at)
        for row in rows
    }


async def write_changes(tx: Tx, d: Dialect, changes: ChangeSet) -> None:
    """Write a change set inside the caller's transaction (its rows are locked by then)."""
    if changes.inserts:
        await tx.executemany(
            f"INSERT INTO lessons ({LESSON_COLUMNS}, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            changes.inserts,
        )
    if changes.updates:
        await tx.executemany(
            "UPDATE lessons SET revision = ?, status = ?, title = ?, recommendation = ?, "
            "associations = ?, canonical = ?, updated_at = ? WHERE id = ? AND revision = ?",
            changes.updates,
        )
    changed = [row[0] for row in changes.inserts] + [row[7] for row in changes.updates]
    if changed:
        await stamp_version(tx, d, changed)
    if changes.dropped_evidence:
        where, param = d.among(
            "lesson_id", [lesson_id for (lesson_id,) in changes.dropped_evidence]
        )
        await tx.execute(f"DELETE FROM lesson_evidence WHERE {where}", param)
    if changes.evidence:
        # A citation cited again moves to the end (a new seq): the latest fingerprint of
        # a range is its last row, also when the code went back to an earlier text.
        await tx.executemany(
            "INSERT INTO lesson_evidence (lesson_id, kind, value) VALUES (?, ?, ?) "
            f"ON CONFLICT (lesson_id, kind, value) DO UPDATE SET seq = {d.renumbered} "
            "WHERE excluded.kind = 'citation'",
            changes.evidence,
        )
    if changes.history:
        await tx.executemany(
            "INSERT INTO lesson_history (lesson_id, revision, previous_revision, action, "
            "status, scope, card, specialist, run_id, model, reason, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            changes.history,
        )


async def stamp_version(tx: Tx, d: Dialect, changed: Sequence[str]) -> None:
    """One new store version for this write, stamped on every lesson it changed (recall
    generations read "what changed since V" from it). On PostgreSQL the counter's row
    lock, held to commit, orders versions by commit (docs/store.md)."""
    version = await tx.fetchval(
        "UPDATE store_meta SET value = value + 1 WHERE key = 'change_version' RETURNING value"
    )
    where, param = d.among("id", changed)
    await tx.execute(f"UPDATE lessons SET change_version = ? WHERE {where}", int(version), param)


async def insert_proposals(tx: Tx, d: Dialect, mutations: Sequence[ProposedMutation]) -> list[int]:
    """Keep `mutations` as proposals inside the caller's write transaction (a publish's
    own, so a crash can never keep one without the other); their sequence numbers."""
    scopes: dict[str, tuple[str, str, str, str]] = {}
    adapted = sorted({m.id for m in mutations if m.action == "adapt"})
    if adapted:
        where, param = d.among("id", adapted)
        for row in await tx.fetch(
            "SELECT id, scope_kind, repository, graph_hash, node FROM lessons "
            f"WHERE {where} AND status <> 'retired'",
            param,
        ):
            scopes[row[0]] = (row[1], row[2], row[3], row[4])
    seqs: list[int] = []
    for values in proposal_rows(mutations, scopes, utcnow().isoformat()):
        seq = await tx.fetchval(
            "INSERT INTO lesson_proposals (state, action, lesson_id, base_revision, "
            "scope_kind, repository, graph_hash, node, mutation, run_id, specialist, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
            *values,
        )
        seqs.append(int(seq))
    return seqs
