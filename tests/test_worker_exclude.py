"""The postmortem queue's worker honours `exclude` and `<private>` (docs/privacy.md): the
session it imports loses the excluded paths, so no specialist is asked about them."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from orchestrator_support import FakeSessions
from queue_support import costly_transcript
from test_worker import enqueue, fake, session_end

from active_memory.store import open_store
from active_memory.worker import Worker, WorkerOptions


async def _work(store_path: Path, tmp_path: Path, exclude: str | None) -> FakeSessions:
    repo = tmp_path / "repo"
    repo.mkdir()
    await anyio.run_process(["git", "init", "-q", str(repo)])
    if exclude is not None:
        (repo / ".active-memory.toml").write_text(f"exclude = [{json.dumps(exclude)}]\n")
    transcript = costly_transcript(tmp_path / "c.jsonl", "c-1", str(repo))
    text = transcript.read_text(encoding="utf-8")
    assert "src/checkout/cart.py" in text  # the session touched it
    await enqueue(str(store_path), session_end("c-1", transcript, str(repo)))
    sessions = FakeSessions()
    worker = Worker(str(store_path), WorkerOptions(once=True, poll=0.05), sessions=fake(sessions),
                    env={"ZEROSHOT_STATE_DIR": str(tmp_path / "state")})  # fmt: skip
    async with open_store(str(store_path)) as store:
        (item,) = await worker.run(store.queue)
    assert item.state == "done", item.reason
    return sessions


def _asked(sessions: FakeSessions) -> str:
    return "\n".join(json.dumps(request.input, default=str) for request in sessions.requests)


@pytest.mark.asyncio
async def test_the_worker_never_asks_about_an_excluded_path(
    store_path: Path, tmp_path: Path
) -> None:
    sessions = await _work(store_path, tmp_path, "src/checkout/")
    assert sessions.requests  # discovery was asked about the session
    assert "src/checkout" not in _asked(sessions)


@pytest.mark.asyncio
async def test_without_exclude_the_worker_asks_with_the_path(
    store_path: Path, tmp_path: Path
) -> None:
    # The control: the same session, nothing excluded, reaches the specialists with it.
    sessions = await _work(store_path, tmp_path, None)
    assert "src/checkout" in _asked(sessions)
