"""Worker processes against one store, as in production: `active-memory worker` started
from outside, on each backend.

- Three workers drain 200 entries at once: each entry is processed exactly once.
- A worker killed with SIGKILL mid-postmortem leaves its entry `running`; once the lease
  expires another worker reclaims it and finishes it, and nothing was half-published.
- SIGTERM drains: a postmortem that finishes within the grace is done; one that does not
  is cancelled after the grace and its entry is pending again; a second signal exits at
  once.

The postmortems that must stay running wait on the file-exchange lane (the specialists'
tasks are files; the test answers them, or not).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import Backend
from queue_support import costly_transcript, quiet_transcript

from active_memory.store import SessionEnd, open_store
from active_memory.store.queue import QueueEntry

pytestmark = pytest.mark.slow

CLI = Path(sys.executable).with_name("active-memory")
ENTRIES = 200
WORKERS = 3


_SPAWNED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def reap_workers() -> Iterator[None]:
    """A failed test must not leave a worker running (or its pipes open) behind it."""
    yield
    while _SPAWNED:
        process = _SPAWNED.pop()
        if process.poll() is None:
            process.kill()
        process.communicate()


def worker(store: str, tmp: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "ZEROSHOT_STATE_DIR": str(tmp / "state"), "CI": "true"}
    process = subprocess.Popen(
        [str(CLI), "worker", "--store", store, "--poll", "0.1", "--json", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    _SPAWNED.append(process)
    return process


def enqueue(store: str, ends: list[SessionEnd]) -> None:
    async def write() -> None:
        async with open_store(store) as opened:
            for item in ends:
                await opened.queue.enqueue(item)

    anyio.run(write, backend="asyncio")


def entries(store: str) -> list[QueueEntry]:
    async def read() -> tuple[list[QueueEntry], list[Any]]:
        async with open_store(store, create=False) as opened:
            return await opened.queue.entries(), await opened.select()

    found, lessons = anyio.run(read, backend="asyncio")
    assert lessons == []  # no session here leads to a lesson: nothing may be published
    return found


def end_of(session: str, transcript: Path) -> SessionEnd:
    return SessionEnd(harness="claude", session_id=session, transcript=str(transcript),
                      cwd=str(transcript.parent), event="SessionEnd",
                      size=transcript.stat().st_size)  # fmt: skip


def costly_entry(backend: Backend, tmp_path: Path) -> Path:
    """One costly session in the queue; returns the exchange folder its tasks go to."""
    enqueue(backend.location, [end_of("c-1", costly_transcript(tmp_path / "c.jsonl", "c-1",
                                                                 "/w/costly"))])  # fmt: skip
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    return exchange


def wait_for_tasks(exchange: Path, count: int, process: subprocess.Popen[str]) -> list[Path]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        tasks = sorted(exchange.glob("*.task.json"))
        if len(tasks) >= count:
            return tasks
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise AssertionError(f"the worker wrote no {count} tasks in 60 s")


def answer(tasks: list[Path]) -> None:
    """Answer every discovery task: no lessons (a valid answer)."""
    for task in tasks:
        data = json.loads(task.read_text())
        reply = {"schema": "active-memory/exchange-answer@1", "specialist": data["specialist"],
                 "digest": data["digest"], "answer": {"lessons": []}}  # fmt: skip
        partial = task.with_name(data["answer_file"] + ".partial")
        partial.write_text(json.dumps(reply))
        partial.replace(task.with_name(data["answer_file"]))


def finished(process: subprocess.Popen[str], timeout: float = 240) -> tuple[int, Any, str]:
    """Wait for a worker (killed if it overstays) and read its report."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    return process.returncode, json.loads(out) if out.strip() else None, err


def test_three_workers_drain_200_entries_each_exactly_once(
    backend: Backend, tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    enqueue(backend.location, [
        end_of(f"s-{i}", quiet_transcript(sessions / f"s-{i}.jsonl", f"s-{i}", f"/w/repo-{i}"))
        for i in range(ENTRIES)
    ])  # fmt: skip
    empty = tmp_path / "recordings.json"
    empty.write_text('{"schema": "active-memory/recordings@1", "recordings": []}')
    processes = [
        worker(backend.location, tmp_path, "--once", "--concurrency", "3", "--lane", "replay",
               "--replay", str(empty))
        for _ in range(WORKERS)
    ]  # fmt: skip
    results = [finished(process) for process in processes]  # every one reaped first
    for code, _, err in results:
        assert code == 0, err
    reports = [report for _, report, _ in results]
    done = [item["id"] for report in reports for item in report["processed"]
            if item["state"] == "done"]  # fmt: skip
    assert len(done) == ENTRIES and len(set(done)) == ENTRIES
    assert all(len(report["processed"]) > 0 for report in reports)  # all three took part
    found = entries(backend.location)
    assert {e.state for e in found} == {"done"} and len(found) == ENTRIES
    assert {e.attempts for e in found} == {1}
    assert {e.result["run_id"] for e in found if e.result} == {
        f"claude-s-{i}" for i in range(ENTRIES)
    }


def test_a_killed_worker_leaves_its_entry_to_another_after_the_lease(
    backend: Backend, tmp_path: Path
) -> None:
    exchange = costly_entry(backend, tmp_path)
    first = worker(backend.location, tmp_path, "--lease", "2", "--lane", "exchange",
                   "--exchange-dir", str(exchange))  # fmt: skip
    tasks = wait_for_tasks(exchange, 2, first)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    (entry,) = entries(backend.location)
    assert (entry.state, entry.attempts) == ("running", 1)
    assert entry.lease_expires is not None
    answer(tasks)  # the same postmortem asks the same questions again
    time.sleep(2.5)  # let the dead worker's lease expire
    second = worker(backend.location, tmp_path, "--once", "--lane", "exchange",
                    "--exchange-dir", str(exchange))  # fmt: skip
    code, report, err = finished(second)
    assert code == 0, err
    assert [item["state"] for item in report["processed"]] == ["done"]
    (entry,) = entries(backend.location)
    assert (entry.state, entry.attempts, entry.lease_owner) == ("done", 2, None)
    assert entry.result is not None and entry.result["ok"] is True


def test_sigterm_lets_a_postmortem_finish_within_the_grace(
    backend: Backend, tmp_path: Path
) -> None:
    exchange = costly_entry(backend, tmp_path)
    process = worker(backend.location, tmp_path, "--grace", "60", "--lane", "exchange",
                     "--exchange-dir", str(exchange))  # fmt: skip
    tasks = wait_for_tasks(exchange, 2, process)
    process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert process.poll() is None  # still draining: it waits for the postmortem
    answer(tasks)
    started = time.monotonic()
    code, report, err = finished(process, timeout=60)
    assert code == 0, err
    assert time.monotonic() - started < 30  # it left as soon as the postmortem was done
    assert report["stopped"] is True
    assert [item["state"] for item in report["processed"]] == ["done"]
    assert "draining" in err
    (entry,) = entries(backend.location)
    assert entry.state == "done"


def test_sigterm_cancels_a_postmortem_after_the_grace_and_requeues_it(
    backend: Backend, tmp_path: Path
) -> None:
    exchange = costly_entry(backend, tmp_path)
    process = worker(backend.location, tmp_path, "--grace", "1.5", "--lane", "exchange",
                     "--exchange-dir", str(exchange))  # fmt: skip
    wait_for_tasks(exchange, 2, process)
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code, report, err = finished(process, timeout=60)
    waited = time.monotonic() - signalled
    assert code == 0, err
    assert 1.5 <= waited < 20
    assert [item["state"] for item in report["processed"]] == ["pending"]
    (entry,) = entries(backend.location)
    assert (entry.state, entry.attempts, entry.lease_owner) == ("pending", 0, None)
    assert "nothing published" in entry.reason


def test_a_second_signal_exits_at_once_and_the_lease_is_reclaimable(
    backend: Backend, tmp_path: Path
) -> None:
    exchange = costly_entry(backend, tmp_path)
    process = worker(backend.location, tmp_path, "--grace", "60", "--lease", "2",
                     "--lane", "exchange", "--exchange-dir", str(exchange))  # fmt: skip
    wait_for_tasks(exchange, 2, process)
    process.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    signalled = time.monotonic()
    process.send_signal(signal.SIGINT)
    code, _, err = finished(process, timeout=30)
    assert code == 130 and time.monotonic() - signalled < 10
    assert "stopped at once" in err
    (entry,) = entries(backend.location)
    assert entry.state == "running"
    time.sleep(2.5)

    async def claim() -> list[QueueEntry]:
        async with open_store(backend.location) as opened:
            return await opened.queue.claim("w-next", limit=1, lease=30, settle=0)

    (taken,) = anyio.run(claim, backend="asyncio")
    assert (taken.id, taken.attempts, taken.lease_owner) == (entry.id, 2, "w-next")
