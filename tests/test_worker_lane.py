"""The worker's lane, its spending and its reasons (issue 29 items 1 and 9): named at start,
from the settings (never from an exported variable), a lane that cannot start leaves its
entry pending with the reason (never `done`), a session with nothing to learn costs no
model call, a daily cap stops claims and `queue` shows what the day cost, a failed
specialist's reason is in the queue and the journal."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from orchestrator_support import FakeSessions
from queue_support import costly_transcript, quiet_transcript

from active_memory.cli import main
from active_memory.config import RuntimeConfig
from active_memory.orchestrator import SessionFactory
from active_memory.orchestrator.journal import Journal, store_journal_dir
from active_memory.specialists.providers.base import Request
from active_memory.store import SessionEnd, open_store
from active_memory.worker import Worker, WorkerOptions
from active_memory.worker_state import WorkerFiles, record_spend, utc_day

KEY = "sk-ant-api03-LANETESTkey0123456789abcdefABCDEF"


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(folder))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no claude, no codex
    monkeypatch.setenv("CI", "true")  # plain progress lines
    return folder


def settings(state: Path, text: str) -> None:
    path = state / "active-memory" / "settings.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def enqueue(store: str, transcript: Path, session: str) -> None:
    end = SessionEnd("claude", session, str(transcript), f"/w/{session}", "SessionEnd",
                     model="claude-sonnet-4-5", size=transcript.stat().st_size)  # fmt: skip

    async def write() -> None:
        async with open_store(store) as opened:
            await opened.queue.enqueue(end)

    anyio.run(write, backend="asyncio")


def listed(store: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["queue", "--store", store, "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def fake_claude(folder: Path, script: str) -> Path:
    """A `claude` stand-in that records that it was started (a model call) and then runs
    `script`."""
    path = folder / "claude"
    calls = folder / "claude-calls"
    path.write_text(f"#!/bin/sh\necho started >> {calls}\n{script}\n")
    path.chmod(0o755)
    return path


def test_an_exported_api_key_does_not_choose_the_api_lane(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    store = str(tmp_path / "q.sqlite3")
    enqueue(store, costly_transcript(tmp_path / "c.jsonl", "c-1", "/w/c-1"), "c-1")
    assert main(["worker", "--once", "--store", store]) == 0
    captured = capsys.readouterr()
    first = captured.err.splitlines()[0]
    assert first.startswith("worker: worker pid ") and "lane none (no lane:" in first
    assert "model: each session's own" in first
    assert "worker: 1 pending" in captured.out and "done" not in captured.out
    (entry,) = listed(store, capsys)["entries"]
    assert entry["state"] == "pending" and "no lane" in entry["reason"]


def test_the_api_lane_without_its_package_leaves_the_entry_pending_with_the_reason(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setitem(sys.modules, "anthropic", None)  # as on a base install
    settings(state, f'[worker]\nlane = "api"\n[worker.env]\nANTHROPIC_API_KEY = "{KEY}"\n')
    store = str(tmp_path / "q.sqlite3")
    enqueue(store, costly_transcript(tmp_path / "c.jsonl", "c-1", "/w/c-1"), "c-1")
    assert main(["worker", "--once", "--store", store]) == 0
    captured = capsys.readouterr()
    first = captured.err.splitlines()[0]
    assert f"{sys.executable} -m pip install " in first and "[anthropic]'" in first
    assert "Traceback" not in captured.err and "worker: 1 pending" in captured.out
    (entry,) = listed(store, capsys)["entries"]
    assert entry["state"] == "pending" and "needs the anthropic package" in entry["reason"]
    assert KEY not in json.dumps(entry)


def test_a_lane_that_cannot_start_leaves_the_entry_pending_with_the_reason(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude = fake_claude(tmp_path, 'echo "Invalid API key · Please run /login" >&2; exit 1')
    settings(
        state, f'[worker]\nlane = "claude"\n[worker.env]\nACTIVE_MEMORY_CLAUDE_BIN = "{claude}"\n'
    )
    store = str(tmp_path / "q.sqlite3")
    enqueue(store, costly_transcript(tmp_path / "c.jsonl", "c-1", "/w/c-1"), "c-1")
    assert main(["worker", "--once", "--store", store]) == 0
    captured = capsys.readouterr()
    assert f"lane claude ({claude}; settings (" in captured.err.splitlines()[0]
    assert "worker: 1 pending" in captured.out and "1 done" not in captured.out
    (entry,) = listed(store, capsys)["entries"]
    assert (entry["state"], entry["attempts"]) == ("pending", 1)  # counted: 5 tries at most
    assert "the lane could not run the postmortem" in entry["reason"]
    assert "Invalid API key" in entry["reason"]
    assert entry["not_before"] > entry["updated_at"] + 30


def test_a_session_with_nothing_to_learn_costs_no_model_call(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude = fake_claude(tmp_path, "exit 1")
    settings(
        state, f'[worker]\nlane = "claude"\n[worker.env]\nACTIVE_MEMORY_CLAUDE_BIN = "{claude}"\n'
    )
    store = str(tmp_path / "q.sqlite3")
    enqueue(store, quiet_transcript(tmp_path / "q.jsonl", "q-1", "/w/q-1"), "q-1")
    assert main(["worker", "--once", "--store", store, "--json"]) == 0
    (item,) = json.loads(capsys.readouterr().out)["processed"]
    assert item["state"] == "done" and item["reason"].startswith("nothing to learn")
    assert not (tmp_path / "claude-calls").exists()  # the lane was never started
    assert item["result"]["usage"]["requests"] == 0


def test_without_a_lane_a_session_with_nothing_to_learn_is_still_done(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "q.sqlite3")
    enqueue(store, quiet_transcript(tmp_path / "q.jsonl", "q-1", "/w/q-1"), "q-1")
    assert main(["worker", "--once", "--store", store]) == 0
    assert "worker: 1 done" in capsys.readouterr().out
    (entry,) = listed(store, capsys)["entries"]
    assert entry["state"] == "done" and entry["reason"].startswith("nothing to learn")


def test_the_daily_cap_stops_claims_and_queue_shows_what_the_day_cost(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings(state, "[worker]\ndaily_tokens = 50\n")
    store = str(tmp_path / "q.sqlite3")
    enqueue(store, quiet_transcript(tmp_path / "q.jsonl", "q-1", "/w/q-1"), "q-1")
    record_spend(WorkerFiles.of(store), {"day": utc_day(), "run_id": "claude-earlier",
                                         "input_tokens": 90, "output_tokens": 10,
                                         "cost_usd": 0.25, "requests": 2})  # fmt: skip
    assert main(["worker", "--once", "--store", store]) == 0
    captured = capsys.readouterr()
    assert "daily cap reached: 100 of 50 tokens spent today" in captured.err
    assert "nothing to do" in captured.out
    report = listed(store, capsys)
    assert [e["state"] for e in report["entries"]] == ["pending"]
    today = report["worker"]["today"]
    assert (today["postmortems"], today["tokens"], today["cost_usd"]) == (1, 100, 0.25)
    assert report["worker"]["cap_reached"].startswith("daily cap reached")
    assert main(["queue", "--store", store]) == 0
    shown = capsys.readouterr().out
    assert f"today ({utc_day()} UTC): 1 postmortem(s), 100 tokens, $0.25; daily cap reached" in (
        shown
    )


@pytest.mark.asyncio
async def test_a_failed_specialists_reason_is_in_the_queue_and_the_journal(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "q.sqlite3")
    transcript = costly_transcript(tmp_path / "c.jsonl", "c-1", "/w/c-1")
    await anyio.to_thread.run_sync(enqueue, store, transcript, "c-1")

    async def garbage(request: Request) -> Any:
        return "this is not JSON"

    sessions = FakeSessions({"graph_discovery": garbage})

    def build(config: RuntimeConfig, checkout: Path | None) -> SessionFactory:
        return sessions

    files = WorkerFiles.of(store)
    worker = Worker(store, WorkerOptions(once=True, poll=0.05, files=files), sessions=build)
    async with open_store(store) as opened:
        (item,) = await worker.run(opened.queue)
        (entry,) = await opened.queue.entries()
    assert item.state == "done"
    assert entry.reason.startswith("graph_discovery: failed (not_json")
    journal = Journal(store_journal_dir(store, os.environ)).read("claude-c-1")
    assert journal is not None and journal.reason == entry.reason
    (line,) = Path(files.spend).read_text().splitlines()  # what it cost, for the daily cap
    assert json.loads(line)["run_id"] == "claude-c-1" and json.loads(line)["requests"] >= 1


def test_a_library_warning_with_a_traceback_is_one_line_on_the_worker_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import logging

    from active_memory.worker.display import WorkerDisplay

    display = WorkerDisplay()
    try:
        try:
            raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 5432)")
        except ConnectionRefusedError:
            # What asyncpg's pool logs while the server is down (pool.py, min-size upkeep).
            logging.getLogger("asyncpg.pool").warning(
                "Failed to restore the pool connection floor; retrying", exc_info=True
            )
    finally:
        display.close()
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "worker: asyncpg.pool: Failed to restore the pool connection floor; retrying "
        "(ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 5432))"
    ]
