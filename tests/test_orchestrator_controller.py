"""The run controller's hook and the postmortem journal (SPEC §7): the latched outcome is
returned unchanged whatever the postmortem does, failures are reported and never raised,
usage comes back apart from the run, and a postmortem killed mid-way is found as
interrupted with nothing half-published."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import REPO_ROOT
from orchestrator_support import (
    FakeSessions,
    config,
    hang,
    repo_lessons,
    run_record,
    seed,
    snapshot,
)

from active_memory.config import RuntimeConfig
from active_memory.orchestrator import (
    Journal,
    after_run_settled,
    default_journal_dir,
    interrupted_postmortems,
)
from active_memory.orchestrator.journal import store_journal_dir
from active_memory.specialists.providers.base import Request
from active_memory.store.location import resolve_store_location
from active_memory.store.sqlite import SqliteStore


@pytest.mark.asyncio
async def test_the_latched_outcome_is_unchanged_when_every_specialist_fails(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(1))
    data_record = run_record(tmp_path, ["L-1"], timeouts=True)

    async def broken(request: Request) -> Any:
        raise RuntimeError("the model server exploded")

    sessions = FakeSessions(
        {
            name: broken
            for name in ("repository_maintenance", "graph_discovery", "repository_discovery")
        }
    )
    record = data_record.model_copy(update={"outcome": "failed"})
    settled = await after_run_settled(
        record, config(), store, sessions=sessions, journal_dir=tmp_path / "j"
    )
    assert settled.outcome == "failed" and record.outcome == "failed"
    assert settled.postmortem is not None
    assert settled.postmortem.outcome == "failed"
    assert settled.error is not None and "exploded" in settled.error


@pytest.mark.asyncio
async def test_a_postmortem_that_cannot_start_is_reported_not_raised(
    tmp_path: Path, store: SqliteStore
) -> None:
    record = run_record(tmp_path, [], timeouts=True)
    without_lane = RuntimeConfig(settings=config().settings, graph=config().graph, lane=None)
    settled = await after_run_settled(record, without_lane, store, journal_dir=tmp_path / "j")
    assert settled.outcome == "succeeded"
    assert settled.postmortem is None
    assert settled.error is not None and "lane" in settled.error
    assert settled.usage.requests == 0


@pytest.mark.asyncio
async def test_usage_comes_back_to_the_controller_per_specialist_and_in_total(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(2))
    record = run_record(tmp_path, ["L-1"], timeouts=True)
    settled = await after_run_settled(
        record, config(), store, sessions=FakeSessions(), journal_dir=tmp_path / "j"
    )
    assert settled.error is None and settled.postmortem is not None
    per = {n: s.usage.requests for n, s in settled.postmortem.specialists.items()}
    assert per == {
        "graph_maintenance": 0,
        "repository_maintenance": 1,
        "graph_discovery": 1,
        "repository_discovery": 1,
    }
    assert settled.usage.requests == 3 and settled.usage.input_tokens == 300
    assert settled.usage == settled.postmortem.usage
    assert record.events == run_record(tmp_path, ["L-1"], timeouts=True).events


@pytest.mark.asyncio
async def test_the_controller_s_cancellation_propagates(tmp_path: Path, store: SqliteStore) -> None:
    record = run_record(tmp_path, [], timeouts=True)
    sessions = FakeSessions({"graph_discovery": hang, "repository_discovery": hang})
    reached_end = False
    with anyio.move_on_after(0.2) as scope:
        await after_run_settled(
            record, config(timeout_ms=30_000), store, sessions=sessions, journal_dir=tmp_path
        )
        reached_end = True
    assert scope.cancelled_caught and not reached_end


@pytest.mark.asyncio
async def test_the_journal_records_start_and_end(tmp_path: Path, store: SqliteStore) -> None:
    record = run_record(tmp_path, [], timeouts=True)
    journal = tmp_path / "journal"
    settled = await after_run_settled(
        record, config(), store, sessions=FakeSessions(), journal_dir=journal
    )
    entry = Journal(journal).read("run-1")
    assert entry is not None and entry.state == "finished" and entry.ended_at is not None
    assert entry.outcome == "succeeded"
    assert entry.statuses["graph_discovery"] == "reconciled"
    assert entry.usage.requests == settled.usage.requests == 2
    assert interrupted_postmortems(journal) == []


def test_journal_file_names_stay_in_the_folder_for_any_run_id(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    for run_id in ("../escape", "a/b", "run 1", "ünïcode", ".."):
        path = journal.path(run_id)
        assert path.parent == tmp_path and path.name not in (".json", "..json")
    assert journal.path("a/b") != journal.path("a%2Fb")


def test_the_journal_lives_in_the_zeroshot_state_dir() -> None:
    folder = default_journal_dir({"ZEROSHOT_STATE_DIR": "/state"})
    assert folder == Path("/state/active-memory/postmortems")


def test_the_journal_follows_the_store() -> None:
    env = {"ZEROSHOT_STATE_DIR": "/state"}
    default = resolve_store_location(None, env)
    assert store_journal_dir(default, env) == default_journal_dir(env)  # one rule for both
    assert store_journal_dir("/tmp/x/lessons.sqlite3", env) == Path("/tmp/x/postmortems")
    for elsewhere in ("postgresql://u:p@h/db", ":memory:"):
        assert store_journal_dir(elsewhere, env) == default_journal_dir(env)


CHILD = """
import sys, anyio
sys.path[:0] = [{tests!r}]
from pathlib import Path
from orchestrator_support import FakeSessions, config, run_record
from active_memory.orchestrator import run_postmortem
from active_memory.store.sqlite import SqliteStore

async def hang(request):
    Path({marker!r}).write_text("asked")
    await anyio.sleep_forever()

async def main():
    store = await SqliteStore.open({store!r})
    record = run_record(Path({folder!r}), ["L-1"], timeouts=True)
    sessions = FakeSessions({{"repository_maintenance": hang}})
    await run_postmortem(record, config(timeout_ms=60_000), store, sessions=sessions,
                         journal_dir=Path({journal!r}))

anyio.run(main)
"""


@pytest.mark.asyncio
async def test_a_killed_postmortem_is_reported_interrupted_and_published_nothing(
    tmp_path: Path, store: SqliteStore, store_path: Path
) -> None:
    await seed(store, repo_lessons(2))
    before = await snapshot(store)
    journal, marker = tmp_path / "journal", tmp_path / "asked"
    script = CHILD.format(
        tests=str(REPO_ROOT / "tests"),
        marker=str(marker),
        store=str(store_path),
        folder=str(tmp_path),
        journal=str(journal),
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "tests")])}
    child = await anyio.open_process(
        [sys.executable, "-c", script], env=env, stdout=None, stderr=None
    )
    try:
        limit = time.monotonic() + 20
        while not marker.exists():  # the discovery specialists answer; maintenance hangs
            assert child.returncode is None, "the postmortem process ended early"
            assert time.monotonic() < limit
            await anyio.sleep(0.02)
        assert interrupted_postmortems(journal) == []  # still running: not interrupted
        child.send_signal(signal.SIGKILL)
    finally:
        with anyio.CancelScope(shield=True):
            await child.wait()
    (found,) = interrupted_postmortems(journal)
    assert found.run_id == "run-1" and found.outcome == "succeeded" and found.pid == child.pid
    assert not found.usage.complete
    assert json.loads(found.path.read_text())["state"] == "running"
    assert await snapshot(store) == before
    assert await store.integrity_check() == ["ok"]


KILLED_AFTER_COMMIT = """
import os, signal, sys, anyio
sys.path[:0] = [{tests!r}]
from pathlib import Path
from orchestrator_support import FakeSessions, config, decisions, run_record
from active_memory.orchestrator import run_postmortem
from active_memory.store.sqlite import SqliteStore

CARD = {{"title": "Regenerate the api client after schema edits",
         "recommendation": "After editing `api/schema.json` run `make api-client`.",
         "associations": {{"folders": ["api"]}}}}

class KilledAfterCommit:
    def __init__(self, inner):
        self.inner = inner
    def __getattr__(self, name):
        return getattr(self.inner, name)
    async def publish(self, *args, **kwargs):
        await self.inner.publish(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)  # after COMMIT, before the journal's end

async def adapt(request):
    return decisions(request, "adapt", lesson=CARD)

async def main():
    store = await SqliteStore.open({store!r})
    record = run_record(Path({folder!r}), ["L-1"], timeouts=True)
    await run_postmortem(record, config(), KilledAfterCommit(store),
                         sessions=FakeSessions({{"repository_maintenance": adapt}}),
                         journal_dir=Path({journal!r}))

anyio.run(main)
"""


@pytest.mark.asyncio
async def test_a_postmortem_killed_after_its_commit_is_recorded_published_not_interrupted(
    tmp_path: Path, store: SqliteStore, store_path: Path
) -> None:
    from active_memory.orchestrator.journal import settled_interrupted_postmortems

    await seed(store, repo_lessons(2))
    journal = tmp_path / "journal"
    script = KILLED_AFTER_COMMIT.format(
        tests=str(REPO_ROOT / "tests"),
        store=str(store_path),
        folder=str(tmp_path),
        journal=str(journal),
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "tests")])}
    child = await anyio.run_process([sys.executable, "-c", script], env=env, check=False)
    assert child.returncode == -signal.SIGKILL, child.stderr
    # The publish committed: L-1 moved to r2.
    adapted = await store.get("L-1")
    assert adapted is not None and adapted.revision == 2
    # The journal alone cannot tell; with the store it knows the publish happened.
    (unsettled,) = interrupted_postmortems(journal)
    assert unsettled.run_id == "run-1"
    assert await settled_interrupted_postmortems(store, journal) == []
    entry = Journal(journal).read("run-1")
    assert entry is not None and entry.state == "finished"
    assert entry.reason is not None and "published" in entry.reason
    assert interrupted_postmortems(journal) == []


@pytest.mark.asyncio
async def test_a_postmortem_killed_before_its_commit_stays_interrupted_after_settling(
    tmp_path: Path, store: SqliteStore
) -> None:
    from active_memory.orchestrator.journal import settled_interrupted_postmortems

    journal = Journal(tmp_path)
    entry = journal.started("run-9", "succeeded")
    gone = entry.model_copy(update={"pid": _dead_pid()})
    journal.write(gone)
    (found,) = await settled_interrupted_postmortems(store, tmp_path)
    assert found.run_id == "run-9"


def _dead_pid() -> int:
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_postmortems_lists_a_run_killed_after_its_commit_as_finished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    from active_memory.cli import main

    store_file = tmp_path / "lessons.sqlite3"

    async def seeded() -> None:
        async with await SqliteStore.open(store_file) as opened:
            await seed(opened, repo_lessons(2))

    anyio.run(seeded)
    journal = tmp_path / "journal"
    script = KILLED_AFTER_COMMIT.format(
        tests=str(REPO_ROOT / "tests"),
        store=str(store_file),
        folder=str(tmp_path),
        journal=str(journal),
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "tests")])}
    child = subprocess.run([sys.executable, "-c", script], env=env, check=False, timeout=120)
    assert child.returncode == -signal.SIGKILL
    code = main(["postmortems", "--journal", str(journal), "--store", str(store_file), "--json"])
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)["postmortems"]
    assert row["run_id"] == "run-1" and row["state"] == "finished"
