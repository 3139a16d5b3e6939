"""The installed hooks really run in the real `pi`, `gemini` and `copilot` binaries.

Each binary runs one session in an isolated HOME against the scripted model server on
loopback (tests/fakes/model_server.py), which asks for one read of the file a stored
lesson names; the card must be in the model's next logged request (the one carrying the
tool's result) and in no request before it. Pi speaks Chat Completions to a custom
`openai-completions` provider (`~/.pi/agent/models.json`); Gemini CLI the Gemini API at
`GOOGLE_GEMINI_BASE_URL` (API-key auth); Copilot CLI Chat Completions through its BYOK
provider variables (`COPILOT_PROVIDER_BASE_URL`, `COPILOT_OFFLINE=true`: no GitHub sign
in). `active-memory hook install` writes the hooks as a user gets them, merged into
settings the test wrote first. Then the client's own session log is imported
(`import_harness_session`, what `import pi|gemini|copilot` and the queue's worker use):
its run record carries the delivery the hook recorded.

The binaries come from ACTIVE_MEMORY_TEST_PI / _GEMINI / _COPILOT (`.ci/run`) or PATH;
without them these tests skip, and with CI=true they fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.harness import isolated_home, require_harness
from fakes.model_server import ModelServer, Received, text, tool
from recall_support import publish, repository_lesson

from active_memory.runlog.importers.harness_session import import_harness_session

RECOMMENDATION = "Run make api-client after editing api/schema.json; never edit the client."
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
    lesson = repository_lesson("Regenerate the API client", RECOMMENDATION,
                               files=["src/api/client.py"])  # fmt: skip
    lesson_id = publish(store, [lesson]).created[0][0]
    env = isolated_home(tmp_path) | {
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
        "ACTIVE_MEMORY_STORE": str(store),
    }
    return {"checkout": checkout, "env": env, "home": Path(env["HOME"]), "lesson": lesson_id}


def _session_delivered(world: dict[str, Any], harness: str, pattern: str) -> None:
    """The session-end hook queued the session with the client's own log (`pattern`
    under HOME), and that log imports to a run record that carries the delivery the
    recall hook recorded and the read's receipt."""
    (log,) = sorted(world["home"].glob(pattern))
    done = subprocess.run([str(CLI), "queue", "--json"], env=world["env"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    entries = [e for e in json.loads(done.stdout)["entries"] if e["harness"] == harness]
    assert len(entries) == 1, done.stdout
    assert Path(entries[0]["transcript"]) == log
    record = import_harness_session(harness, log, session_id=entries[0]["session_id"],
                                    cwd=None, env=world["env"])  # fmt: skip
    assert record.deliveries is not None
    assert [d.lesson for d in record.deliveries] == [world["lesson"]]
    assert any(r.paths == ("src/api/client.py",) for r in record.receipts)
    # No hook call went wrong (each would have left one line here).
    log = Path(world["env"]["ZEROSHOT_STATE_DIR"]) / "active-memory" / "recall" / "hook.log"
    assert not log.exists(), log.read_text()


def _install(world: dict[str, Any], *args: str) -> str:
    done = subprocess.run(
        [str(CLI), "hook", "install", *args, "--hook-command", str(REAL_HOOK)],
        cwd=world["checkout"], env=world["env"], capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def _run(command: list[str], world: dict[str, Any], env: dict[str, str]) -> None:
    done = subprocess.run(
        command, cwd=world["checkout"], env=env, capture_output=True, text=True,
        timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])


def _card_after_the_tool(requests: list[Received]) -> None:
    after = [r for r in requests if r.tool_results()]
    assert after, [r.dump()[:300] for r in requests]
    assert RECOMMENDATION in after[0].dump()
    assert all(RECOMMENDATION not in r.dump() for r in requests if not r.tool_results())


def _pi_models(home: Path, url: str) -> None:
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    provider = {"baseUrl": url, "api": "openai-completions", "apiKey": "FAKE_PI_KEY",
                "models": [{"id": "fake-model"}]}  # fmt: skip
    (agent / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))


def _pi(pi: Path, world: dict[str, Any], server: ModelServer, *flags: str) -> list[Received]:
    before = len(server.model_requests())
    server.push(tool("read", {"path": "src/api/client.py"}), text("Read it."))
    env = world["env"] | {"FAKE_PI_KEY": "sk-test", "PI_OFFLINE": "1"}
    _run([str(pi), "-p", "Read the API client", "--provider", "fake", "--model",
          "fake-model", *flags], world, env)  # fmt: skip
    return server.model_requests()[before:]


def test_pi_extension_appends_the_card_to_the_tool_result(tmp_path: Path) -> None:
    pi = require_harness("pi")
    world = _world(tmp_path)
    with ModelServer() as server:
        _pi_models(world["home"], server.openai_url)
        _install(world, "pi", "--user")
        _card_after_the_tool(_pi(pi, world, server))
    _session_delivered(world, "pi", ".pi/agent/sessions/*/*.jsonl")


def test_pi_contained_mode_loads_the_extension_only_when_named(tmp_path: Path) -> None:
    pi = require_harness("pi")
    world = _world(tmp_path)
    with ModelServer() as server:
        _pi_models(world["home"], server.openai_url)
        _install(world, "pi")
        extension = world["checkout"] / ".pi" / "extensions" / "active-memory.ts"
        contained = _pi(pi, world, server, "--no-extensions")
        assert all(RECOMMENDATION not in r.dump() for r in contained)
        _card_after_the_tool(_pi(pi, world, server, "--no-extensions", "-e", str(extension)))


def test_gemini_after_tool_hook_appends_the_card(tmp_path: Path) -> None:
    gemini = require_harness("gemini")
    world = _world(tmp_path)
    settings = world["home"] / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    own = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
    }
    settings.write_text(json.dumps(own, indent=2))
    _install(world, "gemini", "--user")
    assert {k: v for k, v in json.loads(settings.read_text()).items() if k != "hooks"} == own
    target = str(world["checkout"] / "src" / "api" / "client.py")
    with ModelServer() as server:
        server.push(tool("read_file", {"file_path": target}), text("Read it."))
        env = world["env"] | {
            "GOOGLE_GEMINI_BASE_URL": server.url,
            "GEMINI_API_KEY": "fake-key",
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
        _run([str(gemini), "-p", "Read the API client", "--yolo", "-m", "gemini-2.5-flash"],
             world, env)  # fmt: skip
        requests = server.model_requests()
    _card_after_the_tool(requests)
    _session_delivered(world, "gemini", ".gemini/tmp/*/chats/session-*.jsonl")
    # Gemini CLI wraps a hook's context; it is in the tool's result itself.
    assert any(RECOMMENDATION in result for r in requests for result in r.tool_results())


@pytest.fixture(scope="module")
def copilot_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One XDG cache for the module: Copilot CLI unpacks its 235 MB runtime there."""
    return tmp_path_factory.mktemp("copilot-cache")


def _copilot(
    copilot: Path, world: dict[str, Any], server: ModelServer, cache: Path
) -> list[Received]:
    target = str(world["checkout"] / "src" / "api" / "client.py")
    server.push(tool("view", {"path": target}), text("Read it."))
    env = world["env"] | {
        "COPILOT_PROVIDER_BASE_URL": server.openai_url,
        "COPILOT_PROVIDER_API_KEY": "sk-test",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_MODEL": "gpt-5.1",
        "COPILOT_OFFLINE": "true",
        "XDG_CACHE_HOME": str(cache),
    }
    _run([str(copilot), "-p", "Read the API client", "--allow-all-tools"], world, env)
    return server.model_requests()


def test_copilot_pre_tool_use_context_reaches_the_model(
    tmp_path: Path, copilot_cache: Path
) -> None:
    copilot = require_harness("copilot")
    world = _world(tmp_path)
    with ModelServer() as server:
        _install(world, "copilot", "--user")
        _card_after_the_tool(_copilot(copilot, world, server, copilot_cache))
    _session_delivered(world, "copilot", ".copilot/session-state/*/events.jsonl")


def test_copilot_project_hooks_run_in_a_trusted_folder(tmp_path: Path, copilot_cache: Path) -> None:
    copilot = require_harness("copilot")
    world = _world(tmp_path)
    config = world["home"] / ".copilot" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"trustedFolders": [str(world["checkout"])]}))
    with ModelServer() as server:
        _install(world, "copilot", "--project")
        _card_after_the_tool(_copilot(copilot, world, server, copilot_cache))


def test_doctor_says_what_the_real_gemini_does_with_an_untrusted_projects_hooks(
    tmp_path: Path,
) -> None:
    gemini = require_harness("gemini")
    world = _world(tmp_path)
    settings = world["home"] / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    # Gemini CLI's own defaults: folder trust on, this folder trusted nowhere.
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    _install(world, "gemini", "--project")
    target = str(world["checkout"] / "src" / "api" / "client.py")

    def doctor(env: dict[str, str]) -> dict[str, Any]:
        done = subprocess.run([str(CLI), "hook", "doctor", "--json"], cwd=world["checkout"],
                              env=env, capture_output=True, text=True, check=False)  # fmt: skip
        (item,) = json.loads(done.stdout)["installed"]
        checks: dict[str, Any] = {c["name"]: c for c in item["checks"]}
        return checks

    def session(env: dict[str, str], *flags: str) -> list[Received]:
        with ModelServer() as server:
            server.push(tool("read_file", {"file_path": target}), text("Read it."))
            run = env | {"GOOGLE_GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": "fake-key",
                         "GEMINI_CLI_NO_RELAUNCH": "true"}  # fmt: skip
            subprocess.run(
                [str(gemini), "-p", "Read the API client", "--yolo", "-m", "gemini-2.5-flash",
                 *flags], cwd=world["checkout"], env=run, capture_output=True, text=True,
                timeout=240, check=False,
            )  # fmt: skip
            return server.model_requests()

    untrusted = doctor(world["env"])["trusted"]
    assert untrusted["ok"] is False and "GEMINI_CLI_TRUST_WORKSPACE=true" in untrusted["fix"]
    # What its exit-55 message suggests (--skip-trust) runs the session without the hooks.
    skipped = session(world["env"], "--skip-trust")
    assert any(r.tool_results() for r in skipped)  # the file was read, the hook never ran
    assert all(RECOMMENDATION not in r.dump() for r in skipped)
    trusting = world["env"] | {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
    assert doctor(trusting)["trusted"]["ok"] is True
    _card_after_the_tool(session(trusting))
