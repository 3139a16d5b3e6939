"""Usage that adds up: every request's usage is counted as it happens and journalled while
the postmortem runs, so a cancel, a crash or a failure still reports what was spent."""

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
from orchestrator_support import config, decisions, repo_lessons, run_record, seed, snapshot

from active_memory.orchestrator import (
    Journal,
    PostmortemLimits,
    ProgressEvent,
    after_run_settled,
    interrupted_postmortems,
    run_postmortem,
)
from active_memory.orchestrator import engine as engine_module
from active_memory.specialists.kinds import SpecialistName
from active_memory.specialists.providers import ProviderSession, Usage
from active_memory.specialists.providers.base import Request, TurnOutput
from active_memory.specialists.providers.function import FunctionSession
from active_memory.store.sqlite import SqliteStore

ONE_LESSON_PER_BATCH = PostmortemLimits(batch_bytes=1)


def batch_usage(n: int) -> Usage:
    """Request `n`'s usage: different for every request, so a sum shows which ones."""
    return Usage(input_tokens=1000 * n, output_tokens=10 * n, cost_usd=0.5 * n, requests=1)


def usage_of(*numbers: int) -> dict[str, Any]:
    total = Usage()
    for n in numbers:
        total = total.plus(batch_usage(n))
    return total.model_dump()


class CountingSession(FunctionSession):
    """Repository maintenance that keeps every batch, charged `batch_usage(n)` for its
    n-th request; requests from `hang_from` on never answer."""

    def __init__(self, specialist: str, *, deadline: float, hang_from: int | None) -> None:
        super().__init__(specialist, self._answer, model="fake-model", deadline=deadline)
        self.asked = 0
        self.hang_from = hang_from

    async def _answer(self, request: Request) -> Any:
        return decisions(request, "keep")

    async def _turn(self, request: Request) -> TurnOutput:
        self.asked += 1
        if self.hang_from is not None and self.asked >= self.hang_from:
            await anyio.sleep_forever()
        turn = await super()._turn(request)
        return TurnOutput(text=turn.text, data=turn.data, usage=batch_usage(self.asked))


class Sessions:
    """Only repository maintenance asks (no discovery evidence, no graph deliveries)."""

    def __init__(self, hang_from: int | None = None) -> None:
        self.hang_from = hang_from

    def __call__(self, specialist: SpecialistName, *, deadline: float) -> ProviderSession:
        assert specialist == "repository_maintenance", specialist
        return CountingSession(specialist, deadline=deadline, hang_from=self.hang_from)


@pytest.mark.asyncio
async def test_a_postmortem_cancelled_after_two_batches_journals_their_sum(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(4))
    before = await snapshot(store)
    record = run_record(tmp_path, ["L-1", "L-2", "L-3", "L-4"])
    journal = tmp_path / "journal"
    finished = False
    with anyio.CancelScope() as caller:

        def progress(event: ProgressEvent) -> None:
            if event.stage == "batch" and event.done == 2:
                caller.cancel()  # the caller goes away between batch 2 and batch 3

        await run_postmortem(
            record,
            config(timeout_ms=30_000),
            store,
            sessions=Sessions(),
            limits=ONE_LESSON_PER_BATCH,
            progress=progress,
            journal_dir=journal,
        )
        finished = True
    assert caller.cancelled_caught and not finished
    entry = Journal(journal).read("run-1")
    assert entry is not None and entry.state == "cancelled"
    assert entry.usage.model_dump() == usage_of(1, 2)  # complete: nothing was cut
    assert entry.usage.complete
    assert await snapshot(store) == before


@pytest.mark.asyncio
async def test_a_request_cut_by_the_cancel_leaves_the_sum_marked_incomplete(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(4))
    record = run_record(tmp_path, ["L-1", "L-2", "L-3", "L-4"])
    journal = tmp_path / "journal"
    with anyio.move_on_after(1.0) as caller:  # batch 3 hangs until the caller gives up
        await run_postmortem(
            record,
            config(timeout_ms=30_000),
            store,
            sessions=Sessions(hang_from=3),
            limits=ONE_LESSON_PER_BATCH,
            journal_dir=journal,
        )
    assert caller.cancelled_caught
    entry = Journal(journal).read("run-1")
    assert entry is not None and entry.state == "cancelled"
    assert entry.usage.model_dump() == {**usage_of(1, 2), "complete": False}


CHILD = """
import sys, anyio
sys.path[:0] = [{tests!r}]
from pathlib import Path
from orchestrator_support import config, run_record
from test_orchestrator_usage import ONE_LESSON_PER_BATCH, Sessions
from active_memory.orchestrator import run_postmortem
from active_memory.store.sqlite import SqliteStore

async def main():
    store = await SqliteStore.open({store!r})
    record = run_record(Path({folder!r}), ["L-1", "L-2", "L-3"])
    await run_postmortem(record, config(timeout_ms=60_000), store, sessions=Sessions(2),
                         limits=ONE_LESSON_PER_BATCH, journal_dir=Path({journal!r}))

anyio.run(main)
"""


@pytest.mark.asyncio
async def test_a_postmortem_killed_after_one_batch_reports_the_journalled_usage_incomplete(
    tmp_path: Path, store: SqliteStore, store_path: Path
) -> None:
    await seed(store, repo_lessons(3))
    before = await snapshot(store)
    journal = tmp_path / "journal"
    script = CHILD.format(
        tests=str(REPO_ROOT / "tests"),
        store=str(store_path),
        folder=str(tmp_path),
        journal=str(journal),
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "tests")])}
    child = await anyio.open_process(
        [sys.executable, "-c", script], env=env, stdout=None, stderr=None
    )
    entry = Journal(journal).path("run-1")
    try:
        limit = time.monotonic() + 30
        # Batch 1 is answered, batch 2 hangs: the running entry must already hold batch 1.
        while True:
            assert child.returncode is None, "the postmortem process ended early"
            assert time.monotonic() < limit, "batch 1's usage was never journalled"
            try:
                written = json.loads(entry.read_text())
            except (OSError, ValueError):
                written = {}
            if written.get("usage", {}).get("requests") == 1:
                break
            await anyio.sleep(0.02)
        assert written["state"] == "running"
        child.send_signal(signal.SIGKILL)
    finally:
        with anyio.CancelScope(shield=True):
            await child.wait()
    (found,) = interrupted_postmortems(journal)
    assert found.usage.model_dump() == {**usage_of(1), "complete": False}
    assert await snapshot(store) == before


@pytest.mark.asyncio
async def test_an_exception_inside_the_controller_hook_still_returns_the_usage_spent(
    tmp_path: Path, store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed(store, repo_lessons(3))
    record = run_record(tmp_path, ["L-1", "L-2", "L-3"])

    async def broken_publish(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the publication step broke")

    monkeypatch.setattr(engine_module, "publish", broken_publish)
    journal = tmp_path / "journal"
    settled = await after_run_settled(
        record,
        config(),
        store,
        sessions=Sessions(),
        limits=ONE_LESSON_PER_BATCH,
        journal_dir=journal,
    )
    assert settled.postmortem is None and settled.outcome == "succeeded"
    assert settled.error == "RuntimeError: the publication step broke"
    assert settled.usage.model_dump() == usage_of(1, 2, 3)
    entry = Journal(journal).read("run-1")
    assert entry is not None and entry.state == "failed"
    assert entry.usage.model_dump() == usage_of(1, 2, 3)


@pytest.mark.asyncio
async def test_a_finished_postmortem_journals_the_same_usage_it_reports(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(3))
    record = run_record(tmp_path, ["L-1", "L-2", "L-3"])
    journal = tmp_path / "journal"
    settled = await after_run_settled(
        record,
        config(),
        store,
        sessions=Sessions(),
        limits=ONE_LESSON_PER_BATCH,
        journal_dir=journal,
    )
    assert settled.error is None
    assert settled.usage.model_dump() == usage_of(1, 2, 3)
    entry = Journal(journal).read("run-1")
    assert entry is not None and entry.state == "finished"
    assert entry.usage == settled.usage


def test_a_failing_usage_listener_never_costs_the_answer() -> None:
    async def main() -> Usage:
        session = FunctionSession("graph_discovery", _no_lessons, usage_per_turn=batch_usage(1))
        heard: list[Usage] = []
        session.on_usage(heard.append)
        session.on_usage(_explode)
        from active_memory.specialists.answers import answer_schema

        await session.ask("find lessons", answer_schema("graph_discovery"))
        assert heard == [batch_usage(1)]
        return session.usage

    assert anyio.run(main) == batch_usage(1)


async def _no_lessons(request: Request) -> Any:
    return {"lessons": []}


def _explode(usage: Usage) -> None:
    raise RuntimeError("listener broke")


def _dead_pid() -> int:
    import subprocess

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, check=True)  # fmt: skip
    return int(done.stdout)


@pytest.mark.asyncio
async def test_the_postmortems_command_lists_recent_postmortems_with_state_and_usage(
    tmp_path: Path,
    store: SqliteStore,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from active_memory.cli import main
    from active_memory.orchestrator import JournalEntry

    await seed(store, repo_lessons(3))
    journal = tmp_path / "journal"
    await after_run_settled(
        run_record(tmp_path, ["L-1", "L-2", "L-3"], run_id="run-finished"),
        config(),
        store,
        sessions=Sessions(),
        limits=ONE_LESSON_PER_BATCH,
        journal_dir=journal,
    )
    with anyio.move_on_after(1.0):
        await run_postmortem(
            run_record(tmp_path, ["L-1", "L-2", "L-3"], run_id="run-cancelled"),
            config(timeout_ms=30_000),
            store,
            sessions=Sessions(hang_from=2),
            limits=ONE_LESSON_PER_BATCH,
            journal_dir=journal,
        )
    crashed = JournalEntry(
        run_id="run-crashed",
        outcome="failed",
        state="running",
        pid=_dead_pid(),
        started_at="2999-01-01T00:00:00+00:00",
        usage={"input_tokens": 7, "output_tokens": 1, "requests": 1},
    )
    Journal(journal).write(crashed)

    assert main(["postmortems", "--journal", str(journal), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["postmortems"]
    assert [r["run_id"] for r in rows] == ["run-crashed", "run-cancelled", "run-finished"]
    by_run = {r["run_id"]: r for r in rows}
    assert by_run["run-crashed"]["state"] == "interrupted"
    assert by_run["run-crashed"]["usage"]["complete"] is False
    assert by_run["run-crashed"]["usage"]["input_tokens"] == 7
    assert by_run["run-cancelled"]["state"] == "cancelled"
    assert by_run["run-cancelled"]["usage"] == {**usage_of(1), "complete": False}
    finished = by_run["run-finished"]
    assert finished["state"] == "finished" and finished["outcome"] == "succeeded"
    assert finished["usage"] == usage_of(1, 2, 3)
    assert finished["specialists"]["repository_maintenance"] == "reconciled"

    assert main(["postmortems", "--journal", str(journal), "--limit", "1", "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)["postmortems"]] == [
        "run-crashed"
    ]
    monkeypatch.setenv("COLUMNS", "200")  # a wide terminal: no cell is folded
    assert main(["postmortems", "--journal", str(journal)]) == 0
    table = capsys.readouterr().out
    assert "run-finished" in table and "interrupted" in table and "6,000 / 60" in table
    assert "≥ 7 / 1" in table and "lower bound" in table


def test_the_postmortems_command_refuses_bad_input_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from active_memory.cli import main

    assert main(["postmortems", "--journal", str(tmp_path / "none")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["postmortems", "--journal", str(tmp_path), "--limit", "-1"]) == 2
    assert "--limit must be 0 or more" in capsys.readouterr().err
    assert main(["postmortems", "--journal", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["postmortems"] == []
