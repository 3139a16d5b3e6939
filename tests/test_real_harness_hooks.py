"""The installed hooks really run in the real `claude` and `codex` (isolated HOME, fake model).

`active-memory hook install` writes the hooks as a user would get them; the harness then
runs against the scripted model server on loopback (tests/fakes/model_server.py), which
logs every request. Shown here:

- the PreToolUse hook's card reaches the model in the next logged request;
- the SessionEnd hook runs at the end of the session with the session's ID and transcript;
- the session's run record (import_harness_session) carries that delivery;
- Codex runs the hooks only because the installer trusted them (without the trust
  entries the same session runs no hook at all);
- once the queue's session-end entry point is in the package, the ended session is in
  the store's postmortem queue.

The hook command is installed through `--hook-command` as a small wrapper named
`active-memory-hook` that logs its arguments and input, then runs the real console script,
so each hook invocation is seen whatever the session-end entry point does with it. The
binaries come from ACTIVE_MEMORY_TEST_CLAUDE / ACTIVE_MEMORY_TEST_CODEX (`.ci/run`) or
PATH; without them these tests skip, and with CI=true they fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import tomlkit
from fakes.harness import claude_environment, codex_config, isolated_home, require_harness
from fakes.model_server import ModelServer, text, tool
from recall_support import publish, repository_lesson

from active_memory.runlog.importers.harness_session import import_harness_session

RECOMMENDATION = "Run make api-client after editing api/schema.json; never edit the client."
TITLE = "Regenerate the API client through the wrapper"
CLI = Path(sys.executable).parent / "active-memory"
REAL_HOOK = Path(sys.executable).parent / "active-memory-hook"


def _world(tmp_path: Path) -> dict[str, Any]:
    checkout = tmp_path / "api"
    (checkout / "src" / "api").mkdir(parents=True)
    (checkout / "src" / "api" / "client.py").write_text("CLIENT = 1\n", encoding="utf-8")
    git = ["git", "-C", str(checkout)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "git@github.com:acme/api.git"], check=True)
    store = tmp_path / "lessons.sqlite3"
    receipt = publish(
        store, [repository_lesson(TITLE, RECOMMENDATION, files=["src/api/client.py"])]
    )
    lesson_id = receipt.created[0][0]
    # The hook command the installer writes: a wrapper that logs each call, then runs
    # the real console script with the same arguments and input.
    wrapper = tmp_path / "bin" / "active-memory-hook"
    wrapper.parent.mkdir()
    calls = tmp_path / "hook-calls.jsonl"
    wrapper.write_text(
        "#!/bin/sh\n"
        'input="$(cat)"\n'
        f'printf \'{{"args": "%s", "input": %s}}\\n\' "$*" "$input" >> {calls}\n'
        f'printf \'%s\' "$input" | exec {REAL_HOOK} "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    return {
        "checkout": checkout,
        "store": store,
        "lesson": lesson_id,
        "wrapper": wrapper,
        "calls": calls,
        "state": tmp_path / "state",
    }


def _active_memory_env(world: dict[str, Any], base: dict[str, str]) -> dict[str, str]:
    return base | {
        "ZEROSHOT_STATE_DIR": str(world["state"]),
        "ACTIVE_MEMORY_STORE": str(world["store"]),
    }


def _install(world: dict[str, Any], env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [str(CLI), "hook", "install", *args, "--hook-command", str(world["wrapper"])],
        cwd=world["checkout"], env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _assert_queued(env: dict[str, str], session_id: str) -> None:
    # The session-end entry point is the queue's (`queue` branch, docs/queue.md): once it
    # is in the package, the session the real harness ended must be in the store's queue.
    if importlib.util.find_spec("active_memory.commands.queue") is None:
        return
    done = subprocess.run(
        [str(CLI), "queue", "--json"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    entries = json.loads(done.stdout)["entries"]
    assert [e["session_id"] for e in entries if e["session_id"] == session_id] == [session_id]


def _calls(world: dict[str, Any]) -> list[dict[str, Any]]:
    if not world["calls"].exists():
        return []
    return [json.loads(line) for line in world["calls"].read_text().splitlines() if line]


def test_claude_code_runs_the_installed_hooks(tmp_path: Path) -> None:
    claude = require_harness("claude")
    world = _world(tmp_path)
    target = str(world["checkout"] / "src" / "api" / "client.py")
    with ModelServer() as server:
        server.push(tool("Read", {"file_path": target}), text("Read it."))
        env = _active_memory_env(world, claude_environment(tmp_path, server.url, "sk-ant-test"))
        _install(world, env, "claude")
        done = subprocess.run(
            [str(claude), "-p", "Read the API client", "--allowedTools", "Read"],
            cwd=world["checkout"], env=env, capture_output=True, text=True,
            timeout=180, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        requests = server.model_requests()
    # The card reached the model with the tool result, in the next logged request.
    after_tool = [r for r in requests if r.tool_results()]
    assert after_tool, [r.dump()[:300] for r in requests]
    assert RECOMMENDATION in after_tool[0].dump()
    assert all(RECOMMENDATION not in r.dump() for r in requests if not r.tool_results())
    calls = _calls(world)
    # The context hooks run too: the new prompt, then the batch that confirms the card.
    assert [c["args"] for c in calls] == [
        "context claude", "claude", "context claude", "session-end claude"
    ]  # fmt: skip
    assert [c["input"]["hook_event_name"] for c in calls[::2]] == [
        "UserPromptSubmit",
        "PostToolBatch",
    ]
    end = calls[3]["input"]
    assert end["hook_event_name"] == "SessionEnd"
    # The session's run record carries the delivery the hook recorded.
    record = import_harness_session(
        "claude", Path(end["transcript_path"]), session_id=end["session_id"], cwd=None,
        env=env,
    )  # fmt: skip
    assert record.deliveries is not None
    assert [(d.lesson, d.session) for d in record.deliveries] == [
        (world["lesson"], end["session_id"])
    ]
    assert any(r.tool == "Read" and r.paths == ("src/api/client.py",) for r in record.receipts)
    _assert_queued(env, end["session_id"])


def _codex_run(codex: Path, world: dict[str, Any], env: dict[str, str], server: Any) -> None:
    server.push(tool("exec_command", {"cmd": "cat src/api/client.py"}), text("Read it."))
    done = subprocess.run(
        [str(codex), "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access",
         "--model", "gpt-5-codex", "Read the API client"],
        cwd=world["checkout"], env=env, capture_output=True, text=True,
        timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_codex_runs_the_installed_hooks_once_trusted(tmp_path: Path) -> None:
    codex = require_harness("codex")
    world = _world(tmp_path)
    with ModelServer() as server:
        env = _active_memory_env(world, isolated_home(tmp_path) | {"FAKE_OPENAI_KEY": "sk-t"})
        config = codex_config(Path(env["CODEX_HOME"]), server.openai_url)
        _install(world, env, "codex", "--trust-project")
        trusted = config.read_text(encoding="utf-8")

        # Without the hook trust entries (the project still trusted) no hook runs.
        document = tomlkit.parse(trusted)
        del document["hooks"]
        config.write_text(tomlkit.dumps(document), encoding="utf-8")
        _codex_run(codex, world, env, server)
        assert _calls(world) == []
        untrusted = server.model_requests()
        assert all(RECOMMENDATION not in r.dump() for r in untrusted)

        # With the entries the installer wrote, both hooks run and the card arrives.
        config.write_text(trusted, encoding="utf-8")
        _codex_run(codex, world, env, server)
        requests = server.model_requests()[len(untrusted) :]
    after_tool = [r for r in requests if r.tool_results()]
    assert after_tool and RECOMMENDATION in after_tool[0].dump()
    calls = _calls(world)
    assert [c["args"] for c in calls] == ["codex", "session-end codex"]
    pre, end = calls[0]["input"], calls[1]["input"]
    assert pre["hook_event_name"] == "PreToolUse" and end["hook_event_name"] == "SessionEnd"
    assert pre["session_id"] == end["session_id"]
    record = import_harness_session(
        "codex", Path(end["transcript_path"]), session_id=None, cwd=None, env=env
    )
    # The rollout's own session ID is the one the hooks keyed their records by.
    assert record.deliveries is not None
    assert [d.lesson for d in record.deliveries] == [world["lesson"]]
    assert os.path.isabs(end["transcript_path"])
    _assert_queued(env, end["session_id"])


def test_codex_runs_a_user_level_install(tmp_path: Path) -> None:
    # `--user`: the hooks live in $CODEX_HOME/hooks.json, keyed by that path; no project
    # trust is needed.
    codex = require_harness("codex")
    world = _world(tmp_path)
    with ModelServer() as server:
        env = _active_memory_env(world, isolated_home(tmp_path) | {"FAKE_OPENAI_KEY": "sk-t"})
        codex_config(Path(env["CODEX_HOME"]), server.openai_url)
        _install(world, env, "codex", "--user")
        _codex_run(codex, world, env, server)
        requests = server.model_requests()
    assert [c["args"] for c in _calls(world)] == ["codex", "session-end codex"]
    assert any(RECOMMENDATION in r.dump() for r in requests if r.tool_results())
