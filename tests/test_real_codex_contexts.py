"""Contexts with the real `codex` 0.171 (isolated HOME, fake model server on loopback, the
hooks `hook install codex --user` writes and trusts).

- A sub-agent (`spawn_agent`, then `wait_agent`) has its own ledger: its PreToolUse
  calls carry the session's `session_id` plus its `agent_id`, so a card it got reaches
  the main agent again, and its spending leaves the main agent's budget whole.
- After a compaction (automatic: `model_auto_compact_token_limit` and a reply that
  reports more tokens than that) the `PostCompact` hook starts the ledger again, and a
  matching call gets the card again.
- An interrupted call (SIGINT to `codex exec` while the command runs) needs no refund:
  Codex wrote the card into the conversation when the hook answered, and the resumed
  session's next request carries it; the card is charged once.

A card is a developer message of the request that carries the call's output; its count
in each request of one agent says which call brought it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from fakes.agent_scripts import CODEX, AgentScripts
from fakes.harness import codex_config, isolated_home, require_harness
from fakes.model_server import ModelServer, Received, Turn, text, tool
from recall_support import publish, repository_lesson

from active_memory.recall.frame import frame, render_card, utf8_size
from active_memory.recall.ledger import ledger_path_for, read_state
from active_memory.recall.records import read_deliveries

CLI = Path(sys.executable).parent / "active-memory"
WAIT = 'python3 -c "import time; time.sleep(60)"'


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
        "FAKE_OPENAI_KEY": "sk-test",
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
        "ACTIVE_MEMORY_STORE": str(store),
    }
    return work, env, created


def _install(work: Path, env: dict[str, str], url: str, *config: str) -> None:
    path = codex_config(Path(env["CODEX_HOME"]), url)
    path.write_text("".join(f"{line}\n" for line in config) + path.read_text(), "utf-8")
    subprocess.run([str(CLI), "hook", "install", "codex", "--user"], cwd=work, env=env,
                   capture_output=True, check=True)  # fmt: skip


def _exec(codex: Path, *prompt: str) -> list[str]:
    return [str(codex), "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access",
            "--model", "gpt-5-codex", *prompt]  # fmt: skip


def _run(command: list[str], work: Path, env: dict[str, str]) -> None:
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True,
                          timeout=180, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]


def _cat(name: str, **options: object) -> Turn:
    return tool("exec_command", {"cmd": f"cat {name}.py"}, **options)  # type: ignore[arg-type]


def _cards(requests: list[Received], names: str) -> list[list[int]]:
    """How many times each card is in each request (one agent's history grows)."""
    return [[r.dump().count(_recommendation(n)) for n in names] for r in requests]


def _recall(tmp_path: Path) -> str:
    return str(tmp_path / "state" / "active-memory" / "recall")


def test_a_codex_sub_agents_card_reaches_the_main_agent_and_leaves_its_budget_whole(
    tmp_path: Path,
) -> None:
    codex = require_harness("codex")
    work, env, lessons = _world(tmp_path, "abc")
    one = utf8_size(frame([render_card(lessons[0], 1, "Card for a", _recommendation("a"))]))
    env["ACTIVE_MEMORY_BUDGET_BYTES"] = str(2 * one + one // 2)  # two cards, never three

    def wait(received: Received) -> Turn:
        agent = json.loads(received.tool_results()[-1])["agent_id"]
        return tool("wait_agent", {"targets": [agent], "timeout_ms": 60000},
                    namespace="multi_agent_v1")  # fmt: skip

    spawn = tool("spawn_agent", {"message": "Read a.py, b.py and c.py"},
                 namespace="multi_agent_v1")  # fmt: skip
    scripts = AgentScripts(
        main=[spawn, wait, _cat("a"), _cat("c")],
        sub=[_cat("a"), _cat("b"), _cat("c"), text("found")],
        harness=CODEX,
    )
    with ModelServer(respond=scripts) as server:
        _install(work, env, server.openai_url)
        _run(_exec(codex, "go"), work, env)
    # The sub-agent got a.py's and b.py's cards; c.py's did not fit its budget.
    assert _cards(scripts.requests("sub"), "abc") == [
        [0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 0]
    ]  # fmt: skip
    # The main agent: nothing while the sub-agent ran, then a.py's card again and c.py's
    # (its budget is whole: after the sub-agent's two cards a shared one had no room).
    assert _cards(scripts.requests("main"), "abc") == [
        [0, 0, 0], [0, 0, 0], [0, 0, 0], [1, 0, 0], [1, 0, 1]
    ]  # fmt: skip


def test_after_a_codex_compaction_a_matching_call_gets_the_card_again(tmp_path: Path) -> None:
    codex = require_harness("codex")
    work, env, _ = _world(tmp_path, "a")
    card = _recommendation("a")
    # The first call's reply reports more tokens than the limit: Codex compacts after it.
    scripts = AgentScripts(main=[_cat("a", input_tokens=50_000), _cat("a")], harness=CODEX)
    with ModelServer(respond=scripts) as server:
        _install(work, env, server.openai_url, "model_auto_compact_token_limit = 1000")
        _run(_exec(codex, "read a.py"), work, env)
    [compaction] = scripts.requests("compact")
    assert card in compaction.dump()  # summarised away with the rest
    main = scripts.requests("main")
    # Before: a.py's card once. After the compaction the history holds none of it, and
    # the next Read brings it back.
    assert [r.dump().count(card) for r in main] == [0, 0, 1]


def test_an_interrupted_codex_call_keeps_its_card_and_is_not_refunded(tmp_path: Path) -> None:
    codex = require_harness("codex")
    work, env, lessons = _world(tmp_path, "a")
    card = _recommendation("a")
    scripts = AgentScripts(
        main=[tool("exec_command", {"cmd": WAIT + " && cat a.py"}), _cat("a")], harness=CODEX
    )
    with ModelServer(respond=scripts) as server:
        _install(work, env, server.openai_url)
        quiet = subprocess.DEVNULL
        with subprocess.Popen(
            _exec(codex, "run it"), cwd=work, env=env, stdout=quiet, stderr=quiet
        ) as running:
            sessions = Path(_recall(tmp_path)) / "sessions"
            for _ in range(1200):  # until the PreToolUse hook has charged the call
                if any(sessions.glob("*.ledger")) or running.poll() is not None:
                    break
                time.sleep(0.05)
            running.send_signal(signal.SIGINT)
            assert running.wait(60) is not None
        _run(_exec(codex, "resume", "--last", "again"), work, env)
    main = scripts.requests("main")
    # The resumed session's first request already holds the interrupted call's card;
    # the Read then gets nothing new.
    assert [r.dump().count(card) for r in main] == [0, 1, 1]
    [session] = {d["session"] for d in read_deliveries(_recall(tmp_path), _run_key(tmp_path))}
    state = read_state(ledger_path_for(_recall(tmp_path), session))
    assert state.delivered == {(lessons[0], 1)} and state.pending == []


def _run_key(tmp_path: Path) -> str:
    [folder] = (Path(_recall(tmp_path)) / "runs").iterdir()
    return folder.name.replace("%3A", ":")
