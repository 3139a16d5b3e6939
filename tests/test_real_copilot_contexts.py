"""Contexts with the real `copilot` 1.0.102 (isolated HOME, BYOK against the fake model
server on loopback, the hooks `hook install copilot --user` writes).

- A sub-agent (the `task` tool, an `explore` agent) has its own ledger: its calls carry
  its own ID as `sessionId` and `agentId`, and the session as `parentAgentId`; a card
  it got reaches the main agent again, and its spending leaves the main agent's budget
  whole.
- After a compaction (automatic: a reply that reports nearly
  `COPILOT_PROVIDER_MAX_PROMPT_TOKENS`; Copilot summarises all but the latest call) the
  `preCompact` hook starts the ledger again, and a matching call gets the card again.
- An interrupted call (SIGINT to `copilot -p` while the command runs) never shows its
  card to the model; the resumed session's prompt refunds it (no `agentStop` confirmed
  that turn) and a matching call gets it again.

A card is a user message after the call's result ("Additional context from preToolUse
hook"); its count in each request of one agent says which call brought it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes.agent_scripts import COPILOT, AgentScripts, last_message
from fakes.harness import isolated_home, require_harness
from fakes.model_server import ModelServer, Received, Turn, text, tool
from recall_support import publish, repository_lesson

from active_memory.recall.frame import frame, render_card, utf8_size
from active_memory.recall.records import read_deliveries, run_dir

CLI = Path(sys.executable).parent / "active-memory"
WAIT = 'python3 -c "import time; time.sleep(60)"'


@pytest.fixture(scope="module")
def copilot_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One XDG cache for the module: Copilot CLI unpacks its runtime there."""
    return tmp_path_factory.mktemp("copilot-cache")


def _recommendation(name: str) -> str:
    return f"Regenerate {name}.py with make {name}; never edit it by hand."


def _world(tmp_path: Path, names: str) -> tuple[Path, dict[str, str], list[str]]:
    work = tmp_path / "work"
    work.mkdir()
    git = ["git", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "git@github.com:acme/api.git"], check=True)
    for name in names:
        (work / f"{name}.py").write_text(f"{name.upper()} = 1\n", encoding="utf-8")
    store = tmp_path / "lessons.sqlite3"
    lessons = [
        repository_lesson(f"Card for {name}", _recommendation(name), files=[f"{name}.py"])
        for name in names
    ]
    created = [c[0] for c in publish(store, lessons).created]
    env = isolated_home(tmp_path) | {
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
        "ACTIVE_MEMORY_STORE": str(store),
    }
    subprocess.run([str(CLI), "hook", "install", "copilot", "--user"], cwd=work, env=env,
                   capture_output=True, check=True)  # fmt: skip
    return work, env, created


def _copilot_env(env: dict[str, str], server: ModelServer, cache: Path) -> dict[str, str]:
    return env | {
        "COPILOT_PROVIDER_BASE_URL": server.openai_url,
        "COPILOT_PROVIDER_API_KEY": "sk-test",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_MODEL": "gpt-5.1",
        "COPILOT_OFFLINE": "true",
        "XDG_CACHE_HOME": str(cache),
    }


def _run(copilot: Path, work: Path, env: dict[str, str], *args: str) -> None:
    done = subprocess.run([str(copilot), *args, "--allow-all-tools"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=240, check=False)  # fmt: skip
    assert done.returncode == 0, (done.stdout[-1000:], done.stderr[-1000:])


def _view(work: Path, name: str, **options: object) -> Turn:
    return tool("view", {"path": str(work / f"{name}.py")}, **options)  # type: ignore[arg-type]


def _cards(requests: list[Received], names: str) -> list[list[int]]:
    return [[r.dump().count(_recommendation(n)) for n in names] for r in requests]


def test_a_copilot_sub_agents_card_reaches_the_main_agent_and_leaves_its_budget_whole(
    tmp_path: Path, copilot_cache: Path
) -> None:
    copilot = require_harness("copilot")
    work, env, lessons = _world(tmp_path, "abc")
    one = utf8_size(frame([render_card(lessons[0], 1, "Card for a", _recommendation("a"))]))
    env["ACTIVE_MEMORY_BUDGET_BYTES"] = str(2 * one + one // 2)  # two cards, never three
    task = tool("task", {"description": "look at the files", "prompt": "Read a.py, b.py, c.py",
                         "agent_type": "explore", "name": "looker"})  # fmt: skip
    scripts = AgentScripts(
        main=[task, _view(work, "a"), _view(work, "c")],
        sub=[_view(work, "a"), _view(work, "b"), _view(work, "c"), text("found")],
        harness=COPILOT,
    )
    with ModelServer(respond=scripts) as server:
        _run(copilot, work, _copilot_env(env, server, copilot_cache), "-p", "go")
    assert _cards(scripts.requests("sub"), "abc") == [
        [0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 0]
    ]  # fmt: skip
    assert _cards(scripts.requests("main"), "abc") == [
        [0, 0, 0], [0, 0, 0], [1, 0, 0], [1, 0, 1]
    ]  # fmt: skip
    # Every delivery is the session's record (what `import copilot` joins), the
    # sub-agent's in its own context `<session>/agent-<id>`.
    session = _session_folder(env).name
    recall = str(tmp_path / "state" / "active-memory" / "recall")
    given = [(d["lesson"], d["session"]) for d in read_deliveries(recall, f"session:{session}")]
    [sub] = {who for _, who in given if who != session}
    assert sub.startswith(f"{session}/agent-")
    assert given == [(lessons[0], sub), (lessons[1], sub), (lessons[0], session),
                     (lessons[2], session)]  # fmt: skip


def _session_folder(env: dict[str, str]) -> Path:
    folders = (Path(env["HOME"]) / ".copilot" / "session-state").iterdir()
    [folder] = [f for f in folders if not f.name.startswith(".")]
    return folder


def test_after_a_copilot_compaction_a_matching_call_gets_the_card_again(
    tmp_path: Path, copilot_cache: Path
) -> None:
    copilot = require_harness("copilot")
    work, env, _ = _world(tmp_path, "a")
    card = _recommendation("a")
    # The first reply reports 57,000 of 60,000 prompt tokens: Copilot compacts.
    scripts = AgentScripts(
        main=[_view(work, "a", input_tokens=57_000), _view(work, "a")], harness=COPILOT
    )
    with ModelServer(respond=scripts) as server:
        limited = _copilot_env(env, server, copilot_cache)
        limited["COPILOT_PROVIDER_MAX_PROMPT_TOKENS"] = "60000"
        _run(copilot, work, limited, "-p", "read a.py")
    [compaction] = scripts.requests("compact")
    assert card in compaction.dump()
    main = scripts.requests("main")
    # The first view's card came with its result. Copilot then summarised everything but
    # the latest call, so after the second view the history holds the card once: the
    # one that came again with the second result.
    assert [r.dump().count(card) for r in main] == [0, 1, 1]
    assert "has been summarized" in main[2].dump() and card in last_message(main[2])


def test_an_interrupted_copilot_call_is_refunded_and_its_card_comes_again(
    tmp_path: Path, copilot_cache: Path
) -> None:
    copilot = require_harness("copilot")
    work, env, lessons = _world(tmp_path, "a")
    card = _recommendation("a")
    slow = tool("bash", {"command": WAIT + " && cat a.py", "description": "wait"})
    scripts = AgentScripts(main=[slow, _view(work, "a")], harness=COPILOT)
    recall = tmp_path / "state" / "active-memory" / "recall"
    with ModelServer(respond=scripts) as server:
        running_env = _copilot_env(env, server, copilot_cache)
        command = [str(copilot), "-p", "run it", "--allow-all-tools"]
        with subprocess.Popen(command, cwd=work, env=running_env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) as running:  # fmt: skip
            for _ in range(1200):  # until the preToolUse hook has charged the call
                if any((recall / "sessions").glob("*.ledger")) or running.poll() is not None:
                    break
                time.sleep(0.05)
            time.sleep(1)  # the command is running
            running.send_signal(signal.SIGINT)
            assert running.wait(60) is not None
        state = _session_folder(env)
        _run(copilot, work, running_env, f"--resume={state.name}", "-p", "again")
    main = scripts.requests("main")
    # The interrupted call's card never reached the model; the view gets it.
    assert [r.dump().count(card) for r in main] == [0, 0, 1]
    written = Path(run_dir(str(recall), f"session:{state.name}"), "deliveries.jsonl")
    lines = [json.loads(line) for line in written.read_text().splitlines()]
    assert [(d["lesson"], d.get("refunded", False)) for d in lines] == [
        (lessons[0], False), (lessons[0], True), (lessons[0], False)
    ]  # fmt: skip
