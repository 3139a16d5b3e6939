"""The lesson store: every operation written once, over a backend's `Dialect`.

`SqliteStore` (sqlite.py) and `PostgresStore` (postgres.py) are this class with their
dialect; they add only how a store is opened. A caller that wraps a store (a test that
makes publishing fail, say) builds another `LessonStore` over its `dialect`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Self

from active_memory.lessons import (
    Author,
    Citation,
    HistoryEntry,
    Lesson,
    Mutation,
    PublishReceipt,
    Tombstone,
    utcnow,
)
from active_memory.store.candidates import (
    CANDIDATE_COLUMNS,
    Candidate,
    Consumed,
    candidate_rows,
    consumed_rows,
    row_to_candidate,
)
from active_memory.store.changes import (
    ScopeChanges,
    ScopeKey,
    changes_query,
    latest_query,
    page_query,
)
from active_memory.store.dialect import Dialect, Row, Tx
from active_memory.store.effectiveness import (
    DAY_POINT_SQL,
    EFFECTIVENESS_COLUMNS,
    EVENT_POINT_SQL,
    EVENTS_SINCE_KEY,
    PER_REPOSITORY_SQL,
    REPOSITORY_DAY_POINT_SQL,
    Effectiveness,
    EffectivenessHistory,
    RunObservation,
    observation_rows,
    row_to_effectiveness,
    row_to_point,
    since_iso,
)
from active_memory.store.failure_signatures import (
    EARLIER_SQL,
    WRITTEN_AGAINST_SQL,
    SeenFailures,
)
from active_memory.store.keeps import KEEP_COLUMNS, KeepLesson, apply_keep, merged_history
from active_memory.store.listing import TEXT_COLUMNS, LessonText, citations, holders, text_rows
from active_memory.store.models import (
    MARK_PREFIX,
    ImportReport,
    LessonQuery,
    LessonSummary,
    PublishMark,
)
from active_memory.store.planning import check_distinct_records, check_distinct_targets
from active_memory.store.queue_store import PostmortemQueue
from active_memory.store.review import (
    PROPOSAL_COLUMNS,
    Proposal,
    ProposedMutation,
    ReviewDecision,
    approved_mutation,
    check_decision,
    row_to_proposal,
)
from active_memory.store.rows import (
    HISTORY_COLUMNS,
    LESSON_COLUMNS,
    collector_paused,
    row_to_history,
    row_to_model,
)
from active_memory.store.writing import apply_import, apply_publish, apply_revert, insert_proposals

SUMMARY_COLUMNS = "id, revision, status, scope_kind, repository, graph_hash, node, title"
_VERSION_SQL = "SELECT value FROM store_meta WHERE key = 'change_version'"


class LessonStore:
    """Durable lessons with revision-checked, all-or-nothing publication; the postmortem
    queue (`queue`) and the review proposals kept beside them."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.queue = PostmortemQueue(dialect)

    @property
    def location(self) -> str:
        """Where the store lives, safe to print (no credentials)."""
        return self.dialect.location

    async def aclose(self) -> None:
        """Release connections; the store is unusable afterwards."""
        await self.dialect.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- reading -------------------------------------------------------------------

    async def get(self, lesson_id: str) -> Lesson | Tombstone | None:
        """One lesson or tombstone by ID, or None if the ID was never used."""
        # One statement (the row beside each of its evidence rows): one state, one trip.
        rows = await self.dialect.rows(
            f"SELECT {LESSON_COLUMNS}, e.kind, e.value FROM lessons LEFT JOIN lesson_evidence "
            "AS e ON e.lesson_id = lessons.id WHERE lessons.id = ? ORDER BY e.seq",
            lesson_id,
        )
        if not rows:
            return None
        evidence: dict[str, list[Any]] = {"run": [], "evidence": [], "citation": []}
        for *_, kind, value in rows:
            if kind is not None:
                evidence[kind].append(json.loads(value) if kind == "citation" else value)
        return row_to_model(tuple(rows[0])[:-2], evidence, self.location)

    def _select_sql(self, query: LessonQuery | None, columns: str) -> tuple[str, list[Any]]:
        """The SELECT of `columns` of the lessons `query` names, ordered by ID."""
        query = query or LessonQuery()
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("scope_kind", query.kind),
            ("repository", query.repository),
            ("graph_hash", query.graph_hash),
            ("node", query.node),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if query.ids is not None:
            clause, param = self.dialect.among("id", query.ids)
            clauses.append(clause)
            params.append(param)
        statuses = ["active"]
        if query.include_deferred:
            statuses.append("deferred")
        if query.include_retired:
            statuses.append("retired")
        clause, param = self.dialect.among("status", statuses)
        clauses.append(clause)
        params.append(param)
        return f"SELECT {columns} FROM lessons WHERE {' AND '.join(clauses)} ORDER BY id", params

    async def select(self, query: LessonQuery | None = None) -> list[Lesson | Tombstone]:
        """Lessons matching `query` (default: every living lesson), ordered by ID."""
        sql, params = self._select_sql(query, LESSON_COLUMNS)
        async with self.dialect.reading() as tx:
            return await self._hydrate(tx, await tx.fetch(sql, *params))

    async def summaries(self, query: LessonQuery | None = None) -> list[LessonSummary]:
        """What `select(query)` returns, as summaries only (no cards, no evidence)."""
        sql, params = self._select_sql(query, SUMMARY_COLUMNS)
        return [LessonSummary(*row) for row in await self.dialect.rows(sql, *params)]

    async def texts(self, query: LessonQuery | None = None) -> list[LessonText]:
        """What a text search of `select(query)` looks in, without building lessons."""
        sql, params = self._select_sql(query, TEXT_COLUMNS)
        return text_rows(await self.dialect.rows(sql, *params))

    async def holding(self, kind: str, value: str) -> set[str]:
        """The IDs of lessons whose evidence has `value` of `kind` (`run`, `evidence`)."""
        return await holders(self.dialect, kind, value)

    async def citations(self, ids: Sequence[str]) -> dict[str, list[Citation]]:
        """Each named lesson's citations, in the order recorded, without its card."""
        return await citations(self.dialect, ids)

    async def read_snapshot(
        self, *, repository: str | None, graph_hash: str | None, node: str | None
    ) -> list[Lesson]:
        """Active lessons for one recall scope, read in one consistent transaction.

        Repository lessons of `repository`; graph lessons of (`graph_hash`, `node`) that are
        unqualified or qualified by `repository`. A None argument leaves that part out.
        """
        parts, params = [], []
        if repository is not None:
            parts.append("(scope_kind = 'repository' AND repository = ? AND graph_hash = '')")
            params.append(repository)
        if graph_hash is not None and node is not None:
            parts.append(
                "(scope_kind = 'graph' AND graph_hash = ? AND node = ? AND repository IN ('', ?))"
            )
            params.extend([graph_hash, node, repository or ""])
        if not parts:
            return []
        sql = (
            f"SELECT {LESSON_COLUMNS} FROM lessons WHERE status = 'active' "
            f"AND ({' OR '.join(parts)}) ORDER BY id"
        )
        async with self.dialect.reading() as tx:
            lessons = await self._hydrate(tx, await tx.fetch(sql, *params))
        return [lesson for lesson in lessons if isinstance(lesson, Lesson)]

    async def version(self) -> int:
        """The store's change version: bumped by every write that changes lessons."""
        return int((await self.dialect.rows(_VERSION_SQL))[0][0])

    async def changes(
        self, scope: ScopeKey, since: int | None, limit: int | None = None
    ) -> ScopeChanges:
        """`scope`'s lessons changed since version `since` (any status), with the version
        they were read at and the scope's latest change, in one consistent read;
        `since=None`: its active lessons; at most `limit` rows when given (0: none)."""
        sql, params = changes_query(scope, since, self.dialect.name, limit)
        latest_sql, latest_params = latest_query(scope)
        async with self.dialect.reading() as tx:
            version = int(await tx.fetchval(_VERSION_SQL))
            latest = int(await tx.fetchval(latest_sql, *latest_params) or 0)
            rows = [] if limit == 0 else [tuple(row) for row in await tx.fetch(sql, *params)]
        return ScopeChanges(version, rows, full=since is None, latest=latest)

    async def scope_page(
        self, scope: ScopeKey, after: str | None, limit: int
    ) -> tuple[int, list[tuple[Any, ...]]]:
        """(store version, `scope`'s next `limit` active lessons by ID after `after`): a
        complete recall build reads a scope page by page, never whole."""
        sql, params = page_query(scope, after, limit, self.dialect.name)
        async with self.dialect.reading() as tx:
            version = int(await tx.fetchval(_VERSION_SQL))
            rows = [tuple(row) for row in await tx.fetch(sql, *params)]
        return version, rows

    async def history(self, lesson_id: str) -> list[HistoryEntry]:
        """Every recorded revision of a lesson, oldest first, each keep (`keep`) after
        the revision it kept."""
        async with self.dialect.reading() as tx:
            rows = await tx.fetch(
                f"SELECT {HISTORY_COLUMNS} FROM lesson_history WHERE lesson_id = ? ORDER BY seq",
                lesson_id,
            )
            keeps = await tx.fetch(
                f"SELECT {KEEP_COLUMNS} FROM lesson_keeps WHERE lesson_id = ? ORDER BY seq",
                lesson_id,
            )
        entries = [row_to_history(row, self.location) for row in rows]
        return merged_history(entries, [tuple(row) for row in keeps])

    async def _hydrate(self, tx: Tx, rows: Sequence[Row]) -> list[Lesson | Tombstone]:
        """Turn lesson rows into models, loading their evidence in one query."""
        living = [row[0] for row in rows if row[2] != "retired"]
        evidence: dict[str, dict[str, list[Any]]] = {}
        if living:
            where, param = self.dialect.among("lesson_id", living)
            for lesson_id, kind, value in await tx.fetch(
                f"SELECT lesson_id, kind, value FROM lesson_evidence WHERE {where} ORDER BY seq",
                param,
            ):
                slot = evidence.setdefault(lesson_id, {"run": [], "evidence": [], "citation": []})
                slot[kind].append(json.loads(value) if kind == "citation" else value)
        with collector_paused():
            return [row_to_model(row, evidence.get(row[0]), self.location) for row in rows]

    async def publish_mark(self, key: str) -> int | None:
        """The token of the last committed publish marked with `key`, or None."""
        rows = await self.dialect.rows(
            "SELECT value FROM store_meta WHERE key = ?", f"{MARK_PREFIX}{key}"
        )
        return int(rows[0][0]) if rows else None

    async def failure_signatures(self, repository: str, *, excluding: str) -> list[tuple[str, str]]:
        """`(family, error)` of the repository's signatures seen in a run other than
        `excluding` (see `failure_signatures.py`)."""
        rows = await self.dialect.rows(EARLIER_SQL, repository, excluding)
        return [(str(row[0]), str(row[1])) for row in rows]

    async def written_against(
        self, evidence_ids: Sequence[str]
    ) -> dict[str, frozenset[tuple[str, str]]]:
        """The `(family, normalised error)` pairs of each named `ev-tf-` evidence item a
        publish kept (schema 9); an item kept by none (cited before it) is absent."""
        wanted = sorted({i for i in evidence_ids if i.startswith("ev-tf-")})
        if not wanted:
            return {}
        where, param = self.dialect.among("evidence_id", wanted)
        found: dict[str, set[tuple[str, str]]] = {}
        for row in await self.dialect.rows(WRITTEN_AGAINST_SQL.format(where=where), param):
            found.setdefault(str(row[0]), set()).add((str(row[1]), str(row[2])))
        return {key: frozenset(pairs) for key, pairs in found.items()}

    async def candidates(self, lesson_ids: Sequence[str]) -> dict[str, list[Candidate]]:
        """The pending adaptation candidates of each named lesson that has any, oldest
        first (absent: none)."""
        where, param = self.dialect.among("lesson_id", sorted(set(lesson_ids)))
        rows = await self.dialect.rows(
            f"SELECT {CANDIDATE_COLUMNS} FROM lesson_candidates WHERE {where} ORDER BY seq", param
        )
        found: dict[str, list[Candidate]] = {}
        for row in rows:
            found.setdefault(row[1], []).append(row_to_candidate(tuple(row)))
        return found

    async def effectiveness(self, lesson_ids: Sequence[str]) -> dict[str, Effectiveness]:
        """The counters of each named lesson that has any (absent: never observed)."""
        where, param = self.dialect.among("lesson_id", sorted(set(lesson_ids)))
        rows = await self.dialect.rows(
            f"SELECT lesson_id, {EFFECTIVENESS_COLUMNS} FROM lesson_effectiveness WHERE {where}",
            param,
        )
        return {row[0]: row_to_effectiveness(tuple(row[1:])) for row in rows}

    async def effectiveness_history(
        self, lesson_id: str | None = None, *, repository: str | None = None
    ) -> EffectivenessHistory:
        """`lesson_id`'s dated effectiveness events, oldest first, or (None) the events
        of `repository`'s lessons (None: every lesson's) summed per UTC day; with the
        time the store began recording them."""
        async with self.dialect.reading() as tx:
            since = await tx.fetchval(
                "SELECT value FROM store_meta WHERE key = ?", EVENTS_SINCE_KEY
            )
            if lesson_id is not None:
                rows = await tx.fetch(EVENT_POINT_SQL.format(p="?"), lesson_id)
            elif repository is not None:
                rows = await tx.fetch(REPOSITORY_DAY_POINT_SQL.format(p="?"), repository)
            else:
                rows = await tx.fetch(DAY_POINT_SQL)
        return EffectivenessHistory(
            since=since_iso(since), points=[row_to_point(tuple(row)) for row in rows]
        )

    async def effectiveness_per_repository(self) -> dict[str, tuple[Effectiveness, int]]:
        """Per repository, its lessons' counters summed and how many lessons have any."""
        found: dict[str, tuple[Effectiveness, int]] = {}
        for row in await self.dialect.rows(PER_REPOSITORY_SQL):
            counts = tuple(int(v or 0) for v in row[1:5])
            found[str(row[0])] = (row_to_effectiveness((*counts, None)), int(row[5]))
        return found

    # --- writing -------------------------------------------------------------------

    async def publish(
        self,
        mutations: Sequence[Mutation],
        effectiveness: Sequence[RunObservation] = (),
        *,
        candidates: Sequence[Candidate] = (),
        consumed: Sequence[Consumed] = (),
        mark: PublishMark | None = None,
        proposals: Sequence[ProposedMutation] = (),
        failures: SeenFailures | None = None,
    ) -> PublishReceipt:
        """Apply every mutation, add every effectiveness observation (to the counters and
        as a dated event) and adaptation candidate, clear every consumed candidate, and
        keep every proposal (manual review; their numbers in `receipt.proposed`) and the
        run's failure signatures (`failures`), in one transaction, or none. With `mark`,
        the same transaction records it (see `publish_mark`).

        A candidate of an unknown or retired lesson is skipped, as is one its run and
        specialist already added; each lesson keeps its latest `CANDIDATES_KEPT`.
        `Consumed(lesson_id, through)` clears that lesson's candidates up to seq `through`.

        Each change is checked against the revision it was decided on; any mismatch (or a
        retired or unknown ID) raises `RevisionConflict` naming every such lesson, and
        nothing is written. An observation of an unknown ID is skipped; one whose run is
        the lesson's `last_run_id` already is not counted again. Never interrupted halfway
        by cancellation.
        """
        check_distinct_targets(mutations)
        observations = observation_rows(effectiveness)
        extras = (consumed_rows(consumed), candidate_rows(candidates, utcnow().isoformat()))
        if not (mutations or observations or any(extras) or proposals or failures):
            return PublishReceipt()
        d = self.dialect
        return await d.write(
            lambda tx: apply_publish(
                tx, d, mutations, observations, extras, mark, proposals, failures
            )
        )

    async def revert(self, lesson_id: str, to_revision: int, author: Author) -> Lesson | Tombstone:
        """Make revision `to_revision`'s card and status current again, as a new revision."""
        d = self.dialect
        await d.write(lambda tx: apply_revert(tx, d, lesson_id, to_revision, author))
        reverted = await self.get(lesson_id)
        assert reverted is not None
        return reverted

    async def keep(self, keep: KeepLesson) -> None:
        """Confirm a lesson against its code without a new revision: its new citations
        added, the keep in its history (store/keeps.py); `RevisionConflict` when it is
        no longer at `keep.base_revision` or is retired."""
        d = self.dialect
        await d.write(lambda tx: apply_keep(tx, d, keep))

    async def import_lessons(
        self, records: Iterable[Lesson | Tombstone], author: Author
    ) -> ImportReport:
        """Add or update lessons from an export, all or nothing; never recreate a tombstone.

        `records` may be a one-pass iterable (a file streamed as it is read): it is
        consumed in chunks inside the one transaction, so an import's memory does not grow
        with the file, except where the dialect may run a write again (PostgreSQL, after a
        deadlock): there it is held whole.
        """
        d = self.dialect
        if d.replays_writes:
            records = list(records)
        if isinstance(records, Sequence):
            check_distinct_records(records)  # before the lock, when it can be
        return await d.write(lambda tx: apply_import(tx, d, records, author))

    async def propose(self, mutations: Sequence[ProposedMutation]) -> list[int]:
        """Keep creations and adaptations as proposals awaiting review (manual review),
        all or none; never visible to recall. An adaptation of a retired or unknown
        lesson is a `RevisionConflict`. Returns the proposals' sequence numbers."""
        if not mutations:
            return []
        d = self.dialect
        return await d.write(lambda tx: insert_proposals(tx, d, mutations))

    async def proposals(self, state: str | None = None) -> list[Proposal]:
        """Proposals in `state` (proposed, approved, rejected; None: all), oldest first."""
        where, params = ("WHERE state = ? ", (state,)) if state is not None else ("", ())
        rows = await self.dialect.rows(
            f"SELECT {PROPOSAL_COLUMNS} FROM lesson_proposals {where}ORDER BY seq", *params
        )
        return [row_to_proposal(tuple(row)) for row in rows]

    async def decide_proposal(self, seq: int, decision: ReviewDecision) -> Proposal:
        """Approve or reject proposal `seq`, in one transaction. Approving publishes its
        mutation (the decision's card, when edited) with the revision check; a lesson
        changed since is a `RevisionConflict` and the proposal stays proposed. A decided
        or unknown proposal is `ProposalNotPending`; a rejection needs a reason."""
        d = self.dialect

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

    async def backup(self, destination: Path) -> None:
        """Write a consistent copy of the store while others use it."""
        await self.dialect.backup(destination)
