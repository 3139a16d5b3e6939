"""The learning loop end to end with the real Claude Code and Codex (issue 12, "Must show").

Session 1 in a real git repository fails twice on a time-out (impact evidence); its end
enqueues it (the harness's session-end hook); the worker imports it and runs the
postmortem through the real CLI lane (`claude -p`, `codex exec`) against the fake model,
which answers with a lesson citing a tracked file; the lesson is published. Session 2
reads that file and the card's text is in the model's next logged request. Session 3
reads it too; its postmortem sees the delivery (the hook recorded it, the import joined
it), so repository maintenance judges the lesson instead of abstaining.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.harness import require_harness
from fakes.model_server import ModelServer, error
from loop_support import (
    LESSON_TITLE,
    NAMESPACE,
    SCHEMA_FILE,
    Harness,
    LoopModel,
    make_repository,
)

MODELS = {"claude": "claude-sonnet-5", "codex": "gpt-5.1-codex"}


def worker(user: Harness, lane: str) -> dict[str, Any]:
    """`active-memory worker --once --lane LANE --json`: what it processed. Session 1's
    turns all failed, so its transcript names no model: `--model` gives the one used."""
    done = user.cli("worker", "--once", "--lane", lane, "--model", MODELS[lane], "--json")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def queued(user: Harness) -> list[dict[str, Any]]:
    listed = user.cli("queue", "--json")
    assert listed.returncode == 0, listed.stderr
    entries: list[dict[str, Any]] = json.loads(listed.stdout)["entries"]
    return entries


def reads_with_the_card(server: ModelServer, marker: str) -> list[bool]:
    """For each model request of one session, whether it carries the card's title."""
    return [LESSON_TITLE in r.dump() for r in server.model_requests() if marker in r.dump()]


def run_loop(user: Harness, server: ModelServer, model: LoopModel, repo: Path) -> None:
    lane = user.name
    # Session 1: two turns whose model requests fail on a time-out; it ends, and its
    # session-end hook puts it in the queue.
    first = user.session(repo, "SESSION-1: run the tests")
    user.session(repo, "SESSION-1: run the tests again", first["session_id"])
    [entry] = queued(user)
    assert (entry["harness"], entry["session_id"], entry["state"]) == (
        lane,
        first["session_id"],
        "pending",
    )

    # The worker imports it and runs the postmortem through the real CLI lane.
    report = worker(user, lane)
    [processed] = report["processed"]
    assert processed["state"] == "done", processed
    result = processed["result"]
    assert result["specialists"]["repository_discovery"] == "reconciled", result
    assert result["published"]["created"] == 1, result
    listed = json.loads(user.cli("lessons", "list", "--json").stdout)["lessons"]
    [lesson] = [x for x in listed if x["title"] == LESSON_TITLE]
    assert lesson["scope"]["repository"] == NAMESPACE
    assert lesson["associations"]["files"] == [SCHEMA_FILE]
    model.lessons[lesson["id"]] = lesson["revision"]

    # Session 2 reads the schema: the card is in the model's next request, not before.
    user.session(repo, "SESSION-2: regenerate the client")
    assert reads_with_the_card(server, "SESSION-2") == [False, True]

    # Session 3 reads it too; its postmortem sees the delivery and maintenance judges the
    # lesson instead of abstaining.
    user.session(repo, "SESSION-3: add a field to the charge")
    assert reads_with_the_card(server, "SESSION-3") == [False, True]
    report = worker(user, lane)
    states = {p["session_id"]: p for p in report["processed"]}
    assert len(states) == 2 and all(p["state"] == "done" for p in states.values()), states
    results: dict[str, dict[str, Any]] = {e["session_id"]: e["result"] for e in queued(user)}
    for session in states:
        # The delivery was recorded by the hook and joined into the session's run record.
        specialists = results[session]["specialists"]
        assert specialists["repository_maintenance"] == "reconciled", results[session]
    assert lesson["id"] in model.maintained  # the maintenance task held the lesson
    after = json.loads(user.cli("lessons", "show", lesson["id"], "--json").stdout)
    assert after["effectiveness"]["runs_delivered"] == 2, after["effectiveness"]


def test_loop_with_the_real_claude_code(tmp_path: Path) -> None:
    claude = require_harness("claude")
    repo = make_repository(tmp_path)
    model = LoopModel(repo=repo)
    with ModelServer(respond=model) as server:
        user = Harness("claude", claude, tmp_path, server, tmp_path / "state")
        user.env["ACTIVE_MEMORY_CLAUDE_BIN"] = str(claude)
        installed = user.cli("hook", "install", "claude", cwd=repo)
        assert installed.returncode == 0, installed.stderr
        run_loop(user, server, model, repo)


def test_loop_with_the_real_codex(tmp_path: Path) -> None:
    codex = require_harness("codex")
    repo = make_repository(tmp_path)
    # No retries in the fake provider's config: each turn fails at once on the 504.
    model = LoopModel(repo=repo, failure=error(504, "upstream request timed out"))
    with ModelServer(respond=model) as server:
        user = Harness("codex", codex, tmp_path, server, tmp_path / "state")
        user.env["ACTIVE_MEMORY_CODEX_BIN"] = str(codex)
        installed = user.cli("hook", "install", "codex", "--trust-project", cwd=repo)
        assert installed.returncode == 0, installed.stderr
        run_loop(user, server, model, repo)
