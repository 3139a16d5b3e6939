"""The installed plugins really run in the real `opencode` (1.18) and `hermes` (0.19).

Each binary runs one session in an isolated HOME against the scripted model server on
loopback (tests/harness_drive.py says how each is driven offline). The model asks for
a read of the file a stored lesson names, then a shell command that fails: the card must
be in the request that carries the read's result and in none before it. The session's
end must be in the postmortem queue, final, naming the client's own session database;
that database imports (`import_harness_session`, what the worker and `import
opencode|hermes` use) into a run record with the hook's delivery, the read's receipt
and the failed command as a tool failure.

The binaries come from ACTIVE_MEMORY_TEST_OPENCODE / _HERMES (`.ci/run`) or PATH;
without them these tests skip, and with CI=true they fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fakes.harness import require_harness
from fakes.model_server import ModelServer, Received, text, tool
from harness_drive import (
    hermes_database,
    hermes_environment,
    opencode_database,
    opencode_environment,
    opencode_side,
    run_hermes,
    run_opencode,
)
from recall_support import publish, repository_lesson

from active_memory.runlog.importers.harness_session import import_harness_session

RECOMMENDATION = "Run make api-client after editing api/schema.json; never edit the client."
CLI = Path(sys.executable).parent / "active-memory"
REAL_HOOK = Path(sys.executable).parent / "active-memory-hook"
FAILING = "make api-client-check"


def _world(tmp_path: Path) -> dict[str, Any]:
    checkout = tmp_path / "api"
    (checkout / "src" / "api").mkdir(parents=True)
    (checkout / "src" / "api" / "client.py").write_text("CLIENT = 1\n", encoding="utf-8")
    git = ["git", "-C", str(checkout)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "git@github.com:acme/api.git"], check=True)
    store = tmp_path / "lessons.sqlite3"
    lesson = repository_lesson("Regenerate the API client", RECOMMENDATION,
                               files=["src/api/client.py"])  # fmt: skip
    lesson_id = publish(store, [lesson]).created[0][0]
    return {"checkout": checkout, "store": store, "lesson": lesson_id, "root": tmp_path}


def _ours(world: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    return env | {"ZEROSHOT_STATE_DIR": str(world["root"] / "state"),
                  "ACTIVE_MEMORY_STORE": str(world["store"])}  # fmt: skip


def _install(world: dict[str, Any], env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(CLI), "hook", "install", *args, "--hook-command", str(REAL_HOOK)],
        cwd=world["checkout"], env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _card_with_the_read(requests: list[Received]) -> None:
    after = [r for r in requests if r.tool_results()]
    assert after, [r.dump()[:300] for r in requests]
    assert RECOMMENDATION in after[0].dump()
    assert all(RECOMMENDATION not in r.dump() for r in requests if not r.tool_results())


def _queued_and_imported(
    world: dict[str, Any], env: dict[str, str], harness: str, database: Path, event: str
) -> None:
    done = subprocess.run([str(CLI), "queue", "--json"], env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    entries = [e for e in json.loads(done.stdout)["entries"] if e["harness"] == harness]
    assert len(entries) == 1, done.stdout
    (entry,) = entries
    assert Path(entry["transcript"]) == database
    assert entry["event"] == event and entry["final"] is True
    record = import_harness_session(harness, database, session_id=entry["session_id"],
                                    cwd=None, env=env)  # fmt: skip
    assert record.run_id == f"{harness}-{entry['session_id']}"
    assert record.deliveries is not None
    assert [d.lesson for d in record.deliveries] == [world["lesson"]]
    assert any(r.paths == ("src/api/client.py",) for r in record.receipts)
    failures = [f for f in record.tool_failures or [] if f.command == FAILING]
    assert len(failures) == 1, record.tool_failures
    assert failures[0].family == "make api-client-check"
    assert RECOMMENDATION not in (failures[0].error or "")  # the card is not the error
    log = world["root"] / "state" / "active-memory" / "recall" / "hook.log"
    assert not log.exists(), log.read_text()


def test_opencode_plugin_delivers_with_the_result_and_queues_the_session(tmp_path: Path) -> None:
    opencode = require_harness("opencode")
    world = _world(tmp_path)
    target = str(world["checkout"] / "src" / "api" / "client.py")
    with ModelServer(side=opencode_side, side_reply=text("API client")) as server:
        env = _ours(world, opencode_environment(tmp_path, server.openai_url))
        _install(world, env, "opencode", "--user")
        server.push(tool("read", {"filePath": target}),
                    tool("bash", {"command": FAILING, "description": "check"}),
                    text("Read it."))  # fmt: skip
        done = run_opencode(opencode, "Read the API client", world["checkout"], env)
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        requests = server.main_requests()
    _card_with_the_read(requests)
    _queued_and_imported(world, env, "opencode", opencode_database(env), "session.end")


def test_opencode_project_plugin_runs_from_the_checkout(tmp_path: Path) -> None:
    opencode = require_harness("opencode")
    world = _world(tmp_path)
    target = str(world["checkout"] / "src" / "api" / "client.py")
    with ModelServer(side=opencode_side, side_reply=text("API client")) as server:
        env = _ours(world, opencode_environment(tmp_path, server.openai_url))
        _install(world, env, "opencode", "--project")
        assert (world["checkout"] / ".opencode" / "plugins" / "active-memory.js").is_file()
        server.push(tool("read", {"filePath": target}), text("Read it."))
        done = run_opencode(opencode, "Read the API client", world["checkout"], env)
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        _card_with_the_read(server.main_requests())


def test_hermes_plugin_delivers_with_the_result_and_queues_the_session(tmp_path: Path) -> None:
    hermes = require_harness("hermes")
    world = _world(tmp_path)
    target = str(world["checkout"] / "src" / "api" / "client.py")
    with ModelServer() as server:
        env = _ours(world, hermes_environment(tmp_path, server.openai_url))
        out = _install(world, env, "hermes", "--user")
        assert "Hermes" in out
        server.push(tool("read_file", {"path": target}), tool("terminal", {"command": FAILING}),
                    text("Read it."))  # fmt: skip
        done = run_hermes(hermes, "Read the API client", world["checkout"], env)
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        requests = server.model_requests()
    _card_with_the_read(requests)
    _queued_and_imported(world, env, "hermes", hermes_database(env), "on_session_finalize")


def test_hermes_project_plugin_needs_project_plugins_enabled(tmp_path: Path) -> None:
    hermes = require_harness("hermes")
    world = _world(tmp_path)
    target = str(world["checkout"] / "src" / "api" / "client.py")
    with ModelServer() as server:
        env = _ours(world, hermes_environment(tmp_path, server.openai_url))
        _install(world, env, "hermes", "--project")
        server.push(tool("read_file", {"path": target}), text("Read it."))
        done = run_hermes(hermes, "Read the API client", world["checkout"], env)
        assert done.returncode == 0, done.stderr[-2000:]
        assert all(RECOMMENDATION not in r.dump() for r in server.model_requests())
        before = len(server.model_requests())
        server.push(tool("read_file", {"path": target}), text("Read it."))
        enabled = env | {"HERMES_ENABLE_PROJECT_PLUGINS": "1"}
        done = run_hermes(hermes, "Read the API client", world["checkout"], enabled)
        assert done.returncode == 0, done.stderr[-2000:]
        _card_with_the_read(server.model_requests()[before:])


def test_opencode_compaction_lets_the_card_come_once_more(tmp_path: Path) -> None:
    # A model limit of 20,000 tokens and a reply that reports 19,500 make OpenCode compact
    # the session (its own automatic compaction) after the read's result reached the
    # model; the plugin's `session.compacted` resets recall's ledger, so the next read of
    # the same file gets the card again, where the once-per-session rule would hold it.
    opencode = require_harness("opencode")
    world = _world(tmp_path)
    target = str(world["checkout"] / "src" / "api" / "client.py")
    summary = text("Summary: the client was read.")
    with ModelServer(side=opencode_side, side_reply=summary) as server:
        env = _ours(world, opencode_environment(tmp_path, server.openai_url))
        config = Path(env["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json"
        document = json.loads(config.read_text())
        limit = {"context": 20000, "output": 2000}
        document["provider"]["fake"]["models"]["fake-model"]["limit"] = limit
        config.write_text(json.dumps(document))
        _install(world, env, "opencode", "--user")
        server.push(
            tool("read", {"filePath": target}),
            tool("bash", {"command": "true", "description": "noop"}, input_tokens=19500),
            tool("read", {"filePath": target}),
            text("Read it twice."),
        )
        done = run_opencode(opencode, "Read the API client", world["checkout"], env)
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        served = list(server.served)
    compactions = [i for i, (_, turn) in enumerate(served) if turn is summary and i > 0]
    carrying = [i for i, (r, _) in enumerate(served)
                if r.tool_results() and RECOMMENDATION in r.tool_results()[-1]]  # fmt: skip
    assert len(compactions) == 1 and len(carrying) == 2, (compactions, carrying)
    assert carrying[0] < compactions[0] < carrying[1]
