"""The postmortem queue kept in the lesson store, on each backend (store/queue.py)."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest
from conftest import Backend, create, drop_effectiveness_events

from active_memory.errors import QueueEntryNotFound, UsageError
from active_memory.store import LessonStore, SessionEnd, open_store
from active_memory.store.queue import MAX_CLAIMS, QueueEntry
from active_memory.store.queue_store import PostmortemQueue
from active_memory.store.sqlite_schema import SCHEMA_VERSION

LEASE = 30.0


def end(session: str = "s-1", *, event: str = "SessionEnd", size: int | None = 100,
        cwd: str = "/work/a", transcript: str = "/t/s-1.jsonl") -> SessionEnd:  # fmt: skip
    return SessionEnd(harness="claude", session_id=session, transcript=transcript, cwd=cwd,
                      event=event, model="claude-sonnet-5", size=size)  # fmt: skip


def q(store: LessonStore) -> PostmortemQueue:
    return store.queue


async def claim_one(queue: PostmortemQueue, owner: str = "w1", **kw: Any) -> QueueEntry:
    claimed = await queue.claim(owner, limit=1, lease=kw.get("lease", LEASE),
                                settle=kw.get("settle", 0.0))  # fmt: skip
    assert len(claimed) == 1, claimed
    return claimed[0]


@pytest.mark.asyncio
async def test_a_duplicate_end_of_one_session_is_one_entry(store: Any) -> None:
    first = await q(store).enqueue(end())
    again = await q(store).enqueue(end(cwd="/work/b", size=150))
    assert again.id == first.id and again.ends == 2
    assert (again.cwd, again.size, again.state) == ("/work/b", 150, "pending")
    assert [e.id for e in await q(store).entries()] == [first.id]


@pytest.mark.asyncio
async def test_a_turn_end_is_claimable_only_after_the_settle_delay(store: Any) -> None:
    turn = await q(store).enqueue(end(event="Stop"))
    assert not turn.final
    assert await q(store).claim("w1", limit=5, lease=LEASE, settle=3600) == []
    # The session's real end makes it claimable at once, whatever the settle delay.
    await q(store).enqueue(end(event="SessionEnd"))
    claimed = await q(store).claim("w1", limit=5, lease=LEASE, settle=3600)
    assert [e.session_id for e in claimed] == ["s-1"]


@pytest.mark.asyncio
async def test_a_settled_turn_end_is_claimable(store: Any) -> None:
    await q(store).enqueue(end(event="Stop"))
    await anyio.sleep(0.3)
    assert len(await q(store).claim("w1", limit=5, lease=LEASE, settle=0.2)) == 1


@pytest.mark.asyncio
async def test_a_claimed_entry_is_not_claimed_again_until_its_lease_expires(store: Any) -> None:
    await q(store).enqueue(end())
    first = await claim_one(q(store), "w1", lease=0.3)
    assert (first.state, first.attempts, first.lease_owner) == ("running", 1, "w1")
    assert await q(store).claim("w2", limit=5, lease=LEASE, settle=0) == []
    await anyio.sleep(0.5)
    second = await claim_one(q(store), "w2")
    assert (second.id, second.attempts, second.lease_owner) == (first.id, 2, "w2")
    # The first worker lost its lease: it can neither renew nor finish.
    assert not await q(store).renew(first.id, "w1", LEASE)
    assert not await q(store).finish(first.id, "w1", "done", result={"run_id": "x"})
    assert await q(store).renew(first.id, "w2", LEASE)
    assert await q(store).finish(first.id, "w2", "done", result={"run_id": "claude-s-1"})
    (done,) = await q(store).entries()
    assert (done.state, done.result, done.lease_owner) == ("done", {"run_id": "claude-s-1"}, None)


@pytest.mark.asyncio
async def test_an_entry_claimed_too_often_fails_with_its_reason(store: Any) -> None:
    await q(store).enqueue(end())
    for attempt in range(1, MAX_CLAIMS + 1):
        entry = await claim_one(q(store), f"w{attempt}", lease=0.05)
        assert entry.attempts == attempt
        await anyio.sleep(0.1)
    assert await q(store).claim("w9", limit=1, lease=LEASE, settle=0) == []
    (failed,) = await q(store).entries()
    assert failed.state == "failed"
    assert f"claimed {MAX_CLAIMS} times without finishing" in failed.reason


@pytest.mark.asyncio
async def test_a_done_entry_is_reopened_only_when_the_session_grew(store: Any) -> None:
    await q(store).enqueue(end(size=100))
    entry = await claim_one(q(store))
    assert entry.processed_size == 100
    assert await q(store).finish(entry.id, "w1", "done", result={"run_id": "r"})
    same = await q(store).enqueue(end(size=100))
    assert same.state == "done"
    grown = await q(store).enqueue(end(size=180))
    assert (grown.state, grown.attempts) == ("pending", 0)
    assert "grew" in grown.reason


@pytest.mark.asyncio
async def test_an_end_during_the_postmortem_sends_the_done_entry_back_to_pending(
    store: Any,
) -> None:
    await q(store).enqueue(end(size=100))
    entry = await claim_one(q(store))
    await q(store).enqueue(end(size=250))  # another turn ended meanwhile
    assert await q(store).finish(entry.id, "w1", "done", result={"run_id": "r"})
    (after,) = await q(store).entries()
    assert (after.state, after.size) == ("pending", 250)
    again = await claim_one(q(store))
    assert again.processed_size == 250


@pytest.mark.asyncio
async def test_a_released_entry_is_pending_again_and_the_attempt_uncounted(store: Any) -> None:
    await q(store).enqueue(end())
    entry = await claim_one(q(store))
    assert await q(store).finish(entry.id, "w1", "released", reason="worker stopped")
    (after,) = await q(store).entries()
    assert (after.state, after.attempts, after.reason) == ("pending", 0, "worker stopped")


@pytest.mark.asyncio
async def test_one_repository_scope_is_held_by_one_worker_at_a_time(store: Any) -> None:
    await q(store).enqueue(end("a"))
    await q(store).enqueue(end("b"))
    await q(store).enqueue(end("c"))
    a, b, c = await q(store).claim("w1", limit=3, lease=LEASE, settle=0)
    assert await q(store).bind_scope(a.id, "w1", "repo:github.com/acme/api")
    assert not await q(store).bind_scope(b.id, "w1", "repo:github.com/acme/api")
    assert await q(store).bind_scope(c.id, "w1", "repo:github.com/acme/web")
    waiting = {e.session_id: e for e in await q(store).entries(["pending"])}["b"]
    assert waiting.attempts == 0 and "repo:github.com/acme/api" in waiting.reason
    # While the scope is held, the waiting entry is not handed out again.
    await anyio.sleep(0.01)
    assert await q(store).claim("w2", limit=3, lease=LEASE, settle=0) == []


@pytest.mark.asyncio
async def test_retry_and_drop_refuse_unknown_and_running_entries(store: Any) -> None:
    with pytest.raises(QueueEntryNotFound) as unknown:
        await q(store).retry(999)
    assert unknown.value.exit_code == 2
    with pytest.raises(QueueEntryNotFound):
        await q(store).drop(999)
    await q(store).enqueue(end())
    entry = await claim_one(q(store))
    with pytest.raises(UsageError, match="is running"):
        await q(store).drop(entry.id)
    assert await q(store).finish(entry.id, "w1", "failed", reason="bad transcript")
    retried = await q(store).retry(entry.id)
    assert (retried.state, retried.attempts) == ("pending", 0)
    dropped = await q(store).drop(entry.id)
    assert dropped.id == entry.id
    assert await q(store).entries() == []


@pytest.mark.asyncio
async def test_concurrent_claims_by_many_handles_never_share_an_entry(backend: Backend) -> None:
    handles = [await backend.open() for _ in range(4)]
    try:
        for index in range(60):
            await q(handles[0]).enqueue(end(f"s-{index}"))
        taken: list[tuple[str, int]] = []

        async def drain(owner: str, store: Any) -> None:
            while claimed := await q(store).claim(owner, limit=3, lease=LEASE, settle=0):
                taken.extend((owner, e.id) for e in claimed)
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as group:
            for number, handle in enumerate(handles):
                group.start_soon(drain, f"w{number}", handle)
        ids = [entry_id for _, entry_id in taken]
        assert sorted(ids) == sorted(set(ids)) and len(ids) == 60
        owners = {e.id: e.lease_owner for e in await q(handles[0]).entries()}
        assert owners == {entry_id: owner for owner, entry_id in taken}
    finally:
        for handle in handles:
            await handle.aclose()


@pytest.mark.asyncio
async def test_a_version_4_store_migrates_to_the_queue_keeping_its_lessons(
    backend: Backend,
) -> None:
    async with open_store(backend.location) as store:
        await store.publish([create()])
    await drop_effectiveness_events(backend)  # version 7
    await backend.sql("DROP TABLE lesson_proposals")  # version 6, after the queue
    await backend.sql("DROP TABLE postmortem_queue")
    if backend.name == "sqlite":
        await backend.sql("PRAGMA user_version = 4")
    else:
        await backend.sql("UPDATE active_memory_schema SET version = 4")
    async with open_store(backend.location) as store:
        assert [x.id for x in await store.select()] == ["L-1"]
        assert (await q(store).enqueue(end())).id == 1
    rows = await backend.sql(
        "PRAGMA user_version"
        if backend.name == "sqlite"
        else "SELECT version FROM active_memory_schema"
    )
    assert rows[0][0] == SCHEMA_VERSION == 12  # queue 5, review 6, events 7, failures 8,
    # cited 9, keeps 10, hosts 11, recall keys 12 (SQLite; a step without a statement on
    # PostgreSQL)


@pytest.mark.asyncio
async def test_a_worker_claims_only_the_entries_of_its_own_machine(store: Any) -> None:
    from dataclasses import replace

    await q(store).enqueue(replace(end("here"), host="laptop"))
    await q(store).enqueue(replace(end("there"), host="build-01"))
    await q(store).enqueue(end("unplaced"))  # from before entries named their machine
    claimed = await q(store).claim("w1", limit=5, lease=LEASE, settle=0.0, host="laptop")
    assert sorted(e.session_id for e in claimed) == ["here", "unplaced"]
    (there,) = await q(store).claim("w2", limit=5, lease=LEASE, settle=0.0, host="build-01")
    assert (there.session_id, there.host) == ("there", "build-01")


@pytest.mark.asyncio
async def test_a_worker_never_claims_again_what_it_skips(store: Any) -> None:
    first = await q(store).enqueue(end("a"))
    await q(store).enqueue(end("b"))
    claimed = await q(store).claim("w1", limit=5, lease=LEASE, settle=0.0, skip={first.id})
    assert [e.session_id for e in claimed] == ["b"]
