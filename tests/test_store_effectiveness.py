"""Effectiveness counters beside lessons, on every backend; migration from version 1."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import AUTHOR, Backend, card, create, drop_change_versions

from active_memory.errors import InvalidMutation, RevisionConflict
from active_memory.lessons import AdaptLesson, Lesson
from active_memory.store import open_store
from active_memory.store.effectiveness import Effectiveness, RunObservation
from active_memory.store.sqlite_schema import SCHEMA_VERSION


def seen(lesson_id: str, run_id: str, *, delivered: bool, recurred: bool) -> RunObservation:
    return RunObservation(lesson_id=lesson_id, run_id=run_id, delivered=delivered,
                          recurred=recurred)  # fmt: skip


@pytest.mark.asyncio
async def test_a_delivered_lesson_that_prevented_recurrence_scores_apart_from_one_that_did_not(
    store: Any,
) -> None:
    await store.publish([create("Regenerate the client"), create("Run make lint first")])
    # L-1 was delivered in three runs; its timeout came back in one of them, and in both
    # runs that touched its files without delivering it. L-2's failure came back every time.
    history = [
        [seen("L-1", "run-1", delivered=True, recurred=False),
         seen("L-2", "run-1", delivered=True, recurred=True)],
        [seen("L-1", "run-2", delivered=False, recurred=True),
         seen("L-2", "run-2", delivered=True, recurred=True)],
        [seen("L-1", "run-3", delivered=True, recurred=True)],
        [seen("L-1", "run-4", delivered=True, recurred=False)],
        [seen("L-1", "run-5", delivered=False, recurred=True)],
    ]  # fmt: skip
    for observations in history:
        await store.publish([], observations)
    counters = await store.effectiveness(["L-1", "L-2", "L-3"])
    assert counters == {
        "L-1": Effectiveness(runs_delivered=3, recurred_when_delivered=1,
                             runs_touched_not_delivered=2, recurred_when_not_delivered=2,
                             last_run_id="run-5"),
        "L-2": Effectiveness(runs_delivered=2, recurred_when_delivered=2,
                             runs_touched_not_delivered=0, recurred_when_not_delivered=0,
                             last_run_id="run-2"),
    }  # fmt: skip
    assert counters["L-1"].recurrence_when_delivered == pytest.approx(1 / 3)
    assert counters["L-1"].recurrence_when_not_delivered == 1.0
    assert counters["L-2"].recurrence_when_delivered == 1.0
    assert counters["L-2"].recurrence_when_not_delivered is None


@pytest.mark.asyncio
async def test_a_repeated_postmortem_of_one_run_counts_once(store: Any) -> None:
    await store.publish([create()])
    for _ in range(2):
        await store.publish([], [seen("L-1", "run-1", delivered=True, recurred=True)])
    assert (await store.effectiveness(["L-1"]))["L-1"].runs_delivered == 1


@pytest.mark.asyncio
async def test_counters_are_written_with_the_mutations_or_not_at_all(store: Any) -> None:
    await store.publish([create()])
    await store.publish([AdaptLesson(id="L-1", base_revision=1, card=card("v2"), author=AUTHOR)])
    stale = AdaptLesson(id="L-1", base_revision=1, card=card("v3"), author=AUTHOR)
    with pytest.raises(RevisionConflict):
        await store.publish([stale], [seen("L-1", "run-9", delivered=True, recurred=False)])
    assert await store.effectiveness(["L-1"]) == {}
    fresh = AdaptLesson(id="L-1", base_revision=2, card=card("v3"), author=AUTHOR)
    await store.publish([fresh], [seen("L-1", "run-9", delivered=True, recurred=False)])
    assert (await store.effectiveness(["L-1"]))["L-1"].runs_delivered == 1


@pytest.mark.asyncio
async def test_an_observation_of_an_unknown_lesson_is_skipped(store: Any) -> None:
    await store.publish([create()])
    await store.publish([], [seen("L-1", "run-1", delivered=True, recurred=False),
                             seen("L-77", "run-1", delivered=True, recurred=False)])  # fmt: skip
    assert set(await store.effectiveness(["L-1", "L-77"])) == {"L-1"}


@pytest.mark.asyncio
async def test_two_observations_of_one_lesson_in_one_publish_are_refused(store: Any) -> None:
    await store.publish([create()])
    with pytest.raises(InvalidMutation, match="observed twice"):
        twice = [
            seen("L-1", "run-1", delivered=True, recurred=False),
            seen("L-1", "run-1", delivered=False, recurred=False),
        ]
        await store.publish([], twice)
    assert await store.effectiveness(["L-1"]) == {}


async def _downgrade_to_version_1(backend: Backend) -> None:
    """Make the store what version 1 was: the same tables without the counters."""
    await backend.sql("DROP TABLE postmortem_queue")  # version 5
    await drop_change_versions(backend)
    await backend.sql("DROP TABLE lesson_candidates")
    await backend.sql("DROP TABLE lesson_effectiveness")
    if backend.name == "sqlite":
        await backend.sql("PRAGMA user_version = 1")
    else:
        await backend.sql("UPDATE active_memory_schema SET version = 1")


async def _version(backend: Backend) -> int:
    if backend.name == "sqlite":
        rows = await backend.sql("PRAGMA user_version")
    else:
        rows = await backend.sql("SELECT version FROM active_memory_schema")
    return int(rows[0][0])


@pytest.mark.asyncio
async def test_a_version_1_store_with_lessons_migrates_to_the_current_version_keeping_them(
    backend: Backend,
) -> None:
    async with open_store(backend.location) as store:
        await store.publish([create("Regenerate the client"), create("Run make lint first")])
        await store.publish([AdaptLesson(id="L-1", base_revision=1, card=card("Regenerate v2"),
                                         author=AUTHOR)])  # fmt: skip
    await _downgrade_to_version_1(backend)
    assert await _version(backend) == 1
    async with open_store(backend.location) as store:
        assert await _version(backend) == SCHEMA_VERSION
        lessons = [lesson for lesson in await store.select() if isinstance(lesson, Lesson)]
        assert [(lesson.id, lesson.revision, lesson.title) for lesson in lessons] == [
            ("L-1", 2, "Regenerate v2"),
            ("L-2", 1, "Run make lint first"),
        ]
        assert len(await store.history("L-1")) == 2
        assert await store.effectiveness(["L-1", "L-2"]) == {}
        await store.publish([], [seen("L-2", "run-1", delivered=False, recurred=True)])
        assert (await store.effectiveness(["L-2"]))["L-2"].recurred_when_not_delivered == 1
