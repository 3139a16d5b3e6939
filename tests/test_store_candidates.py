"""Adaptation candidates beside lessons, on every backend; migration from version 2."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import AUTHOR, Backend, create, drop_change_versions

from active_memory.errors import RevisionConflict
from active_memory.lessons import AdaptLesson, Associations, Lesson, RetireLesson
from active_memory.store import open_store
from active_memory.store.candidates import CANDIDATES_KEPT, Candidate, Consumed
from active_memory.store.sqlite_schema import SCHEMA_VERSION


def proposal(lesson_id: str, run_id: str, title: str = "Regenerate the API client") -> Candidate:
    return Candidate(
        lesson_id=lesson_id,
        run_id=run_id,
        specialist="repository_discovery",
        title=title,
        recommendation="Run make api-client after editing api/schema.json.",
        associations=Associations(files=["api/schema.json"]),
        score=81.5,
    )


@pytest.mark.asyncio
async def test_a_candidate_is_kept_with_its_proposal_until_a_decision_consumes_it(
    store: Any,
) -> None:
    await store.publish([create(), create("Run make lint first")])
    await store.publish([], candidates=[proposal("L-1", "run-1")])
    found = await store.candidates(["L-1", "L-2"])
    assert list(found) == ["L-1"]
    (kept,) = found["L-1"]
    assert (kept.run_id, kept.title, kept.score) == ("run-1", "Regenerate the API client", 81.5)
    assert kept.associations.files == ["api/schema.json"]
    assert kept.seq is not None and kept.at
    # A candidate added after the decision was shown its list survives the consumption.
    await store.publish([], candidates=[proposal("L-1", "run-2")])
    await store.publish([], consumed=[Consumed(lesson_id="L-1", through=kept.seq)])
    assert [c.run_id for c in (await store.candidates(["L-1"]))["L-1"]] == ["run-2"]


@pytest.mark.asyncio
async def test_each_lesson_keeps_only_its_latest_candidates(store: Any) -> None:
    await store.publish([create()])
    for number in range(CANDIDATES_KEPT + 2):
        await store.publish([], candidates=[proposal("L-1", f"run-{number}")])
    kept = (await store.candidates(["L-1"]))["L-1"]
    assert [c.run_id for c in kept] == [f"run-{n}" for n in range(2, CANDIDATES_KEPT + 2)]


@pytest.mark.asyncio
async def test_a_repeated_postmortem_or_a_retired_lesson_adds_no_candidate(store: Any) -> None:
    await store.publish([create(), create("Run make lint first")])
    await store.publish([RetireLesson(id="L-2", base_revision=1, reason="obsolete",
                                      author=AUTHOR)])  # fmt: skip
    for _ in range(2):
        await store.publish([], candidates=[proposal("L-1", "run-1"), proposal("L-2", "run-1"),
                                            proposal("L-9", "run-1")])  # fmt: skip
    found = await store.candidates(["L-1", "L-2", "L-9"])
    assert list(found) == ["L-1"] and len(found["L-1"]) == 1


@pytest.mark.asyncio
async def test_candidates_are_written_with_the_mutations_or_not_at_all(store: Any) -> None:
    await store.publish([create()])
    stale = AdaptLesson(id="L-1", base_revision=7, card=create().card, author=AUTHOR)
    with pytest.raises(RevisionConflict):
        await store.publish([stale], candidates=[proposal("L-1", "run-1")])
    assert await store.candidates(["L-1"]) == {}


async def _downgrade_to_version_2(backend: Backend) -> None:
    await backend.sql("DROP TABLE postmortem_queue")  # version 5
    await drop_change_versions(backend)
    await backend.sql("DROP TABLE lesson_candidates")
    if backend.name == "sqlite":
        await backend.sql("PRAGMA user_version = 2")
    else:
        await backend.sql("UPDATE active_memory_schema SET version = 2")


async def _version(backend: Backend) -> int:
    if backend.name == "sqlite":
        rows = await backend.sql("PRAGMA user_version")
    else:
        rows = await backend.sql("SELECT version FROM active_memory_schema")
    return int(rows[0][0])


@pytest.mark.asyncio
async def test_a_version_2_store_with_data_migrates_to_version_3_keeping_it(
    backend: Backend,
) -> None:
    from active_memory.store.effectiveness import RunObservation

    seen = RunObservation(lesson_id="L-1", run_id="run-1", delivered=True, recurred=False)
    async with open_store(backend.location) as store:
        await store.publish([create(), create("Run make lint first")], [seen])
    await _downgrade_to_version_2(backend)
    assert await _version(backend) == 2
    async with open_store(backend.location) as store:
        assert await _version(backend) == SCHEMA_VERSION
        lessons = [x for x in await store.select() if isinstance(x, Lesson)]
        assert [x.id for x in lessons] == ["L-1", "L-2"]
        assert (await store.effectiveness(["L-1"]))["L-1"].runs_delivered == 1
        assert await store.candidates(["L-1"]) == {}
        await store.publish([], candidates=[proposal("L-2", "run-2")])
        assert len((await store.candidates(["L-2"]))["L-2"]) == 1
