"""A command card reaches the real `claude` and `codex` with its command's result.

The installed PreToolUse hook (`active-memory hook install`) runs in the real binary
against the scripted model server on loopback (tests/fakes/model_server.py). A stored
lesson is associated with `mix test` only. The model asks for `mix format`, then for
`cd app && timeout 60 mix test test/foo_test.exs`; a `mix` on PATH (a script in the
test's own folder) fails the tests as a missing database would. Shown here (SPEC §8):

- the call whose family is `mix test`, wrapped in `cd … &&` and `timeout 60`, gets the
  card; `mix format` gets nothing;
- the card arrives in the request that carries that call's result (the hook ran before
  the call, the model reads both together): it cannot revise the call that triggered it;
- the hook recorded the delivery, which the session's run record carries.

The binaries come from ACTIVE_MEMORY_TEST_CLAUDE / ACTIVE_MEMORY_TEST_CODEX (`.ci/run`) or
PATH; without them these tests skip, and with CI=true they fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fakes.harness import claude_environment, codex_config, isolated_home, require_harness
from fakes.model_server import ModelServer, Received, text, tool
from recall_support import publish, repository_lesson

from active_memory.runlog.importers.harness_session import import_harness_session

RECOMMENDATION = "Start the database with `docker compose up -d db` before `mix test`."
FAILURE = "** (DBConnection.ConnectionError) tcp connect (localhost:5432): connection refused"
FORMATTED = "formatted 3 files"
CLI = Path(sys.executable).parent / "active-memory"
REAL_HOOK = Path(sys.executable).parent / "active-memory-hook"
MIX_TEST = "cd app && timeout 60 mix test test/foo_test.exs"


def _world(tmp_path: Path) -> dict[str, Any]:
    checkout = tmp_path / "shop"
    (checkout / "app" / "test").mkdir(parents=True)
    (checkout / "app" / "test" / "foo_test.exs").write_text("# a test\n", encoding="utf-8")
    git = ["git", "-C", str(checkout)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "git@github.com:acme/shop.git"], check=True)
    store = tmp_path / "lessons.sqlite3"
    lesson = repository_lesson(
        "Start the database before mix test", RECOMMENDATION, commands=["mix test"],
        namespace="repo:github.com/acme/shop",
    )  # fmt: skip
    lesson_id = publish(store, [lesson]).created[0][0]
    # `mix`: formats quietly, fails its tests as a missing database does.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mix").write_text(
        f'#!/bin/sh\nif [ "$1" = test ]; then echo "{FAILURE}"; exit 1; fi\necho "{FORMATTED}"\n',
        encoding="utf-8",
    )
    (bin_dir / "mix").chmod(0o755)
    return {"checkout": checkout, "store": store, "lesson": lesson_id, "bin": bin_dir}


def _env(world: dict[str, Any], base: dict[str, str], tmp_path: Path) -> dict[str, str]:
    # Codex runs `bash -lc`, whose /etc/profile resets PATH: the profile puts `mix` back,
    # as a developer's own profile would.
    profile = Path(base["HOME"]) / ".bash_profile"
    profile.write_text(f'export PATH="{world["bin"]}:$PATH"\n', encoding="utf-8")
    return base | {
        "PATH": f"{world['bin']}:{base['PATH']}",
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
        "ACTIVE_MEMORY_STORE": str(world["store"]),
    }


def _install(world: dict[str, Any], env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [str(CLI), "hook", "install", *args, "--hook-command", str(REAL_HOOK)],
        cwd=world["checkout"], env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _with_result(requests: list[Received], marker: str) -> list[Received]:
    return [r for r in requests if any(marker in result for result in r.tool_results())]


def _assert_card_came_with_the_mix_test_result(requests: list[Received]) -> None:
    formatted = _with_result(requests, FORMATTED)
    failed = _with_result(requests, FAILURE)
    assert formatted and failed, [r.dump()[:400] for r in requests]
    # The request carrying only `mix format`'s result has no card; every request before
    # the `mix test` result has none either.
    first_failed = requests.index(failed[0])
    assert all(RECOMMENDATION not in r.dump() for r in requests[:first_failed])
    # The request that brings `mix test`'s result brings the card with it, placed with
    # that call: after the model's call (Claude Code: a system message after the result;
    # Codex: a developer message before the output), never earlier in the conversation.
    body = failed[0].body
    items = body.get("messages") or body.get("input") or []
    called = next(i for i, item in enumerate(items) if MIX_TEST in json.dumps(item))
    assert RECOMMENDATION not in json.dumps(items[:called])
    assert RECOMMENDATION in json.dumps(items[called:])


def test_claude_code_gets_the_command_card_with_the_mix_test_result(tmp_path: Path) -> None:
    claude = require_harness("claude")
    world = _world(tmp_path)
    with ModelServer() as server:
        server.push(
            tool("Bash", {"command": "mix format", "description": "format"}),
            tool("Bash", {"command": MIX_TEST, "description": "run the tests"}),
            text("The tests need the database."),
        )
        env = _env(world, claude_environment(tmp_path, server.url, "sk-ant-test"), tmp_path)
        _install(world, env, "claude")
        done = subprocess.run(
            [str(claude), "-p", "Run the tests", "--allowedTools", "Bash"],
            cwd=world["checkout"], env=env, capture_output=True, text=True,
            timeout=180, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        requests = server.model_requests()
    _assert_card_came_with_the_mix_test_result(requests)
    # The delivery the hook recorded is in the session's run record, for the mix test call.
    (transcript,) = (Path(env["HOME"]) / ".claude" / "projects").rglob("*.jsonl")
    record = import_harness_session("claude", transcript, session_id=None, cwd=None, env=env)
    assert record.deliveries is not None
    assert [d.lesson for d in record.deliveries] == [world["lesson"]]
    failures = [(f.family, f.command) for f in record.tool_failures]
    assert failures == [("mix test", MIX_TEST)]


def test_codex_gets_the_command_card_with_the_mix_test_result(tmp_path: Path) -> None:
    codex = require_harness("codex")
    world = _world(tmp_path)
    with ModelServer() as server:
        env = _env(world, isolated_home(tmp_path) | {"FAKE_OPENAI_KEY": "sk-t"}, tmp_path)
        codex_config(Path(env["CODEX_HOME"]), server.openai_url)
        _install(world, env, "codex", "--trust-project")
        server.push(
            tool("exec_command", {"cmd": "mix format"}),
            tool("exec_command", {"cmd": MIX_TEST}),
            text("The tests need the database."),
        )
        done = subprocess.run(
            [str(codex), "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access",
             "--model", "gpt-5-codex", "Run the tests"],
            cwd=world["checkout"], env=env, capture_output=True, text=True,
            timeout=180, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        requests = server.model_requests()
    _assert_card_came_with_the_mix_test_result(requests)
    hook_log = tmp_path / "state" / "active-memory" / "recall" / "hook.log"
    assert not hook_log.exists(), hook_log.read_text()
    (rollout,) = (Path(env["CODEX_HOME"]) / "sessions").rglob("rollout-*.jsonl")
    record = import_harness_session("codex", rollout, session_id=None, cwd=None, env=env)
    assert record.deliveries is not None
    assert [d.lesson for d in record.deliveries] == [world["lesson"]]
    assert [f.family for f in record.tool_failures] == ["mix test"]
