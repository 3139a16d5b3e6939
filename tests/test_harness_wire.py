"""The real `claude` and `codex` binaries talk to the fake model server (isolated HOME).

These pin the wire formats the fake speaks: if a harness release changes what it sends
or parses, these fail before any lane test does.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fakes.harness import claude_environment, codex_config, isolated_home, require_harness
from fakes.model_server import ModelServer, answer, text

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def test_real_claude_print_mode_answers_through_the_fake_server(tmp_path: Path) -> None:
    claude = require_harness("claude")
    with ModelServer([answer({"ok": True})]) as server:
        done = subprocess.run(
            [str(claude), "-p", "--output-format", "json", "--model", "claude-sonnet-5",
             "--json-schema", json.dumps(SCHEMA)],
            input=b"Is this fine?",
            env=claude_environment(tmp_path, server.url, "sk-ant-test"),
            cwd=tmp_path,
            capture_output=True,
            timeout=120,
            check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert result["structured_output"] == {"ok": True}
    [request] = server.model_requests()
    assert request.route == "/v1/messages"
    assert request.body["stream"] is True
    assert request.headers["x-api-key"] == "sk-ant-test"
    assert "Is this fine?" in request.dump()


def test_real_codex_exec_answers_through_the_fake_server(tmp_path: Path) -> None:
    codex = require_harness("codex")
    env = isolated_home(tmp_path) | {"FAKE_OPENAI_KEY": "sk-test"}
    with ModelServer([text("all fine")]) as server:
        codex_config(Path(env["CODEX_HOME"]), server.openai_url)
        done = subprocess.run(
            [str(codex), "exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only",
             "--model", "gpt-5.1-codex", "-"],
            input=b"Is this fine?",
            env=env,
            cwd=tmp_path,
            capture_output=True,
            timeout=120,
            check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    events = [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]
    messages = [
        e["item"]["text"] for e in events if e.get("item", {}).get("type") == "agent_message"
    ]
    assert messages == ["all fine"]
    [request] = server.model_requests()
    assert request.route == "/v1/responses"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert "Is this fine?" in request.dump()
