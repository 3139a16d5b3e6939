"""One publish per postmortem and refresh-and-reconcile (SPEC §7): a lesson changed by
another writer is read again and decided again within the deadline, or the conflict is
reported; a newer revision is never overwritten; concurrent postmortems lose no update."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from orchestrator_support import (
    PERSON,
    FakeSessions,
    config,
    decisions,
    evidence_ids,
    repo_lessons,
    run_record,
    seed,
    snapshot,
    supplied,
)

from active_memory.errors import Conflict, RevisionConflict, StoreBusy
from active_memory.lessons import (
    AdaptLesson,
    Card,
    Lesson,
    Mutation,
    PublishReceipt,
    RetireLesson,
    Tombstone,
)
from active_memory.orchestrator import PostmortemLimits, run_postmortem
from active_memory.specialists.providers.base import Request
from active_memory.store.candidates import Candidate, Consumed
from active_memory.store.effectiveness import RunObservation
from active_memory.store.lesson_store import LessonStore
from active_memory.store.sqlite import SqliteStore


def card(title: str) -> dict[str, Any]:
    return {
        "title": title,
        "recommendation": "After editing `api/schema.json` run `make api-client` and commit both.",
        "associations": {"folders": ["api"]},
    }


async def other_writer_adapts(store: SqliteStore, lesson_id: str) -> None:
    """Another process adapts a lesson (a person's edit, another postmortem)."""
    current = await store.get(lesson_id)
    assert isinstance(current, Lesson)
    await store.publish(
        [
            AdaptLesson(
                id=lesson_id,
                base_revision=current.revision,
                card=Card.model_validate(card("Edited by someone else")),
                author=PERSON,
            )
        ]
    )


async def graph_proposal(request: Request) -> Any:
    return {
        "lessons": [
            {
                "title": "Read the schema before the generated client",
                "recommendation": "Open `api/schema.json` first; `make api-client` rebuilds it.",
                "evidence": evidence_ids(request),
                "why_recurs": "the worker timed out twice reading generated code",
                "node": "worker",
            }
        ]
    }


@pytest.mark.asyncio
async def test_a_conflict_is_refreshed_and_decided_again(
    tmp_path: Path, store: SqliteStore, store_path: Path
) -> None:
    await seed(store, repo_lessons(2))
    record = run_record(tmp_path, ["L-1", "L-2"])
    other = await SqliteStore.open(store_path)
    seen: list[list[tuple[str, int]]] = []

    async def adapt(request: Request) -> Any:
        seen.append([(x["id"], x["revision"]) for x in supplied(request)])
        if len(seen) == 1:  # while we think, another writer changes L-1
            await other_writer_adapts(other, "L-1")
        return decisions(request, "adapt", lesson=card("Adapted by the postmortem"))

    try:
        sessions = FakeSessions({"repository_maintenance": adapt})
        report = await run_postmortem(
            record, config(), store, sessions=sessions, journal_dir=tmp_path
        )
    finally:
        await other.aclose()
    assert seen == [[("L-1", 1), ("L-2", 1)], [("L-1", 2)]]  # asked again about r2 only
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "reconciled" and entry.rereconciled == ["L-1"]
    assert report.conflicts == [] and report.ok
    assert {(m.id, m.revision) for m in report.mutations} == {("L-1", 3), ("L-2", 2)}
    history = await store.history("L-1")
    assert [(h.revision, h.author.specialist) for h in history] == [
        (1, "person:test"),
        (2, "person:test"),
        (3, "repository_maintenance"),
    ]


@pytest.mark.asyncio
async def test_an_unresolved_conflict_is_reported_and_the_others_still_publish(
    tmp_path: Path, store: SqliteStore, store_path: Path
) -> None:
    await seed(store, repo_lessons(2))
    record = run_record(tmp_path, ["L-1", "L-2"], timeouts=True)
    other = await SqliteStore.open(store_path)

    async def adapt(request: Request) -> Any:
        await other_writer_adapts(other, "L-1")
        return decisions(request, "adapt", lesson=card("Adapted by the postmortem"))

    try:
        sessions = FakeSessions(
            {"repository_maintenance": adapt, "graph_discovery": graph_proposal}
        )
        report = await run_postmortem(
            record,
            config(),
            store,
            sessions=sessions,
            limits=PostmortemLimits(reconcile_rounds=0),
            journal_dir=tmp_path,
        )
    finally:
        await other.aclose()
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "failed" and "revision conflict" in (entry.reason or "")
    assert [(c.id, c.expected_revision, c.current_revision) for c in report.conflicts] == [
        ("L-1", 1, 2)
    ]
    assert report.published.created == 1 and report.published.adapted == 0
    l1, l2 = await store.get("L-1"), await store.get("L-2")
    assert isinstance(l1, Lesson) and l1.title == "Edited by someone else"  # never overwritten
    assert l2 is not None and l2.revision == 1  # nothing of the failed specialist
    assert not report.ok


@pytest.mark.asyncio
async def test_a_lesson_retired_meanwhile_needs_no_new_decision(
    tmp_path: Path, store: SqliteStore, store_path: Path
) -> None:
    await seed(store, repo_lessons(2))
    record = run_record(tmp_path, ["L-1", "L-2"])
    other = await SqliteStore.open(store_path)
    asked = 0

    async def adapt(request: Request) -> Any:
        nonlocal asked
        asked += 1
        await other.publish([RetireLesson(id="L-1", base_revision=1, author=PERSON)])
        return decisions(request, "adapt", lesson=card("Adapted by the postmortem"))

    try:
        sessions = FakeSessions({"repository_maintenance": adapt})
        report = await run_postmortem(
            record, config(), store, sessions=sessions, journal_dir=tmp_path
        )
    finally:
        await other.aclose()
    assert asked == 1
    assert report.published.adapted == 1 and report.conflicts == []
    assert isinstance(await store.get("L-1"), Tombstone)
    l2 = await store.get("L-2")
    assert l2 is not None and l2.revision == 2


@pytest.mark.asyncio
async def test_two_concurrent_postmortems_lose_no_update(
    tmp_path: Path, store: SqliteStore, store_path: Path
) -> None:
    await seed(store, repo_lessons(3))
    ids = ["L-1", "L-2", "L-3"]
    records = [
        run_record(tmp_path, ids, run_id=run, name=f"{run}.json") for run in ("run-1", "run-2")
    ]
    first_answers = anyio.Event()
    waiting = 0
    asked: dict[str, list[list[tuple[str, int]]]] = {"run-1": [], "run-2": []}

    def adapter(run: str) -> Any:
        async def adapt(request: Request) -> Any:
            nonlocal waiting
            asked[run].append([(x["id"], x["revision"]) for x in supplied(request)])
            if len(asked[run]) == 1:  # both decide on revision 1 before either publishes
                waiting += 1
                if waiting == 2:
                    first_answers.set()
                await first_answers.wait()
            return decisions(request, "adapt", lesson=card(f"Adapted in {run}"))

        return adapt

    reports = {}
    second = await SqliteStore.open(store_path)
    try:

        async def postmortem(run: str, index: int, target: SqliteStore) -> None:
            sessions = FakeSessions({"repository_maintenance": adapter(run)})
            reports[run] = await run_postmortem(
                records[index], config(), target, sessions=sessions, journal_dir=tmp_path / run
            )

        async with anyio.create_task_group() as group:
            group.start_soon(postmortem, "run-1", 0, store)
            group.start_soon(postmortem, "run-2", 1, second)
    finally:
        await second.aclose()
    assert all(r.ok for r in reports.values())
    later = [
        run for run, r in reports.items() if r.specialists["repository_maintenance"].rereconciled
    ]
    assert len(later) == 1
    (late,) = later
    assert asked[late][1] == [(i, 2) for i in ids]  # re-reconciled on the winner's revision
    for lesson_id in ids:
        history = await store.history(lesson_id)
        assert [h.revision for h in history] == [1, 2, 3]
        assert {h.author.run_id for h in history[1:]} == {"run-1", "run-2"}
        final = await store.get(lesson_id)
        assert isinstance(final, Lesson) and final.title == f"Adapted in {late}"


class FailingStore(LessonStore):
    """A store whose publish fails after the reads (e.g. held by another writer)."""

    def __init__(self, inner: SqliteStore) -> None:
        super().__init__(inner.dialect)
        self.publishes: list[Sequence[Mutation]] = []

    async def publish(
        self,
        mutations: Sequence[Mutation],
        effectiveness: Sequence[RunObservation] = (),
        *,
        candidates: Sequence[Candidate] = (),
        consumed: Sequence[Consumed] = (),
        mark: object = None,
        proposals: object = (),
        failures: object = None,
    ) -> PublishReceipt:
        self.publishes.append(mutations)
        raise StoreBusy(self.location, 0.1)


@pytest.mark.asyncio
async def test_a_failed_publish_is_reported_and_writes_nothing(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(2))
    record = run_record(tmp_path, ["L-1"], timeouts=True)
    failing = FailingStore(store)

    async def adapt(request: Request) -> Any:
        return decisions(request, "adapt", lesson=card("Adapted by the postmortem"))

    sessions = FakeSessions({"repository_maintenance": adapt, "graph_discovery": graph_proposal})
    before = await snapshot(store)
    report = await run_postmortem(
        record,
        config(),
        failing,
        sessions=sessions,
        journal_dir=tmp_path,
    )
    (published,) = failing.publishes  # everything went in one publish call
    assert sorted(m.action for m in published) == ["adapt", "create"]
    assert report.publish_error is not None and "StoreBusy" in report.publish_error
    assert report.published.adapted == 0 and not report.ok
    assert "publish_error" in report.to_json()
    assert await snapshot(store) == before


class ConflictingStore(FailingStore):
    """A store that refuses every publish over a lesson nobody decided on."""

    async def publish(
        self,
        mutations: Sequence[Mutation],
        effectiveness: Sequence[RunObservation] = (),
        *,
        candidates: Sequence[Candidate] = (),
        consumed: Sequence[Consumed] = (),
        mark: object = None,
        proposals: object = (),
        failures: object = None,
    ) -> PublishReceipt:
        self.publishes.append(mutations)
        raise RevisionConflict([Conflict("L-999", 1, 2, "active")])


@pytest.mark.asyncio
async def test_a_refusal_no_decision_caused_is_reported_without_retrying(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(1))
    record = run_record(tmp_path, ["L-1"])
    refusing = ConflictingStore(store)

    async def adapt(request: Request) -> Any:
        return decisions(request, "adapt", lesson=card("Adapted by the postmortem"))

    sessions = FakeSessions({"repository_maintenance": adapt})
    report = await run_postmortem(
        record, config(), refusing, sessions=sessions, journal_dir=tmp_path
    )
    assert len(refusing.publishes) == 1
    assert report.publish_error is not None and "L-999" in report.publish_error
    assert report.published.adapted == 0


@pytest.mark.asyncio
async def test_a_canonical_retired_meanwhile_is_decided_again(
    tmp_path: Path, store: SqliteStore, store_path: Path
) -> None:
    await seed(store, repo_lessons(3))
    record = run_record(tmp_path, ["L-2"])
    other = await SqliteStore.open(store_path)
    asked: list[list[tuple[str, int]]] = []

    async def consolidate(request: Request) -> Any:
        asked.append([(x["id"], x["revision"]) for x in supplied(request)])
        if len(asked) == 1:  # L-2 is a paraphrase of L-1, which another writer retires now
            await other.publish([RetireLesson(id="L-1", base_revision=1, author=PERSON)])
            target = "L-1"
        else:
            target = "L-3"
        return {
            "decisions": [{"id": "L-2", "revision": 1, "action": "retire", "canonical": target}]
        }

    try:
        sessions = FakeSessions({"repository_maintenance": consolidate})
        report = await run_postmortem(
            record, config(), store, sessions=sessions, journal_dir=tmp_path
        )
    finally:
        await other.aclose()
    assert asked == [[("L-2", 1)], [("L-2", 1)]]
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "reconciled" and entry.rereconciled == ["L-2"]
    l2 = await store.get("L-2")
    assert isinstance(l2, Tombstone) and l2.canonical == "L-3"
