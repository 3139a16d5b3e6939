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
- A call interrupted while it runs (a stream-json control request, as an SDK host's
  stop button sends) never shows its card to the model; the next prompt refunds it and
  a matching call gets it again.
- A failing call cancels none of its siblings in 2.1.332: their cards stay charged.

The model requests are told apart by fakes/agent_scripts.py; a call's card is in the
last message of the request that carries the call's result. The recorded payloads of
the same binary (sub-agent, batch, refusal, compaction, interruption) are replayed in
tests/test_context_events.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from fakes.agent_scripts import AgentScripts, last_message
from fakes.harness import claude_environment, require_harness
from fakes.model_server import ModelServer, ToolCall, Turn, text, tool
from recall_support import publish, repository_lesson

from active_memory.recall.frame import frame, render_card, utf8_size
from active_memory.recall.ledger import ledger_path_for, read_state
from active_memory.recall.records import read_deliveries, run_dir

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


WAIT = 'python3 -c "import time; time.sleep(60)"'
"""A call that runs until interrupted (Claude Code refuses a plain `sleep 60; …`)."""


def _lines_until_result(process: subprocess.Popen[str]) -> list[dict[str, object]]:
    """The stream-json messages up to and including the turn's `result`."""
    assert process.stdout is not None
    seen: list[dict[str, object]] = []
    for line in process.stdout:
        seen.append(json.loads(line))
        if seen[-1].get("type") == "result":
            return seen
    raise AssertionError(f"claude ended without a result: {seen[-3:]}")


def _wait_for_pending(ledger: str, process: subprocess.Popen[str]) -> None:
    """Until the PreToolUse hook has charged the running call (bounded by the process)."""
    for _ in range(1200):
        if os.path.exists(ledger) and read_state(ledger).pending:
            return
        assert process.poll() is None, "claude ended before its tool call started"
        time.sleep(0.05)
    raise AssertionError("no pending delivery after 60 s")


def _interrupt_then_prompt(
    claude: Path, work: Path, env: dict[str, str], recall: str
) -> tuple[str, list[dict[str, object]], list[dict[str, object]]]:
    """One stream-json session: a prompt whose call is interrupted while it runs (a
    control request, as an SDK host's stop button sends), then a second prompt. Returns
    the session ID and each turn's messages."""
    command = [str(claude), "-p", "--permission-mode", "bypassPermissions", "--verbose",
               "--input-format", "stream-json", "--output-format", "stream-json"]  # fmt: skip
    pipe = subprocess.PIPE
    with subprocess.Popen(
        command, cwd=work, env=env, text=True, stdin=pipe, stdout=pipe, stderr=subprocess.DEVNULL
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        stdin = process.stdin
        watchdog = threading.Timer(180, process.kill)
        watchdog.start()

        def send(message: dict[str, object]) -> None:
            stdin.write(json.dumps(message) + "\n")
            stdin.flush()

        try:
            send({"type": "user", "message": {"role": "user", "content": "run it"}})
            session = str(json.loads(process.stdout.readline())["session_id"])
            _wait_for_pending(ledger_path_for(recall, session), process)
            send({"type": "control_request", "request_id": "stop-1",
                  "request": {"subtype": "interrupt"}})  # fmt: skip
            interrupted = _lines_until_result(process)
            send({"type": "user", "message": {"role": "user", "content": "read a.py"}})
            finished = _lines_until_result(process)
            stdin.close()
            process.wait(60)
        finally:
            watchdog.cancel()
            process.kill()
    return session, interrupted, finished


def test_an_interrupted_call_is_refunded_and_its_card_comes_again(tmp_path: Path) -> None:
    claude = require_harness("claude")
    work, store, lessons = _world(tmp_path, "a")
    card = _recommendation("a")
    scripts = AgentScripts(
        main=[tool("Bash", {"command": WAIT + " && cat a.py"}), _read(work, "a")]
    )
    recall = str(tmp_path / "state" / "active-memory" / "recall")
    with ModelServer(respond=scripts) as server:
        env = _environment(tmp_path, server.url, store, work)
        session, interrupted, finished = _interrupt_then_prompt(claude, work, env, recall)
    assert interrupted[-1].get("subtype") == "error_during_execution"
    assert finished[-1].get("subtype") == "success"
    main = scripts.requests("main")
    # The interrupted call's card never reached the model: the next prompt's request
    # holds none of it. That prompt refunded it, so the Read of a.py gets it.
    assert len(main) == 3 and card not in main[1].dump()
    assert card in last_message(main[2])
    # deliveries.jsonl: given, refunded, given again; the record keeps one delivery.
    written = Path(run_dir(recall, f"session:{session}"), "deliveries.jsonl").read_text()
    lines = [json.loads(line) for line in written.splitlines()]
    assert [(d["lesson"], d.get("refunded", False)) for d in lines] == [
        (lessons[0], False), (lessons[0], True), (lessons[0], False)
    ]  # fmt: skip
    assert [d["lesson"] for d in read_deliveries(recall, f"session:{session}")] == lessons


def test_a_failing_call_cancels_no_sibling_and_their_cards_stay_charged(tmp_path: Path) -> None:
    # Claude Code 2.1.332 runs every call of a batch when one fails (its bundle has no
    # sibling cancellation; an interruption is the only cancel): the siblings' results,
    # with the card, reach the model, and the batch confirms them. Were a future version
    # to cancel siblings, this fails and the cancelled calls must be refunded too.
    claude = require_harness("claude")
    work, store, lessons = _world(tmp_path, "a")
    batch = Turn((ToolCall("Bash", {"command": "sleep 1; exit 3"}, "call_fail"),
                  ToolCall("Bash", {"command": "sleep 2; cat a.py"}, "call_cat")))  # fmt: skip
    scripts = AgentScripts(main=[batch])
    with ModelServer(respond=scripts) as server:
        env = _environment(tmp_path, server.url, store, work)
        session = _run(claude, work, env, "-p", "go")
    after = scripts.requests("main")[1]
    assert after.tool_results() == ["Exit code 3", "A = 1"]
    assert _recommendation("a") in after.dump()
    recall = str(tmp_path / "state" / "active-memory" / "recall")
    state = read_state(ledger_path_for(recall, session))
    assert state.delivered == {(lessons[0], 1)} and state.pending == []
