"""The learning loop end to end with the real Claude Code and Codex (issue 12, "Must show").

Session 1 in a real git repository times out twice (impact evidence); its postmortem runs
through the real `claude -p` lane against the fake model, which answers with a lesson
citing a tracked file; the lesson is published; session 2 reads that file and the card's
text is in the model's next logged request.
"""

from __future__ import annotations

import json
from pathlib import Path

from fakes.harness import require_harness
from fakes.model_server import ModelServer, error
from loop_support import LESSON_TITLE, NAMESPACE, SCHEMA_FILE, Harness, LoopModel, make_repository


def claude_transcript(user: Harness, session_id: str) -> Path:
    found = list((Path(user.env["HOME"]) / ".claude" / "projects").rglob(f"{session_id}.jsonl"))
    assert len(found) == 1, found
    return found[0]


def session_runtime(root: Path, harness: str, model: str) -> Path:
    """The runtime plan for a session-derived run (a one-node `worker` graph)."""
    provider = "anthropic" if harness == "claude" else "openai"
    document = {
        "harness": harness,
        "provider": provider,
        "size": "standard",
        "nodes": {"worker": {"kind": "agent", "model": model}},
    }
    path = root / f"runtime-{harness}.json"
    path.write_text(json.dumps(document))
    return path


def test_claude_session_cost_becomes_a_lesson_that_reaches_the_next_session(
    tmp_path: Path,
) -> None:
    claude = require_harness("claude")
    repo = make_repository(tmp_path)
    model = LoopModel(repo=repo)
    with ModelServer(respond=model) as server:
        user = Harness("claude", claude, tmp_path, server, tmp_path / "state")
        user.env["ACTIVE_MEMORY_CLAUDE_BIN"] = str(claude)
        installed = user.cli("hook", "install", "claude", cwd=repo)
        assert installed.returncode == 0, installed.stderr

        # Session 1: two turns whose model requests time out (impact evidence).
        first = user.session(repo, "SESSION-1: run the tests")
        session_id = first["session_id"]
        user.session(repo, "SESSION-1: run the tests again", resume=session_id)
        record = tmp_path / "session-1.run.json"
        imported = user.cli("import", "claude", str(claude_transcript(user, session_id)),
                            "-o", str(record))  # fmt: skip
        assert imported.returncode == 0, imported.stderr
        evidence = json.loads(user.cli("evidence", str(record), "--json").stdout)["evidence"]
        assert [(e["kind"], e["count"]) for e in evidence] == [("timeout_crash", 2)]

        # Its postmortem through the real claude -p lane publishes the fake model's lesson.
        config = session_runtime(tmp_path, "claude", "claude-sonnet-5")
        done = user.cli("postmortem", str(record), "--config", str(config),
                        "--lane", "claude", "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["lane"]["name"] == "claude"
        assert report["specialists"]["repository_discovery"]["status"] == "reconciled"
        assert report["published"]["created"] == 1
        listed = json.loads(user.cli("lessons", "list", "--json").stdout)["lessons"]
        [published] = [x for x in listed if x["title"] == LESSON_TITLE]
        assert published["scope"]["repository"] == NAMESPACE
        assert published["associations"]["files"] == [SCHEMA_FILE]

        # Session 2 reads the schema: the hook delivers the card into the next request.
        before = len(server.model_requests())
        user.session(repo, "SESSION-2: regenerate the client")
        requests = [r for r in server.model_requests()[before:] if "SESSION-2" in r.dump()]
        assert len(requests) >= 2
        assert LESSON_TITLE not in requests[0].dump()
        assert any(LESSON_TITLE in r.dump() for r in requests[1:])


def test_codex_session_cost_becomes_a_lesson_that_reaches_the_next_session(
    tmp_path: Path,
) -> None:
    codex = require_harness("codex")
    repo = make_repository(tmp_path)
    # codex has no retries here (the fake provider's config): two turns fail at once.
    model = LoopModel(repo=repo, failure=error(504, "upstream request timed out"))
    with ModelServer(respond=model) as server:
        user = Harness("codex", codex, tmp_path, server, tmp_path / "state")
        user.env["ACTIVE_MEMORY_CODEX_BIN"] = str(codex)
        installed = user.cli("hook", "install", "codex", cwd=repo)
        assert installed.returncode == 0, installed.stderr

        # Session 1: two turns that fail on a time-out (impact evidence).
        first = user.session(repo, "SESSION-1: run the tests")
        thread = first["session_id"]
        user.session(repo, "SESSION-1: run the tests again", thread)
        [rollout] = Path(user.env["CODEX_HOME"]).rglob(f"rollout-*{thread}.jsonl")
        record = tmp_path / "session-1.run.json"
        imported = user.cli("import", "codex", str(rollout), "-o", str(record))
        assert imported.returncode == 0, imported.stderr
        evidence = json.loads(user.cli("evidence", str(record), "--json").stdout)["evidence"]
        assert [(e["kind"], e["count"]) for e in evidence] == [("timeout_crash", 2)]

        # Its postmortem through the real codex exec lane publishes the lesson.
        config = session_runtime(tmp_path, "codex", "gpt-5.1-codex")
        done = user.cli("postmortem", str(record), "--config", str(config),
                        "--lane", "codex", "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["lane"]["name"] == "codex"
        assert report["published"]["created"] == 1
        listed = json.loads(user.cli("lessons", "list", "--json").stdout)["lessons"]
        [published] = [x for x in listed if x["title"] == LESSON_TITLE]
        assert published["scope"]["repository"] == NAMESPACE

        # Session 2 reads the schema: the hook delivers the card into the next request.
        # (Trust for the project and its hook is given on the command line here.)
        before = len(server.model_requests())
        user.session(repo, "SESSION-2: regenerate the client", None, "--trust",
                     "--dangerously-bypass-hook-trust")  # fmt: skip
        requests = [r for r in server.model_requests()[before:] if "SESSION-2" in r.dump()]
        assert len(requests) >= 2
        assert '"openapi"' in requests[1].tool_results()[0]  # the agent read the schema
        assert LESSON_TITLE not in requests[0].dump()
        assert any(LESSON_TITLE in r.dump() for r in requests[1:])
