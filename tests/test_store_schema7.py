"""Schema 7 on both backends: dated effectiveness events written with the counters, the
migration from version 6 (counters kept, no invented history), and proposals kept in the
publish's own transaction (a crash never keeps one without the other)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conftest import AUTHOR, Backend, card, create, drop_effectiveness_events

from active_memory.lessons import AdaptLesson, CreateLesson, Lesson
from active_memory.store import open_store
from active_memory.store.effectiveness import Effectiveness, RunObservation
from active_memory.store.models import PublishMark
from active_memory.store.sqlite_schema import SCHEMA_VERSION


def seen(lesson_id: str, run_id: str, *, delivered: bool, recurred: bool) -> RunObservation:
    return RunObservation(lesson_id=lesson_id, run_id=run_id, delivered=delivered,
                          recurred=recurred)  # fmt: skip


@pytest.mark.asyncio
async def test_each_counted_observation_is_a_dated_event_beside_the_counters(store: Any) -> None:
    before = datetime.now(UTC) - timedelta(seconds=2)
    await store.publish([create("Regenerate the client"), create("Run make lint first")])
    await store.publish([], [seen("L-1", "run-1", delivered=True, recurred=False),
                             seen("L-2", "run-1", delivered=False, recurred=True)])  # fmt: skip
    await store.publish([], [seen("L-1", "run-2", delivered=True, recurred=True)])
    await store.publish([], [seen("L-1", "run-2", delivered=True, recurred=True)])  # again
    await store.publish([], [seen("L-9", "run-3", delivered=True, recurred=True)])  # unknown
    history = await store.effectiveness_history("L-1")
    assert [(p.run_id, p.delivered, p.recurred_when_delivered, p.touched_not_delivered)
            for p in history.points] == [("run-1", 1, 0, 0), ("run-2", 1, 1, 0)]  # fmt: skip
    assert all(datetime.fromisoformat(p.at) >= before for p in history.points)
    assert history.since is not None and datetime.fromisoformat(history.since) >= before
    [other] = (await store.effectiveness_history("L-2")).points
    assert (other.delivered, other.touched_not_delivered, other.recurred_when_not_delivered) == (
        0, 1, 1,
    )  # fmt: skip
    assert (await store.effectiveness_history("L-9")).points == []
    # The events add up to the counters (the repeated run counted once in both).
    counters = (await store.effectiveness(["L-1"]))["L-1"]
    points = history.points
    assert counters.runs_delivered == sum(p.delivered for p in points) == 2
    assert counters.recurred_when_delivered == sum(p.recurred_when_delivered for p in points)
    [day] = (await store.effectiveness_history()).points
    assert day.run_id is None and day.at == history.points[0].at[:10]
    assert (day.delivered, day.recurred_when_delivered, day.touched_not_delivered,
            day.recurred_when_not_delivered) == (2, 1, 1, 1)  # fmt: skip


@pytest.mark.asyncio
async def test_a_version_6_store_migrates_keeping_its_counters_without_inventing_history(
    backend: Backend,
) -> None:
    async with open_store(backend.location) as store:
        await store.publish([create("Regenerate the client")])
        await store.publish([], [seen("L-1", "run-1", delivered=True, recurred=True)])
    await drop_effectiveness_events(backend)
    if backend.name == "sqlite":
        await backend.sql("PRAGMA user_version = 6")
    else:
        await backend.sql("UPDATE active_memory_schema SET version = 6")
    migrated_at = datetime.now(UTC).replace(microsecond=0)
    async with open_store(backend.location) as store:
        rows = await backend.sql(
            "PRAGMA user_version"
            if backend.name == "sqlite"
            else "SELECT version FROM active_memory_schema"
        )
        assert rows[0][0] == SCHEMA_VERSION == 12
        assert (await store.effectiveness(["L-1"]))["L-1"] == Effectiveness(
            runs_delivered=1, recurred_when_delivered=1, last_run_id="run-1"
        )
        history = await store.effectiveness_history("L-1")
        assert history.points == []  # run-1 has no date: none is made up
        assert history.since is not None
        assert datetime.fromisoformat(history.since) >= migrated_at - timedelta(seconds=1)
        await store.publish([], [seen("L-1", "run-2", delivered=True, recurred=False)])
        [point] = (await store.effectiveness_history("L-1")).points
        assert point.run_id == "run-2"
        assert (await store.effectiveness(["L-1"]))["L-1"].runs_delivered == 2


class InjectedCrash(Exception):
    """Stands for the process dying inside the publish, after its lesson writes."""


@pytest.mark.asyncio
async def test_a_crash_between_the_publish_and_its_proposals_keeps_neither(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.store import writing

    real = writing.insert_proposals
    async with open_store(backend.location) as store:
        await store.publish([create("Existing lesson")])
        published = [create("Published now")]
        adapt = AdaptLesson(id="L-1", base_revision=1, card=card("Adapted"), author=AUTHOR)
        proposed: list[CreateLesson | AdaptLesson] = [create("Proposed lesson"), adapt]
        mark = PublishMark(key="run:run-1", token=7)
        observed = [seen("L-1", "run-1", delivered=True, recurred=False)]

        async def crash(*args: Any, **kwargs: Any) -> list[int]:
            await real(*args, **kwargs)  # the proposals' rows are written, then the crash
            raise InjectedCrash

        monkeypatch.setattr(writing, "insert_proposals", crash)
        with pytest.raises(InjectedCrash):
            await store.publish(published, observed, mark=mark, proposals=proposed)
        # Nothing of that publish is in the store: no lesson, counter, event, mark, proposal.
        assert [x.id for x in await store.select()] == ["L-1"]
        assert await store.effectiveness(["L-1"]) == {}
        assert (await store.effectiveness_history("L-1")).points == []
        assert await store.publish_mark("run:run-1") is None
        assert await store.proposals() == []
        # The postmortem run again after the crash publishes and proposes once.
        monkeypatch.setattr(writing, "insert_proposals", real)
        receipt = await store.publish(published, observed, mark=mark, proposals=proposed)
        assert receipt.created == [("L-2", 1)] and len(receipt.proposed) == 2
        kept = await store.proposals()
        assert [p.seq for p in kept] == receipt.proposed
        assert [p.mutation.card.title for p in kept] == ["Proposed lesson", "Adapted"]
        assert await store.publish_mark("run:run-1") == 7
        lesson = await store.get("L-1")
        assert isinstance(lesson, Lesson) and lesson.revision == 1  # proposed, not adapted


@pytest.mark.asyncio
async def test_a_proposal_of_a_retired_lesson_refuses_the_whole_publish(store: Any) -> None:
    from active_memory.errors import RevisionConflict
    from active_memory.lessons import RetireLesson

    await store.publish([create("Old")])
    await store.publish([RetireLesson(id="L-1", base_revision=1, author=AUTHOR, reason="gone")])
    adapt = AdaptLesson(id="L-1", base_revision=1, card=card("Adapted"), author=AUTHOR)
    with pytest.raises(RevisionConflict):
        await store.publish([create("Would be published")], proposals=[adapt])
    assert await store.get("L-2") is None
    assert await store.proposals() == []
