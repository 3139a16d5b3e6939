"""Contexts with the real `claude` (isolated HOME, fake model server on loopback, the hooks
`hook install claude` writes): a card reaches every provider session that needs it.

- Without a compaction a resumed session does not get a card twice (its batch
  confirmed it).
- After `/compact` (driven as `claude --resume ID -p /compact`; the fake server answers
  the summarisation request with the analysis and summary blocks it asks for) the
  context holds no card, and a matching call gets it again.
- An `Explore` sub-agent (started by the main agent's `Agent` call) has its own ledger:
  a card it got reaches the main agent again, and with a budget of two cards the
  sub-agent's two leave the main agent's budget whole.

The model requests are told apart by fakes/claude_agents.py; a call's card is in the
last message of the request that carries the call's result. The interruption and
permission payloads of the same binary are replayed in tests/test_context_events.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fakes.claude_agents import AgentScripts, last_message
from fakes.harness import claude_environment, require_harness
from fakes.model_server import ModelServer, Turn, text, tool
from recall_support import publish, repository_lesson

from active_memory.recall.frame import frame, render_card, utf8_size
from active_memory.recall.ledger import ledger_path_for, read_state

CLI = Path(sys.executable).parent / "active-memory"


def _recommendation(name: str) -> str:
    return f"Regenerate {name}.py with make {name}; never edit it by hand."


def _world(tmp_path: Path, names: str) -> tuple[Path, Path, list[str]]:
    """A checkout with one file and one lesson per name; the store and lesson IDs."""
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
    receipt = publish(store, lessons)
    return work, store, [created[0] for created in receipt.created]


def _run(claude: Path, work: Path, env: dict[str, str], *args: str) -> str:
    base = [str(claude), "--permission-mode", "bypassPermissions", "--output-format", "json"]
    done = subprocess.run([*base, *args], cwd=work, env=env, capture_output=True, text=True,
                          timeout=180, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    session: str = json.loads(done.stdout)["session_id"]
    return session


def _environment(tmp_path: Path, url: str, store: Path, work: Path, **extra: str) -> dict[str, str]:
    env = claude_environment(tmp_path, url, "sk-ant-test") | {
        "IS_SANDBOX": "1",
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
        "ACTIVE_MEMORY_STORE": str(store),
    }
    env |= extra
    subprocess.run([str(CLI), "hook", "install", "claude"], cwd=work, env=env,
                   capture_output=True, check=True)  # fmt: skip
    return env


def _read(work: Path, name: str) -> Turn:
    return tool("Read", {"file_path": str(work / f"{name}.py")})


def test_without_compaction_the_card_is_not_delivered_twice(tmp_path: Path) -> None:
    claude = require_harness("claude")
    work, store, _ = _world(tmp_path, "a")
    scripts = AgentScripts(main=[_read(work, "a"), text("done"), _read(work, "a")])
    with ModelServer(respond=scripts) as server:
        env = _environment(tmp_path, server.url, store, work)
        session = _run(claude, work, env, "-p", "read a.py")
        _run(claude, work, env, "--resume", session, "-p", "again")
    # The first Read's result brings the card; the resumed session's Read does not.
    main = scripts.requests("main")
    assert [_recommendation("a") in last_message(r) for r in main] == [False, True, False, False]


def test_after_compact_a_matching_call_gets_the_card_again(tmp_path: Path) -> None:
    claude = require_harness("claude")
    work, store, _ = _world(tmp_path, "a")
    card = _recommendation("a")
    scripts = AgentScripts(main=[_read(work, "a"), text("done"), _read(work, "a")])
    with ModelServer(respond=scripts) as server:
        env = _environment(tmp_path, server.url, store, work)
        session = _run(claude, work, env, "-p", "read a.py")
        _run(claude, work, env, "--resume", session, "-p", "/compact")
        _run(claude, work, env, "--resume", session, "-p", "read a.py again")
    main = scripts.requests("main")
    # The summarisation saw the card; the compacted context the next prompt starts from
    # holds none of it, and the Read of a.py brings the card back.
    [compaction] = scripts.requests("compact")
    assert card in compaction.dump()
    assert [card in last_message(r) for r in main] == [False, True, False, True]
    resumed = main[2]
    assert "read a.py again" in resumed.dump() and card not in resumed.dump()


def test_a_sub_agents_card_reaches_the_main_agent_and_leaves_its_budget_whole(
    tmp_path: Path,
) -> None:
    claude = require_harness("claude")
    work, store, lessons = _world(tmp_path, "abc")
    # Every card costs the same (same-length titles, recommendations and IDs): a budget
    # of two and a half holds two deliveries, never three.
    one = utf8_size(frame([render_card(lessons[0], 1, "Card for a", _recommendation("a"))]))
    budget = 2 * one + one // 2
    agent = tool("Agent", {"description": "look", "prompt": "Read a.py, b.py and c.py",
                           "subagent_type": "Explore", "run_in_background": False})  # fmt: skip
    scripts = AgentScripts(
        main=[agent, _read(work, "a"), _read(work, "c")],
        sub=[_read(work, "a"), _read(work, "b"), _read(work, "c"), text("found")],
    )
    with ModelServer(respond=scripts) as server:
        env = _environment(
            tmp_path, server.url, store, work, ACTIVE_MEMORY_BUDGET_BYTES=str(budget)
        )
        session = _run(claude, work, env, "-p", "go")
    sub = [last_message(r) for r in scripts.requests("sub") if r.tool_results()]
    main = [last_message(r) for r in scripts.requests("main") if r.tool_results()]
    # The sub-agent got the cards of a.py and b.py; c.py's did not fit its budget.
    assert [[_recommendation(n) in m for n in "abc"] for m in sub] == [
        [True, False, False], [False, True, False], [False, False, False]
    ]  # fmt: skip
    # The main agent: the Agent call's result, then a.py's card again (the sub-agent's
    # delivery was not the main agent's), then c.py's (its budget is whole: after the
    # sub-agent's two cards on a shared budget it would not fit).
    assert [[_recommendation(n) in m for n in "abc"] for m in main] == [
        [False, False, False], [True, False, False], [False, False, True]
    ]  # fmt: skip
    sessions = str(tmp_path / "state" / "active-memory" / "recall")
    main_state = read_state(ledger_path_for(sessions, session))
    assert main_state.delivered == {(lessons[0], 1), (lessons[2], 1)}
    assert main_state.spent == 2 * one and main_state.pending == []
