"""The queue with the real Claude Code binary, against the scripted model server, in an
isolated HOME: its `SessionEnd` hook enqueues the session through `active-memory-hook
session-end claude`, and `active-memory worker --lane claude` runs a postmortem through
the real `claude -p`. Skips locally without the binary; runs in CI (`CI=true`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from fakes.harness import claude_environment, require_harness
from fakes.model_server import ModelServer, answer, text
from queue_support import costly_transcript

from active_memory.store import SessionEnd, open_store

KEY = "sk-ant-api03-QUEUETESTkey0123456789abcdef"
BIN = Path(sys.executable).parent


@pytest.fixture
def claude() -> Path:
    return require_harness("claude")


def test_a_real_claude_session_end_enqueues_the_session(claude: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    store = tmp_path / "lessons.sqlite3"
    with ModelServer([], default=text("Hello there.")) as server:
        environment = claude_environment(tmp_path, server.url, KEY)
        settings = Path(environment["HOME"]) / ".claude" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        command = f"{BIN / 'active-memory-hook'} session-end claude --store {store}"
        hooks = {"SessionEnd": [{"hooks": [{"type": "command", "command": command}]}]}
        settings.write_text(json.dumps({"hooks": hooks}))
        done = subprocess.run(
            [str(claude), "-p", "say hi"], cwd=repo, capture_output=True, text=True, timeout=120,
            env=environment | {"ZEROSHOT_STATE_DIR": str(tmp_path / "state")}, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Hello there." in done.stdout
    with sqlite3.connect(store) as raw:
        rows = raw.execute(
            "SELECT harness, session_id, transcript, cwd, event, final, state FROM postmortem_queue"
        ).fetchall()
    [(harness, session, transcript, cwd, event, final, state)] = rows
    assert (harness, cwd, event, final, state) == ("claude", str(repo), "SessionEnd", 1, "pending")
    assert Path(transcript).is_file() and session in Path(transcript).name
    assert not (tmp_path / "state" / "active-memory" / "recall" / "hook.log").exists()


def test_the_worker_runs_a_postmortem_through_the_real_claude_lane(
    claude: Path, tmp_path: Path
) -> None:
    store = str(tmp_path / "lessons.sqlite3")
    transcript = costly_transcript(tmp_path / "c.jsonl", "c-1", "/w/costly")
    size = transcript.stat().st_size
    end = SessionEnd(harness="claude", session_id="c-1", transcript=str(transcript),
                     cwd="/w/costly", event="SessionEnd", size=size)  # fmt: skip

    async def enqueue() -> None:
        async with open_store(store) as opened:
            await opened.queue.enqueue(end)

    anyio.run(enqueue, backend="asyncio")
    with ModelServer([], default=answer({"lessons": []})) as server:
        environment = os.environ | claude_environment(tmp_path, server.url, KEY) | {
            "ACTIVE_MEMORY_CLAUDE_BIN": str(claude), "CI": "true",
            "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
        }  # fmt: skip
        done = subprocess.run(
            [str(BIN / "active-memory"), "worker", "--once", "--store", store, "--lane", "claude",
             "--json"],
            capture_output=True, text=True, timeout=300, env=environment, check=False,
        )  # fmt: skip
        asked = server.model_requests()
    assert done.returncode == 0, done.stderr
    [item] = json.loads(done.stdout)["processed"]
    assert item["state"] == "done", item
    specialists = item["result"]["specialists"]
    assert specialists["graph_discovery"] == specialists["repository_discovery"] == "reconciled"
    # Both discovery specialists asked the model through `claude -p`, on the session's model.
    assert len(asked) >= 2
    assert {r.body.get("model") for r in asked} == {"claude-sonnet-4-5-20250929"}


def test_a_claude_p_that_stops_before_its_first_turn_is_done_with_nothing_to_learn(
    claude: Path, tmp_path: Path
) -> None:
    # `claude -p` with no prompt refuses to start, yet fires SessionEnd naming a
    # transcript it never writes (2.1.332): the worker must neither fail it nor exit 1.
    store = tmp_path / "lessons.sqlite3"
    with ModelServer([], default=text("never asked")) as server:
        environment = claude_environment(tmp_path, server.url, KEY)
        settings = Path(environment["HOME"]) / ".claude" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        command = f"{BIN / 'active-memory-hook'} session-end claude --store {store}"
        hooks = {"SessionEnd": [{"hooks": [{"type": "command", "command": command}]}]}
        settings.write_text(json.dumps({"hooks": hooks}))
        env = environment | {"ZEROSHOT_STATE_DIR": str(tmp_path / "state")}
        done = subprocess.run(
            [str(claude), "-p"], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=120, env=env, check=False,
        )  # fmt: skip
        assert "Input must be provided" in done.stderr
        worker = subprocess.run(
            [str(BIN / "active-memory"), "worker", "--once", "--store", str(store), "--json"],
            capture_output=True, text=True, timeout=120, env=os.environ | env, check=False,
        )  # fmt: skip
        assert server.model_requests() == []
    assert worker.returncode == 0, worker.stderr
    (item,) = json.loads(worker.stdout)["processed"]
    assert item["state"] == "done"
    assert item["reason"] == "nothing to learn: the session ended before its transcript was written"
