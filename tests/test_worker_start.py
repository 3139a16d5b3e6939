"""The worker runs itself (issue 29 item 1): session ends start one detached worker per
machine and store, whose lane, model and credentials come from the settings.

- Ten session ends fired at once, with the real `claude` binary as the lane (pointed at
  the scripted model on loopback through `[worker.env]`): one worker process runs every
  postmortem once, and exits when idle.
- With no lane: every entry stays pending with the reason that says what to set; nothing
  is marked done.
- `[worker] enabled = false` starts nothing; the hook's own environment (an exported API
  key, a base URL) never reaches the lane.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.harness import CLAUDE_QUIET, isolated_home, require_harness
from fakes.model_server import ModelServer, Received, Turn, answer
from worker_start_support import (
    costly_ends,
    fire,
    hook_environment,
    settings,
    stop_workers,
    wait_for,
    wait_until_gone,
    worker_log,
)

pytestmark = pytest.mark.slow

KEY = "sk-ant-api03-WORKERSTARTkey0123456789abcdef"
SESSIONS = 10


@pytest.fixture
def world(tmp_path: Path) -> Iterator[dict[str, Path]]:
    state = tmp_path / "state"
    yield {"root": tmp_path, "state": state, "store": state / "lessons.sqlite3",
           "workers": state / "worker"}  # fmt: skip
    stop_workers(state / "worker")


def _specialist_of(request: Received) -> str:
    dump = request.dump()
    for name in ("repository discovery", "graph discovery"):
        if f"You are the {name} specialist" in dump:
            return name.replace(" ", "_")
    return "other"


def test_ten_session_ends_at_once_run_one_worker_that_does_every_postmortem_once(
    world: dict[str, Path],
) -> None:
    claude = require_harness("claude")
    asked: list[str] = []

    def respond(request: Received) -> Turn:
        asked.append(request.dump())
        return answer({"lessons": []})

    with ModelServer([], respond=respond) as server:
        settings(
            world["state"],
            f"""
[worker]
lane = "claude"
idle_seconds = 3
concurrency = 2

[worker.env]
ACTIVE_MEMORY_CLAUDE_BIN = "{claude}"
ANTHROPIC_BASE_URL = "{server.url}"
ANTHROPIC_API_KEY = "{KEY}"
""",
        )
        home = isolated_home(world["root"])
        # What the ending harness has in its environment never reaches the lane: a key and
        # a base URL that would fail every request.
        wrong = {"ANTHROPIC_API_KEY": "sk-ant-wrong", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
        env = hook_environment({**os.environ, **home, **CLAUDE_QUIET}, world["state"], **wrong)
        fire(costly_ends(world["root"], SESSIONS), world["store"], env)
        entries = wait_for(world["store"], lambda found: len(found) == SESSIONS and all(
            e["state"] in ("done", "failed") for e in found), timeout=600)  # fmt: skip
        left = wait_until_gone(world["workers"], timeout=60)
    assert sorted(e["state"] for e in entries) == ["done"] * SESSIONS, entries
    assert all(e["attempts"] == 1 for e in entries)  # none twice
    owners = {e["result"]["worker"] for e in entries}
    assert len(owners) == 1, owners  # one worker process ran them all
    log = worker_log(world["workers"])
    assert log.count("automatic worker pid") == 1, log
    assert "lane claude (" in log and "settings (" in log  # named at start, from the settings
    assert left == []  # it exited once idle
    # Every session's postmortem reached the model once per specialist that had evidence.
    for index in range(SESSIONS):
        run = f"claude-s-{index}"
        assert any(run in dump for dump in asked), run
    spend = (world["workers"] / "lessons.sqlite3.spend.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["run_id"] for line in spend) == sorted(
        f"claude-s-{i}" for i in range(SESSIONS)
    )


def test_with_no_lane_every_session_stays_pending_with_the_reason(
    world: dict[str, Path],
) -> None:
    settings(world["state"], "[worker]\nidle_seconds = 2\n")
    home = isolated_home(world["root"])
    # No claude or codex to find, and an exported key that must not choose the API lane.
    env = hook_environment({**os.environ, **home, "PATH": "/usr/bin:/bin"}, world["state"],
                           ANTHROPIC_API_KEY=KEY)  # fmt: skip
    fire(costly_ends(world["root"], SESSIONS), world["store"], env)
    entries = wait_for(world["store"], lambda found: len(found) == SESSIONS and all(
        e["reason"] for e in found), timeout=300)  # fmt: skip
    left = wait_until_gone(world["workers"], timeout=60)
    assert [e["state"] for e in entries] == ["pending"] * SESSIONS, entries
    for entry in entries:
        assert entry["attempts"] == 0
        assert (
            "no lane: no `claude` or `codex` on PATH and no API key in [worker.env]"
            in (entry["reason"])
        )
        assert "settings.toml set [worker] lane" in entry["reason"]
    log = worker_log(world["workers"])
    assert log.count("automatic worker pid") == 1, log
    assert "lane none (no lane" in log and " done" not in log
    assert left == []


def test_a_worker_switched_off_in_the_settings_is_not_started(world: dict[str, Path]) -> None:
    settings(world["state"], "[worker]\nenabled = false\n")
    env = hook_environment({**os.environ, **isolated_home(world["root"])}, world["state"])
    fire(costly_ends(world["root"], 2), world["store"], env)
    entries = wait_for(world["store"], lambda found: len(found) == 2, timeout=30)
    assert [e["state"] for e in entries] == ["pending", "pending"]
    assert not world["workers"].exists() or worker_log(world["workers"]) == ""
