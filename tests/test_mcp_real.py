"""The real `claude` and `codex` binaries call `active-memory mcp`'s tools (docs/mcp.md).

`hook install claude --mcp` registers the server as a user would get it (project
`.mcp.json`, approved in `.claude/settings.json`); Claude Code, driven by the scripted
model server on loopback (tests/fakes/model_server.py) with an isolated HOME, then calls
`search_lessons` and `get_lesson`. The tool results the model receives in the next
logged requests are the server's answers, and the card handed out is recorded as a
delivery for the session's import. Skips without the binary; fails with CI=true.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.harness import claude_environment, codex_config, isolated_home, require_harness
from fakes.model_server import ModelServer, text, tool
from recall_support import publish, repository_lesson

from active_memory.recall.records import read_deliveries

pytest.importorskip("mcp")

CLI = Path(sys.executable).parent / "active-memory"
TITLE = "Regenerate the API client through the wrapper"
RECOMMENDATION = "Run make api-client after editing api/schema.json; never edit the client."
SEARCH = "mcp__active-memory__search_lessons"
GET = "mcp__active-memory__get_lesson"


def test_claude_code_calls_search_lessons_and_get_lesson(tmp_path: Path) -> None:
    claude = require_harness("claude")
    checkout = tmp_path / "api"
    (checkout / "src" / "api").mkdir(parents=True)
    git = ["git", "-C", str(checkout)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "git@github.com:acme/api.git"], check=True)
    store = tmp_path / "lessons.sqlite3"
    receipt = publish(
        store, [repository_lesson(TITLE, RECOMMENDATION, files=["src/api/client.py"])]
    )
    lesson_id = receipt.created[0][0]
    state = tmp_path / "state"
    with ModelServer() as server:
        server.push(
            tool(SEARCH, {"query": "src/api/client.py"}),
            tool(GET, {"id": lesson_id}),
            text("Noted."),
        )
        env = claude_environment(tmp_path, server.url, "sk-ant-test") | {
            "ZEROSHOT_STATE_DIR": str(state),
            "ACTIVE_MEMORY_STORE": str(store),
            # Claude Code defers MCP tools behind ToolSearch by default; off, the tools
            # are offered directly, so the script can call them by name.
            "ENABLE_TOOL_SEARCH": "false",
        }
        # A project's .mcp.json servers are approved only in a trusted project: what
        # accepting Claude Code's trust dialog once writes to ~/.claude.json.
        state_file = Path(env["HOME"]) / ".claude.json"
        state_file.write_text(
            json.dumps({"projects": {str(checkout): {"hasTrustDialogAccepted": True}}}),
            encoding="utf-8",
        )
        done = subprocess.run(
            [str(CLI), "hook", "install", "claude", "--mcp"],
            cwd=checkout, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        done = subprocess.run(
            [str(claude), "-p", "What do we know about the API client?",
             "--allowedTools", f"{SEARCH},{GET}", "--output-format", "json"],
            cwd=checkout, env=env, capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        requests = server.model_requests()
    offered = [r for r in requests if SEARCH in r.tool_names()]
    assert offered, ([r.tool_names() for r in requests], done.stdout[-2000:])
    results = [result for r in requests for result in r.tool_results()]
    joined = "\n".join(results)
    assert lesson_id in joined and TITLE in joined and "file:src/api/client.py" in joined
    assert RECOMMENDATION in joined  # get_lesson's card reached the model
    # The card handed out is a delivery of the session Claude Code ran, so the session's
    # run record (import_harness_session) will carry it.
    session = json.loads(done.stdout)["session_id"]
    recall = str(state / "active-memory" / "recall")
    delivered = read_deliveries(recall, f"session:{session}")
    assert [(d["lesson"], d["session"]) for d in delivered] == [(lesson_id, session)]


def test_codex_calls_search_lessons_and_get_lesson(tmp_path: Path) -> None:
    # Codex 0.171 offers each MCP server's tools as a Responses API `namespace` tool
    # (`mcp__active_memory`); the model calls a function inside it by name + namespace.
    codex = require_harness("codex")
    checkout = tmp_path / "api"
    (checkout / "src" / "api").mkdir(parents=True)
    git = ["git", "-C", str(checkout)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "git@github.com:acme/api.git"], check=True)
    store = tmp_path / "lessons.sqlite3"
    receipt = publish(
        store, [repository_lesson(TITLE, RECOMMENDATION, files=["src/api/client.py"])]
    )
    lesson_id = receipt.created[0][0]
    namespace = "mcp__active_memory"
    with ModelServer() as server:
        server.push(
            tool("search_lessons", {"query": "src/api/client.py"}, namespace=namespace),
            tool("get_lesson", {"id": lesson_id}, namespace=namespace),
            text("Noted."),
        )
        env = isolated_home(tmp_path) | {
            "FAKE_OPENAI_KEY": "sk-test",
            "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
            "ACTIVE_MEMORY_STORE": str(store),
        }
        codex_config(Path(env["CODEX_HOME"]), server.openai_url)
        done = subprocess.run(
            [str(CLI), "hook", "install", "codex", "--user", "--mcp"],
            cwd=checkout, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        done = subprocess.run(
            # Codex 0.171 starts its first turn without an MCP server still starting (ours
            # answers in about a second, more under load); the grace makes it wait, as
            # docs/mcp.md tells users to set.
            [str(codex), "exec", "-c", "mcp_optional_startup_grace_ms=30000",
             "--skip-git-repo-check", "--sandbox", "danger-full-access",
             "--model", "gpt-5-codex", "What do we know about the API client?"],
            cwd=checkout, env=env, capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        requests = server.model_requests()
    assert any(namespace in r.tool_names() for r in requests), (
        [r.tool_names() for r in requests],
        done.stderr[-3000:],
    )
    joined = "\n".join(result for r in requests for result in r.tool_results())
    assert lesson_id in joined and "file:src/api/client.py" in joined, joined[-2000:]
    assert RECOMMENDATION in joined  # get_lesson's card reached the model
