"""The worker in-process: import, postmortem, poisoned entries, one scope at a time, drain;
and the `worker` / `queue` commands' output and exit codes. Specialists answer through
`FunctionSession`s (the real provider interface)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import Backend
from orchestrator_support import FakeSessions, hang
from queue_support import costly_transcript, quiet_transcript

from active_memory.cli import main
from active_memory.config import RuntimeConfig
from active_memory.orchestrator import SessionFactory
from active_memory.specialists.providers.base import Request
from active_memory.store import SessionEnd, open_store
from active_memory.store.queue import QueueEntry
from active_memory.worker import Worker, WorkerOptions
from active_memory.worker.without_lane import NOTHING_TO_LEARN


def session_end(session: str, transcript: Path, cwd: str = "/w") -> SessionEnd:
    return SessionEnd(harness="claude", session_id=session, transcript=str(transcript), cwd=cwd,
                      event="SessionEnd", size=transcript.stat().st_size if transcript.exists()
                      else None)  # fmt: skip


async def enqueue(location: str, *ends: SessionEnd) -> None:
    async with open_store(location) as store:
        for item in ends:
            await store.queue.enqueue(item)


async def run_worker(
    location: str, sessions: Any = None, **options: Any
) -> tuple[Worker, list[Any]]:
    worker = Worker(location, WorkerOptions(**{"once": True, "poll": 0.05, **options}),
                    sessions=sessions)  # fmt: skip
    async with open_store(location) as store:
        processed = await worker.run(store.queue)
    return worker, processed


async def states(location: str) -> dict[str, tuple[str, str]]:
    async with open_store(location) as store:
        return {e.session_id: (e.state, e.reason) for e in await store.queue.entries()}


def expire_leases(location: str) -> None:
    """Every lease runs out now (as after a stall). Called in a thread: a blocking write on
    the event loop's thread would wait on the worker's transaction, which waits on the loop."""
    with sqlite3.connect(location, timeout=30) as raw:
        raw.execute("UPDATE postmortem_queue SET lease_expires = 0")


def fake(factory: FakeSessions) -> Any:
    def build(config: RuntimeConfig, checkout: Path | None) -> SessionFactory:
        return factory

    return build


@pytest.mark.asyncio
async def test_a_poisoned_entry_fails_alone_with_its_reason(
    backend: Backend, tmp_path: Path
) -> None:
    good = [quiet_transcript(tmp_path / f"g{i}.jsonl", f"g{i}", f"/w/g{i}") for i in range(3)]
    poisoned = tmp_path / "poison.jsonl"
    poisoned.write_text("this is not a transcript\n")
    gone = quiet_transcript(tmp_path / "gone.jsonl", "gone", "/w/gone")
    ended = session_end("gone", gone)  # it existed when the session ended, then went
    gone.unlink()
    await enqueue(backend.location, *(session_end(p.stem, p) for p in good),
                  session_end("poison", poisoned), ended)  # fmt: skip
    _, processed = await run_worker(backend.location, fake(FakeSessions()), concurrency=2)
    found = await states(backend.location)
    assert {s: state for s, (state, _) in found.items()} == {
        "g0": "done", "g1": "done", "g2": "done", "poison": "failed", "gone": "failed",
    }  # fmt: skip
    assert "poison.jsonl: no run in the claude session log" in found["poison"][1]
    assert f"{gone}: no such file" in found["gone"][1]
    assert sorted(p.session_id for p in processed) == sorted(found)


@pytest.mark.asyncio
async def test_each_entry_runs_its_postmortem_and_keeps_a_summary(
    backend: Backend, tmp_path: Path
) -> None:
    transcript = costly_transcript(tmp_path / "c.jsonl", "c-1", "/w/c")
    await enqueue(backend.location, session_end("c-1", transcript))
    sessions = FakeSessions()
    _, processed = await run_worker(backend.location, fake(sessions))
    (item,) = processed
    assert item.state == "done" and item.result is not None
    assert item.result["run_id"] == "claude-c-1"
    assert item.result["specialists"]["graph_discovery"] == "reconciled"
    assert "graph_discovery" in sessions.opened  # the costly session reached a model


@pytest.mark.asyncio
async def test_one_postmortem_per_repository_scope_at_a_time(
    store_path: Path, tmp_path: Path
) -> None:
    location = str(store_path)
    ends = [session_end(f"s{i}", costly_transcript(tmp_path / f"s{i}.jsonl", f"s{i}",
                                                   f"/w/{'same' if i < 3 else f'other{i}'}"))
            for i in range(5)]  # fmt: skip
    await enqueue(location, *ends)
    seen: list[list[str]] = []

    async def watch(request: Request) -> Any:
        # Which scopes are held right now, by running entries (read beside the worker).
        with sqlite3.connect(location) as raw:
            held = [r[0] for r in raw.execute(
                "SELECT scope FROM postmortem_queue WHERE state = 'running' AND holds_scope = 1"
            )]  # fmt: skip
        seen.append(held)
        await anyio.sleep(0.05)
        return {"lessons": []}

    sessions = FakeSessions({"graph_discovery": watch, "repository_discovery": watch})
    _, processed = await run_worker(location, fake(sessions), concurrency=4)
    assert sorted(p.session_id for p in processed if p.state == "done") == [
        f"s{i}" for i in range(5)
    ]
    assert seen and all(len(held) == len(set(held)) for held in seen)
    assert max(len(held) for held in seen) > 1  # different scopes did run side by side
    waited = [p for p in processed if p.state == "pending"]
    assert waited and all("in another postmortem" in p.reason for p in waited)


@pytest.mark.asyncio
async def test_a_drain_cancels_running_postmortems_after_the_grace_and_requeues_them(
    backend: Backend, tmp_path: Path
) -> None:
    transcript = costly_transcript(tmp_path / "h.jsonl", "h-1", "/w/h")
    await enqueue(backend.location, session_end("h-1", transcript))
    asked = anyio.Event()

    async def ask_then_hang(request: Request) -> Any:
        asked.set()
        return await hang(request)

    sessions = FakeSessions({"graph_discovery": ask_then_hang, "repository_discovery": hang})
    worker = Worker(backend.location, WorkerOptions(grace=0.3, poll=0.05),
                    sessions=fake(sessions))  # fmt: skip
    async with open_store(backend.location) as store:
        async with anyio.create_task_group() as group:

            async def stop_when_asked() -> None:
                await asked.wait()
                worker.stop()

            group.start_soon(stop_when_asked)
            with anyio.fail_after(10):
                processed = await worker.run(store.queue)
        (entry,) = await store.queue.entries()
        assert await store.select() == []  # nothing published
    assert [p.state for p in processed] == ["pending"]
    assert (entry.state, entry.attempts, entry.lease_owner) == ("pending", 0, None)
    assert "nothing published" in entry.reason


def test_queue_command_lists_entries_and_retries_or_drops_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "q.sqlite3")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a transcript\n")
    anyio.run(enqueue, store, session_end("bad", bad))
    assert main(["worker", "--once", "--store", store, "--lane", "api", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"failed": 1}
    assert main(["queue", "--store", store, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["counts"] == {"pending": 0, "running": 0, "done": 0, "failed": 1}
    (entry,) = listed["entries"]
    assert entry["state"] == "failed" and "no run in the claude session log" in entry["reason"]
    assert main(["queue", "--store", store]) == 0
    assert "failed" in capsys.readouterr().out
    assert main(["queue", "retry", str(entry["id"]), "--store", store]) == 0
    assert "pending again" in capsys.readouterr().out
    assert main(["queue", "--store", store, "--state", "pending", "--json"]) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)["entries"]] == [entry["id"]]
    assert main(["queue", "drop", str(entry["id"]), "--store", store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["action"] == "drop"
    assert main(["queue", "drop", str(entry["id"]), "--store", store]) == 2
    assert f"no queue entry {entry['id']}" in capsys.readouterr().err
    assert main(["queue", "retry", "77", "--store", store]) == 2


def test_queue_command_on_a_missing_store_is_an_empty_queue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["queue", "--store", str(tmp_path / "none.sqlite3"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == []
    assert not (tmp_path / "none.sqlite3").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lane", "replay"], "--lane replay needs --replay"),
        (["--lane", "exchange"], "--lane exchange needs --exchange-dir"),
        (["--replay", "missing.json", "--lane", "replay"], "missing.json"),
    ],
)
def test_worker_refuses_a_lane_without_what_it_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    store = tmp_path / "q.sqlite3"
    assert main(["worker", "--once", "--store", str(store), *args]) == 2
    assert message in capsys.readouterr().err
    assert not store.exists()


def test_worker_rejects_bad_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["worker", "--concurrency", "0"])
    assert stopped.value.code == 2
    assert "must be 1 or more" in capsys.readouterr().err


@pytest.mark.asyncio
async def test_a_codex_end_without_a_transcript_finds_the_rollout_by_session_id(
    store_path: Path, tmp_path: Path
) -> None:
    thread = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"  # the fixture's session
    day = tmp_path / "codex" / "sessions" / "2026" / "11" / "21"
    day.mkdir(parents=True)
    fixture = Path(__file__).with_name("fixtures") / "sessions" / "codex-rollout.jsonl"
    (day / f"rollout-2026-11-21T08-00-00-{thread}.jsonl").write_bytes(fixture.read_bytes())
    end = SessionEnd(harness="codex", session_id=thread, transcript="", cwd="/home/dev/shop",
                     event="SessionEnd")  # fmt: skip
    await enqueue(str(store_path), end)
    codex_home = {"CODEX_HOME": str(tmp_path / "codex")}
    worker = Worker(str(store_path), WorkerOptions(once=True, poll=0.05),
                    sessions=fake(FakeSessions()), env=codex_home)  # fmt: skip
    async with open_store(str(store_path)) as store:
        (item,) = await worker.run(store.queue)
    assert item.state == "done" and item.result is not None
    assert item.result["run_id"] == f"codex-{thread}"


@pytest.mark.asyncio
async def test_a_transient_failure_is_retried_with_backoff_then_succeeds(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.errors import StoreBusy
    from active_memory.worker import entry as entry_module

    real = entry_module.run_postmortem  # type: ignore[attr-defined]
    calls: list[float] = []

    async def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(anyio.current_time())
        if len(calls) < 3:  # the store is busy twice, then the postmortem goes through
            raise StoreBusy(backend.location, 0.1)
        return await real(*args, **kwargs)

    monkeypatch.setattr(entry_module, "run_postmortem", flaky)
    transcript = quiet_transcript(tmp_path / "t.jsonl", "t-1", "/w/t")
    await enqueue(backend.location, session_end("t-1", transcript))
    sessions = fake(FakeSessions())
    _, processed = await run_worker(backend.location, sessions, retries=2, backoff=0.1)
    assert [p.state for p in processed] == ["done"]
    assert len(calls) == 3 and calls[2] - calls[1] >= calls[1] - calls[0] >= 0.1
    (entry,) = (await states(backend.location)).values()
    assert entry == ("done", NOTHING_TO_LEARN)  # a quiet session: no model was asked


@pytest.mark.asyncio
async def test_a_failure_that_outlasts_the_retries_fails_the_entry_with_its_reason(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.errors import StoreBusy
    from active_memory.worker import entry as entry_module

    async def busy(*args: Any, **kwargs: Any) -> Any:
        raise StoreBusy(str(store_path), 0.1)

    monkeypatch.setattr(entry_module, "run_postmortem", busy)
    transcript = quiet_transcript(tmp_path / "t.jsonl", "t-1", "/w/t")
    await enqueue(str(store_path), session_end("t-1", transcript))
    sessions = fake(FakeSessions())
    _, processed = await run_worker(str(store_path), sessions, retries=1, backoff=0.01)
    assert [p.state for p in processed] == ["failed"]
    state, reason = (await states(str(store_path)))["t-1"]
    assert state == "failed" and reason.startswith("after 2 attempts: StoreBusy")


@pytest.mark.asyncio
async def test_the_lease_is_renewed_while_a_postmortem_outlasts_it(
    backend: Backend, tmp_path: Path
) -> None:
    transcript = costly_transcript(tmp_path / "l.jsonl", "l-1", "/w/l")
    await enqueue(backend.location, session_end("l-1", transcript))
    running = anyio.Event()

    async def slow(request: Request) -> Any:
        running.set()
        await anyio.sleep(1.0)  # each discovery answer takes longer than the lease
        return {"lessons": []}

    sessions = FakeSessions({"graph_discovery": slow, "repository_discovery": slow})
    stolen: list[Any] = []

    async def rival() -> None:
        await running.wait()  # the worker holds the entry now
        async with open_store(backend.location) as other:
            for _ in range(30):
                stolen.extend(await other.queue.claim("rival", limit=1, lease=30, settle=0))
                await anyio.sleep(0.1)

    async with anyio.create_task_group() as group:
        group.start_soon(rival)
        _, processed = await run_worker(backend.location, fake(sessions), lease=0.6)
    assert stolen == []
    assert [p.state for p in processed] == ["done"]
    assert (await states(backend.location))["l-1"][0] == "done"


def test_a_session_this_workers_lane_cannot_run_goes_back_to_the_queue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "q.sqlite3")
    transcript = costly_transcript(tmp_path / "c.jsonl", "c-1", "/w/c")
    anyio.run(enqueue, store, session_end("c-1", transcript))
    # A Claude Code session, and a worker that only runs `codex exec`.
    assert main(["worker", "--once", "--store", store, "--lane", "codex", "--json"]) == 0
    (item,) = json.loads(capsys.readouterr().out)["processed"]
    assert item["state"] == "pending" and "lane cannot run it" in item["reason"]
    assert main(["queue", "--store", store, "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["entries"]
    assert (entry["state"], entry["attempts"]) == ("pending", 0)
    # Offered at once to a worker that can run it; this one did not claim it again.
    assert entry["not_before"] == entry["updated_at"]


@pytest.mark.asyncio
async def test_a_worker_whose_lease_was_taken_cancels_its_postmortem_and_records_nothing(
    store_path: Path, tmp_path: Path
) -> None:
    location = str(store_path)
    transcript = costly_transcript(tmp_path / "x.jsonl", "x-1", "/w/x")
    await enqueue(location, session_end("x-1", transcript))
    asked = anyio.Event()

    async def ask_then_hang(request: Request) -> Any:
        asked.set()
        return await hang(request)

    sessions = FakeSessions({"graph_discovery": ask_then_hang, "repository_discovery": hang})

    async def rival() -> None:
        # As if this worker had stalled past its lease: the lease runs out, a rival claims.
        async with open_store(location) as other:
            await asked.wait()
            taken: list[QueueEntry] = []
            while not taken:  # the worker's heartbeat may renew in between: expire again
                await anyio.to_thread.run_sync(expire_leases, location)
                taken = await other.queue.claim("rival", limit=1, lease=60, settle=0)
        assert taken[0].lease_owner == "rival"

    async with anyio.create_task_group() as group:
        group.start_soon(rival)
        with anyio.fail_after(20):
            _, processed = await run_worker(location, fake(sessions), lease=3.0)
    assert [p.state for p in processed] == ["lost"]
    async with open_store(location) as store:
        (entry,) = await store.queue.entries()
        assert await store.select() == []  # the cancelled postmortem published nothing
    assert (entry.state, entry.lease_owner, entry.attempts) == ("running", "rival", 2)


@pytest.mark.asyncio
async def test_a_worker_never_claims_again_an_entry_it_is_still_running(
    store_path: Path, tmp_path: Path
) -> None:
    location = str(store_path)
    transcript = costly_transcript(tmp_path / "y.jsonl", "y-1", "/w/y")
    await enqueue(location, session_end("y-1", transcript))
    asked = anyio.Event()

    async def ask_then_hang(request: Request) -> Any:
        asked.set()
        return await hang(request)

    sessions = FakeSessions({"graph_discovery": ask_then_hang, "repository_discovery": hang})
    worker = Worker(location, WorkerOptions(poll=0.02, lease=60.0, grace=0.1),
                    sessions=fake(sessions))  # fmt: skip
    seen: list[tuple[int, str | None]] = []
    async with open_store(location) as store, anyio.create_task_group() as group:
        group.start_soon(worker.run, store.queue)
        with anyio.fail_after(20):
            await asked.wait()
        # Its lease runs out while it still runs the postmortem (a stalled process): the
        # entry is claimable again, but not by the worker that runs it.
        await anyio.to_thread.run_sync(expire_leases, location)
        for _ in range(25):  # a claim every poll: some fifty chances to take it again
            await anyio.sleep(0.04)
            (entry,) = await store.queue.entries()
            seen.append((entry.attempts, entry.lease_owner))
        worker.stop()
    assert set(seen) == {(1, worker.options.owner)}
    assert worker.processed == [] or [p.state for p in worker.processed] == ["pending"]


@pytest.mark.asyncio
async def test_a_repository_that_opted_out_is_not_collected_from(
    store_path: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    await anyio.run_process(["git", "init", "-q", str(repo)])
    (repo / ".active-memory.toml").write_text("repository = false\n")
    transcript = costly_transcript(tmp_path / "c.jsonl", "c-1", str(repo))
    await enqueue(str(store_path), session_end("c-1", transcript, str(repo)))
    sessions = FakeSessions()
    worker = Worker(str(store_path), WorkerOptions(once=True, poll=0.05), sessions=fake(sessions),
                    env={"ZEROSHOT_STATE_DIR": str(tmp_path / "state")})  # fmt: skip
    async with open_store(str(store_path)) as store:
        (item,) = await worker.run(store.queue)
    assert item.state == "done" and item.result is not None
    statuses = item.result["specialists"]
    assert statuses["repository_discovery"] == statuses["repository_maintenance"] == "disabled"
    assert statuses["graph_discovery"] == "reconciled"
    assert "repository_discovery" not in sessions.opened


@pytest.mark.asyncio
async def test_a_broken_settings_file_fails_the_entry_and_collects_nothing(
    store_path: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    await anyio.run_process(["git", "init", "-q", str(repo)])
    (repo / ".active-memory.toml").write_text("repositry = false\n")  # a typo
    transcript = costly_transcript(tmp_path / "c.jsonl", "c-1", str(repo))
    await enqueue(str(store_path), session_end("c-1", transcript, str(repo)))
    sessions = FakeSessions()
    worker = Worker(str(store_path), WorkerOptions(once=True, poll=0.05), sessions=fake(sessions),
                    env={"ZEROSHOT_STATE_DIR": str(tmp_path / "state")})  # fmt: skip
    async with open_store(str(store_path)) as store:
        (item,) = await worker.run(store.queue)
    assert item.state == "failed"
    assert ".active-memory.toml" in item.reason and "repositry" in item.reason
    assert sessions.opened == []


@pytest.mark.asyncio
async def test_a_store_away_inside_a_claim_is_waited_for_and_each_wait_is_said(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.errors import StoreUnavailable
    from active_memory.worker import WorkerEvent
    from active_memory.worker import entry as entry_module

    real = entry_module.run_postmortem  # type: ignore[attr-defined]
    calls: list[int] = []

    async def away(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) <= 3:  # more than `retries`: the store's absence is not counted
            raise StoreUnavailable(str(store_path), "cannot reach the PostgreSQL server")
        return await real(*args, **kwargs)

    monkeypatch.setattr(entry_module, "run_postmortem", away)
    transcript = quiet_transcript(tmp_path / "t.jsonl", "t-1", "/w/t")
    await enqueue(str(store_path), session_end("t-1", transcript))
    said: list[WorkerEvent] = []
    worker = Worker(str(store_path), WorkerOptions(once=True, poll=0.05, retries=1, backoff=0.01),
                    sessions=fake(FakeSessions()), progress=said.append)  # fmt: skip
    async with open_store(str(store_path)) as store:
        processed = await worker.run(store.queue)
    assert [p.state for p in processed] == ["done"]
    waits = [e.detail for e in said if e.stage == "retrying"]
    assert len(waits) == 3, said
    assert all(w.startswith("store unreachable (") and w.endswith(" s") for w in waits)
    assert "retrying in" in waits[0]


@pytest.mark.asyncio
async def test_a_queued_session_teaches_this_machine_its_checkout(
    store_path: Path, tmp_path: Path
) -> None:
    from active_memory.known_checkouts import KnownCheckouts

    repo = tmp_path / "api"
    repo.mkdir()
    await anyio.run_process(["git", "init", "-q", str(repo)])
    await anyio.run_process(["git", "-C", str(repo), "remote", "add", "origin",
                             "git@github.com:acme/api.git"])  # fmt: skip
    transcript = costly_transcript(tmp_path / "c.jsonl", "c-1", str(repo))
    await enqueue(str(store_path), session_end("c-1", transcript, str(repo)))
    env = {"ZEROSHOT_STATE_DIR": str(tmp_path / "state")}
    worker = Worker(str(store_path), WorkerOptions(once=True, poll=0.05),
                    sessions=fake(FakeSessions()), env=env)  # fmt: skip
    async with open_store(str(store_path)) as store:
        (item,) = await worker.run(store.queue)
    assert item.state == "done"
    known = KnownCheckouts(env=env)
    assert known.root("repo:github.com/acme/api") == repo.resolve()
    assert known.recorded()["repo:github.com/acme/api"][0].source == "session"
