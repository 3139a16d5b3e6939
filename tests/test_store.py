"""Behaviour of every lesson store backend (runs on SQLite and on PostgreSQL)."""

from __future__ import annotations

import sqlite3

import anyio
import pytest
from conftest import AUTHOR, GRAPH_HASH, NAMESPACE, Backend, card, create

from active_memory.errors import (
    InvalidMutation,
    LessonNotFound,
    RevisionConflict,
    UsageError,
)
from active_memory.lessons import (
    AdaptLesson,
    Citation,
    CreateLesson,
    DeferLesson,
    Evidence,
    GraphScope,
    Lesson,
    RepositoryScope,
    RetireLesson,
    Tombstone,
)
from active_memory.store import LessonQuery, LessonStore

try:
    from asyncpg import PostgresError as _PostgresError
except ImportError:  # the postgres extra is optional; then only SQLite runs
    _PostgresError = sqlite3.Error  # type: ignore[assignment,misc]

# What a raw statement refused by the database raises, on either backend.
RAW_ERRORS = (sqlite3.Error, _PostgresError)


async def _adapt(store: LessonStore, lesson_id: str, base: int, title: str) -> None:
    await store.publish(
        [AdaptLesson(id=lesson_id, base_revision=base, card=card(title), author=AUTHOR)]
    )


@pytest.mark.asyncio
async def test_create_assigns_ids_and_revision_one(store: LessonStore) -> None:
    receipt = await store.publish([create("first"), create("second")])
    assert receipt.created == [("L-1", 1), ("L-2", 1)]
    lesson = await store.get("L-2")
    assert isinstance(lesson, Lesson) and lesson.title == "second" and lesson.revision == 1


@pytest.mark.asyncio
async def test_adapt_on_the_read_revision_bumps_it(store: LessonStore) -> None:
    await store.publish([create()])
    await _adapt(store, "L-1", 1, "changed")
    lesson = await store.get("L-1")
    assert isinstance(lesson, Lesson) and (lesson.revision, lesson.title) == (2, "changed")


@pytest.mark.asyncio
async def test_stale_revision_conflicts_and_writes_nothing(store: LessonStore) -> None:
    await store.publish([create("one"), create("two")])
    await _adapt(store, "L-1", 1, "moved on")
    with pytest.raises(RevisionConflict) as caught:
        await store.publish(
            [
                AdaptLesson(id="L-2", base_revision=1, card=card("fresh"), author=AUTHOR),
                AdaptLesson(id="L-1", base_revision=1, card=card("stale"), author=AUTHOR),
                create("three"),
            ]
        )
    [conflict] = caught.value.conflicts
    assert (conflict.lesson_id, conflict.expected_revision, conflict.current_revision) == (
        "L-1",
        1,
        2,
    )
    assert "L-1 (decided on r1, is at r2)" in str(caught.value)
    untouched = await store.get("L-2")
    assert isinstance(untouched, Lesson) and untouched.title == "two" and untouched.revision == 1
    assert await store.get("L-3") is None
    assert len(await store.history("L-2")) == 1


@pytest.mark.asyncio
async def test_conflict_lists_every_changed_and_unknown_lesson(store: LessonStore) -> None:
    await store.publish([create("one"), create("two")])
    await _adapt(store, "L-1", 1, "a")
    await _adapt(store, "L-2", 1, "b")
    with pytest.raises(RevisionConflict) as caught:
        await store.publish(
            [
                DeferLesson(id="L-1", base_revision=1, author=AUTHOR),
                RetireLesson(id="L-2", base_revision=1, author=AUTHOR),
                DeferLesson(id="L-99", base_revision=4, author=AUTHOR),
            ]
        )
    found = {(c.lesson_id, c.current_revision) for c in caught.value.conflicts}
    assert found == {("L-1", 2), ("L-2", 2), ("L-99", None)}


@pytest.mark.asyncio
async def test_retire_leaves_a_tombstone_without_content(store: LessonStore) -> None:
    await store.publish(
        [
            CreateLesson(
                scope=RepositoryScope(repository=NAMESPACE),
                card=card(),
                evidence=Evidence(run_ids=["run-1"], citations=[Citation(path="api/schema.json")]),
                author=AUTHOR,
            )
        ]
    )
    receipt = await store.publish([RetireLesson(id="L-1", base_revision=1, author=AUTHOR)])
    assert receipt.retired == [("L-1", 2)]
    tombstone = await store.get("L-1")
    assert isinstance(tombstone, Tombstone) and tombstone.revision == 2
    assert "title" not in tombstone.model_dump()
    assert await store.select() == []
    assert [t.id for t in await store.select(LessonQuery(include_retired=True))] == ["L-1"]


@pytest.mark.asyncio
async def test_stale_mutation_never_resurrects_a_tombstone(store: LessonStore) -> None:
    await store.publish([create()])
    await store.publish([RetireLesson(id="L-1", base_revision=1, author=AUTHOR)])
    for base in (1, 2):  # decided on the living lesson, or even on the tombstone's revision
        with pytest.raises(RevisionConflict, match="was retired at r2"):
            await _adapt(store, "L-1", base, "back from the dead")
    assert isinstance(await store.get("L-1"), Tombstone)


@pytest.mark.asyncio
async def test_import_never_recreates_a_tombstone(store: LessonStore) -> None:
    await store.publish([create()])
    await store.publish([RetireLesson(id="L-1", base_revision=1, author=AUTHOR)])
    old = Lesson(
        id="L-1",
        revision=5,
        scope=RepositoryScope(repository=NAMESPACE),
        title="old copy",
        recommendation="Run it.",
    )
    report = await store.import_lessons([old], AUTHOR)
    assert report.added == [] and report.unchanged == [("L-1", "retired at r2; not recreated")]
    assert isinstance(await store.get("L-1"), Tombstone)


@pytest.mark.asyncio
async def test_history_records_who_changed_what(store: LessonStore) -> None:
    await store.publish([create("one")])
    await _adapt(store, "L-1", 1, "two")
    await store.publish([DeferLesson(id="L-1", base_revision=2, author=AUTHOR, reason="stale")])
    history = await store.history("L-1")
    assert [(h.revision, h.previous_revision, h.action, h.status) for h in history] == [
        (1, None, "create", "active"),
        (2, 1, "adapt", "active"),
        (3, 2, "defer", "deferred"),
    ]
    assert history[2].reason == "stale" and history[0].author == AUTHOR
    assert history[1].card is not None and history[1].card.title == "two"


@pytest.mark.asyncio
async def test_history_is_append_only(store: LessonStore, backend: Backend) -> None:
    await store.publish([create()])
    for statement in (
        "UPDATE lesson_history SET reason = 'rewritten'",
        "DELETE FROM lesson_history",
    ):
        with pytest.raises(RAW_ERRORS, match="append-only"):
            await backend.sql(statement)
    assert [h.reason for h in await store.history("L-1")] == [""]


@pytest.mark.asyncio
async def test_revert_restores_an_earlier_card_as_a_new_revision(store: LessonStore) -> None:
    await store.publish([create("original")])
    await _adapt(store, "L-1", 1, "worse")
    reverted = await store.revert("L-1", 1, AUTHOR)
    assert isinstance(reverted, Lesson) and (reverted.revision, reverted.title) == (3, "original")
    last = (await store.history("L-1"))[-1]
    assert (last.action, last.revision, last.previous_revision, last.reason) == (
        "revert",
        3,
        2,
        "revert to r1",
    )


@pytest.mark.asyncio
async def test_revert_undoes_a_retirement(store: LessonStore) -> None:
    await store.publish([create("keep me")])
    await store.publish([RetireLesson(id="L-1", base_revision=1, author=AUTHOR)])
    revived = await store.revert("L-1", 1, AUTHOR)
    assert isinstance(revived, Lesson) and revived.title == "keep me" and revived.revision == 3
    assert [lesson.id for lesson in await store.select()] == ["L-1"]


@pytest.mark.asyncio
async def test_revert_to_a_retired_revision_retires_again(store: LessonStore) -> None:
    await store.publish([create()])
    await store.publish([RetireLesson(id="L-1", base_revision=1, author=AUTHOR)])
    await store.revert("L-1", 1, AUTHOR)
    again = await store.revert("L-1", 2, AUTHOR)
    assert isinstance(again, Tombstone) and again.revision == 4


@pytest.mark.asyncio
async def test_revert_refuses_current_future_and_unknown(store: LessonStore) -> None:
    await store.publish([create()])
    with pytest.raises(UsageError, match="earlier revision"):
        await store.revert("L-1", 1, AUTHOR)
    with pytest.raises(LessonNotFound):
        await store.revert("L-9", 1, AUTHOR)


@pytest.mark.asyncio
async def test_defer_hides_from_recall_and_adapt_reactivates(store: LessonStore) -> None:
    await store.publish([create()])
    await store.publish([DeferLesson(id="L-1", base_revision=1, author=AUTHOR)])
    assert await store.read_snapshot(repository=NAMESPACE, graph_hash=None, node=None) == []
    await _adapt(store, "L-1", 2, "better")
    [lesson] = await store.read_snapshot(repository=NAMESPACE, graph_hash=None, node=None)
    assert lesson.status == "active" and lesson.revision == 3


@pytest.mark.asyncio
async def test_snapshot_reads_exactly_the_recall_scope(store: LessonStore) -> None:
    other_hash = "b" * 64
    await store.publish(
        [
            create("repo"),
            create("other repo", RepositoryScope(repository="repo:github.com/acme/web")),
            create("graph any repo", GraphScope(graph_hash=GRAPH_HASH, node="worker")),
            create(
                "graph this repo",
                GraphScope(graph_hash=GRAPH_HASH, node="worker", repository=NAMESPACE),
            ),
            create(
                "graph other repo",
                GraphScope(graph_hash=GRAPH_HASH, node="worker", repository="repo:other"),
            ),
            create("other node", GraphScope(graph_hash=GRAPH_HASH, node="review_repair")),
            create("other graph", GraphScope(graph_hash=other_hash, node="worker")),
        ]
    )
    found = await store.read_snapshot(repository=NAMESPACE, graph_hash=GRAPH_HASH, node="worker")
    assert sorted(lesson.title for lesson in found) == ["graph any repo", "graph this repo", "repo"]


@pytest.mark.asyncio
async def test_evidence_accumulates_on_adapt_and_is_dropped_on_retire(
    store: LessonStore, backend: Backend
) -> None:
    await store.publish(
        [
            CreateLesson(
                scope=RepositoryScope(repository=NAMESPACE),
                card=card(),
                evidence=Evidence(run_ids=["run-1"], evidence_ids=["ev-a"]),
                author=AUTHOR,
            )
        ]
    )
    await store.publish(
        [
            AdaptLesson(
                id="L-1",
                base_revision=1,
                card=card("v2"),
                evidence=Evidence(run_ids=["run-2", "run-1"]),
                author=AUTHOR,
            )
        ]
    )
    lesson = await store.get("L-1")
    assert isinstance(lesson, Lesson)
    assert lesson.evidence.run_ids == ["run-1", "run-2"]
    assert lesson.evidence.evidence_ids == ["ev-a"]
    await store.publish([RetireLesson(id="L-1", base_revision=2, author=AUTHOR)])
    assert await backend.sql("SELECT count(*) FROM lesson_evidence") == [(0,)]


@pytest.mark.asyncio
async def test_retire_into_a_canonical_of_the_same_scope(store: LessonStore) -> None:
    await store.publish([create("canonical"), create("paraphrase")])
    await store.publish([RetireLesson(id="L-2", base_revision=1, canonical="L-1", author=AUTHOR)])
    tombstone = await store.get("L-2")
    assert isinstance(tombstone, Tombstone) and tombstone.canonical == "L-1"
    assert (await store.history("L-2"))[-1].reason == "absorbed by L-1"


@pytest.mark.asyncio
async def test_canonical_must_be_living_and_of_the_same_scope(store: LessonStore) -> None:
    await store.publish(
        [
            create("a"),
            create("b"),
            create("graph", GraphScope(graph_hash=GRAPH_HASH, node="worker")),
        ]
    )
    with pytest.raises(InvalidMutation, match="another scope"):
        await store.publish(
            [RetireLesson(id="L-1", base_revision=1, canonical="L-3", author=AUTHOR)]
        )
    with pytest.raises(InvalidMutation, match="not a living lesson"):
        await store.publish(
            [
                RetireLesson(id="L-1", base_revision=1, canonical="L-2", author=AUTHOR),
                RetireLesson(id="L-2", base_revision=1, author=AUTHOR),
            ]
        )
    assert {lesson.id for lesson in await store.select()} == {"L-1", "L-2", "L-3"}


@pytest.mark.asyncio
async def test_two_mutations_of_one_lesson_in_one_publish_are_refused(
    store: LessonStore,
) -> None:
    await store.publish([create()])
    with pytest.raises(InvalidMutation, match="more than one mutation"):
        await store.publish(
            [
                DeferLesson(id="L-1", base_revision=1, author=AUTHOR),
                RetireLesson(id="L-1", base_revision=1, author=AUTHOR),
            ]
        )


@pytest.mark.asyncio
async def test_import_is_all_or_nothing(store: LessonStore) -> None:
    await store.publish([create()])
    fine = Lesson(
        id="L-40",
        revision=3,
        scope=RepositoryScope(repository=NAMESPACE),
        title="imported",
        recommendation="Run it.",
    )
    clash = Lesson(
        id="L-1",
        revision=9,
        scope=RepositoryScope(repository="repo:elsewhere"),
        title="same id, other scope",
        recommendation="Run it.",
    )
    with pytest.raises(InvalidMutation, match="another scope"):
        await store.import_lessons([fine, clash], AUTHOR)
    assert await store.get("L-40") is None


@pytest.mark.asyncio
async def test_import_updates_older_and_keeps_newer(store: LessonStore) -> None:
    await store.publish([create("mine"), create("also mine")])
    await _adapt(store, "L-2", 1, "newer here")
    scope = RepositoryScope(repository=NAMESPACE)
    report = await store.import_lessons(
        [
            Lesson(id="L-1", revision=4, scope=scope, title="theirs", recommendation="Do it."),
            Lesson(id="L-2", revision=2, scope=scope, title="older", recommendation="Do it."),
            Lesson(id="L-77", revision=1, scope=scope, title="new", recommendation="Do it."),
        ],
        AUTHOR,
    )
    assert report.updated == [("L-1", 4)] and report.added == [("L-77", 1)]
    assert report.unchanged == [("L-2", "store already has r2")]
    receipt = await store.publish([create("after import")])
    assert receipt.created == [("L-78", 1)]  # allocation stays clear of imported IDs


@pytest.mark.asyncio
async def test_a_deadline_never_interrupts_a_publish_halfway(store: LessonStore) -> None:
    with anyio.move_on_after(0):
        await store.publish([create(f"lesson {n}") for n in range(200)])
    assert len(await store.select()) == 200
    assert [len(await store.history(f"L-{n}")) for n in (1, 100, 200)] == [1, 1, 1]
