"""Many processes publishing revision-checked updates to the same lessons lose none of them.

The main test runs on each backend (SQLite file, PostgreSQL database): 8 adapt workers
and one retiring worker, all retrying on `RevisionConflict`. A deadlock or a
serialization failure inside the PostgreSQL store is retried there; one that escaped
would end a worker with `StoreBusy` and fail the test.
"""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import aiosqlite
import anyio
import pytest
from conftest import Backend

from active_memory.errors import StoreBusy
from active_memory.lessons import (
    Author,
    Card,
    CreateLesson,
    HistoryEntry,
    Lesson,
    RepositoryScope,
    Tombstone,
)
from active_memory.store.sqlite import SqliteStore

WORKERS = 8
UPDATES_PER_WORKER = 200
LESSONS = 20
DOOMED = 4  # lessons also adapted now and then, and retired during the run
WORKER_SCRIPT = Path(__file__).with_name("store_workers.py")
WORKER_TIMEOUT = 240.0


async def _create_lessons(backend: Backend) -> list[str]:
    store = await backend.open()
    try:
        receipt = await store.publish(
            [
                CreateLesson(
                    scope=RepositoryScope(repository="repo:concurrency"),
                    card=Card(title=f"shared lesson {i}", recommendation="Start here."),
                    author=Author(specialist="setup"),
                    reason="setup",
                )
                for i in range(LESSONS + DOOMED)
            ]
        )
    finally:
        await store.aclose()
    return [lesson_id for lesson_id, _ in receipt.created]


async def _final_state(
    backend: Backend, ids: list[str]
) -> tuple[dict[str, Lesson | Tombstone], dict[str, list[HistoryEntry]], list[str]]:
    store = await backend.open(create=False)
    try:
        found: dict[str, Lesson | Tombstone] = {}
        histories: dict[str, list[HistoryEntry]] = {}
        for lesson_id in ids:
            lesson = await store.get(lesson_id)
            assert lesson is not None, lesson_id
            found[lesson_id] = lesson
            histories[lesson_id] = await store.history(lesson_id)
        integrity = await store.integrity_check() if isinstance(store, SqliteStore) else ["ok"]
        return found, histories, integrity
    finally:
        await store.aclose()


def _start_workers(
    location: str, tmp_path: Path, ids: list[str], doomed: list[str]
) -> list[subprocess.Popen[str]]:
    commands = [
        [
            "adapt",
            location,
            str(tmp_path / f"worker-{worker}.txt"),
            f"--worker={worker}",
            f"--ids={','.join(ids)}",
            f"--updates={UPDATES_PER_WORKER}",
            f"--seed={1000 + worker}",
            f"--doomed={','.join(doomed)}",
        ]
        for worker in range(WORKERS)
    ]
    commands.append(
        ["retire", location, str(tmp_path / "retired.txt"), f"--doomed={','.join(doomed)}",
         "--seed=7"]
    )  # fmt: skip
    return [
        subprocess.Popen(
            [sys.executable, str(WORKER_SCRIPT), *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]


def _run_workers(location: str, tmp_path: Path, ids: list[str], doomed: list[str]) -> int:
    """Run every worker to the end; fail on any death or error. Returns the conflicts seen."""
    workers = _start_workers(location, tmp_path, ids, doomed)
    try:
        for worker in workers:
            assert worker.stdout is not None
            ready = worker.stdout.readline()
            if ready.strip() != "ready":
                _, err = worker.communicate(timeout=WORKER_TIMEOUT)
                pytest.fail(f"a worker did not start: {ready!r}\n{err}")
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()  # communicate() closes it
        conflicts = 0
        for index, worker in enumerate(workers):
            out, err = worker.communicate(timeout=WORKER_TIMEOUT)
            # A StoreBusy / "database is locked" is never hidden by the worker: it lands here.
            assert worker.returncode == 0, f"worker {index} died ({worker.returncode}):\n{err}"
            assert "locked" not in err and "StoreBusy" not in err, err
            assert out.startswith("done conflicts="), out
            conflicts += int(out.strip().removeprefix("done conflicts="))
        return conflicts
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            for stream in (worker.stdin, worker.stdout, worker.stderr):
                if stream is not None:
                    stream.close()
            worker.wait()


@pytest.mark.slow
def test_concurrent_updates_lose_nothing_and_never_revive_a_tombstone(
    tmp_path: Path, backend: Backend
) -> None:
    created = anyio.run(_create_lessons, backend)
    assert len(created) == LESSONS + DOOMED
    ids, doomed = created[:LESSONS], created[LESSONS:]

    conflicts = _run_workers(backend.location, tmp_path, ids, doomed)

    # (lesson, revision) -> (worker, update) of every success the workers recorded.
    recorded: dict[tuple[str, int], tuple[str, str]] = {}
    per_worker_updates: Counter[str] = Counter()
    for worker in range(WORKERS):
        lines = (tmp_path / f"worker-{worker}.txt").read_text(encoding="utf-8").splitlines()
        for line in lines:
            lesson_id, revision_text, who, update = line.split()
            key = (lesson_id, int(revision_text))
            assert key not in recorded, f"two successes claim {key}: {recorded[key]}, {line}"
            recorded[key] = (who, update)
        per_worker_updates[str(worker)] = len({line.split()[3] for line in lines})
    assert per_worker_updates == Counter({str(w): UPDATES_PER_WORKER for w in range(WORKERS)})
    retired_at = {
        lesson_id: int(revision)
        for lesson_id, revision in (
            line.split() for line in (tmp_path / "retired.txt").read_text().splitlines()
        )
    }
    assert sorted(retired_at) == sorted(doomed)

    successes: defaultdict[str, list[int]] = defaultdict(list)
    for lesson, revision in recorded:
        successes[lesson].append(revision)

    found, histories, integrity = anyio.run(_final_state, backend, created)
    assert integrity == ["ok"]
    for lesson_id in created:
        count = len(successes[lesson_id])
        history = histories[lesson_id]
        tail = ["retire"] if lesson_id in doomed else []
        last = 1 + count + len(tail)
        assert found[lesson_id].revision == last, lesson_id
        assert [h.revision for h in history] == list(range(1, last + 1)), lesson_id
        assert [h.action for h in history] == ["create"] + ["adapt"] * count + tail, lesson_id
        assert [h.previous_revision for h in history] == [None, *range(1, last)]
        # Each adapt row is the very update the worker recorded for that revision.
        for entry in history[1 : count + 1]:
            who, update = recorded[(lesson_id, entry.revision)]
            assert entry.author.specialist == f"worker-{who}"
            assert entry.reason == f"worker {who} update {update}"
            assert entry.card is not None
            assert entry.card.title == f"w{who} u{update} on r{entry.revision - 1}"
    for lesson_id in doomed:
        # Retired once, and no adapt landed after it: the tombstone stayed a tombstone.
        assert isinstance(found[lesson_id], Tombstone), lesson_id
        assert found[lesson_id].revision == retired_at[lesson_id]
        assert all(revision < retired_at[lesson_id] for revision in successes[lesson_id])

    # Without conflicts the retry path was never exercised and the test proves little.
    assert conflicts > 0


@pytest.mark.asyncio
async def test_store_created_by_another_process_while_opening_is_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seen for real with 8 processes opening one new store at once (2 rounds in 15). Here
    # the other process's create lands right after the opener first reads application_id.
    path = tmp_path / "lessons.sqlite3"
    original = aiosqlite.Connection.execute_fetchall
    interleaved = False

    async def read_then_let_the_other_process_create(
        self: aiosqlite.Connection, sql: str, parameters: Any = None
    ) -> Iterable[sqlite3.Row]:
        nonlocal interleaved
        rows = await original(self, sql, parameters)
        if "application_id" in sql and not interleaved:
            interleaved = True
            # Were the opener's reads one transaction, this create would wait; then it passes.
            with contextlib.suppress(StoreBusy):
                other = await SqliteStore.open(path, busy_timeout=0.5)
                await other.aclose()
        return rows

    monkeypatch.setattr(
        aiosqlite.Connection, "execute_fetchall", read_then_let_the_other_process_create
    )
    async with await SqliteStore.open(path) as store:
        receipt = await store.publish(
            [
                CreateLesson(
                    scope=RepositoryScope(repository="repo:concurrency"),
                    card=Card(title="first lesson", recommendation="Open the store first."),
                    author=Author(specialist="setup"),
                )
            ]
        )
    assert interleaved
    assert receipt.created == [("L-1", 1)]
