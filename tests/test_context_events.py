"""Context events recorded from the real Claude Code 2.1.332, replayed through recall:
a sub-agent's own ledger, a batch that confirms, a prompt that refunds an interrupted
call, a compaction that resets (recall/contexts.py; fixture: tests/fixtures/harness_payloads/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recall_support import hook_env, make_checkout, publish, repository_lesson

from active_memory.recall.contexts import classify, handle_event
from active_memory.recall.engine import answer_hook
from active_memory.recall.ledger import ledger_path_for, read_state
from active_memory.recall.records import read_deliveries

FIXTURE = Path(__file__).parent / "fixtures" / "harness_payloads" / "claude-2.1.332-contexts.jsonl"
RECORDED = "/tmp/ctx/work"


def _events(scenario: str, root: Path) -> list[dict[str, Any]]:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    found = []
    for line in lines:
        item = json.loads(line.replace(RECORDED, str(root)))
        if item["scenario"] == scenario:
            found.append(item["input"])
    return found


def _world(tmp_path: Path) -> tuple[Path, dict[str, str], str]:
    root = make_checkout(tmp_path / "work")
    (root / "a.py").write_text("A = 1\n", encoding="utf-8")
    (root / "b.py").write_text("B = 1\n", encoding="utf-8")
    store = tmp_path / "lessons.sqlite3"
    receipt = publish(
        store, [repository_lesson("Card for a", "Regenerate a.py with make a.", files=["a.py"])]
    )
    return root, hook_env(tmp_path / "state", store), receipt.created[0][0]


def _replay(events: list[dict[str, Any]], env: dict[str, str]) -> list[str]:
    """Each event through its hook; the lessons each PreToolUse delivered, in order."""
    given = []
    for event in events:
        if event["hook_event_name"] == "PreToolUse":
            answer = answer_hook("claude", event, env)
            context = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
            who = event.get("agent_id") or "main"
            given.append(f"{who}:{event['tool_name']}:{'card' if context else '-'}")
        else:
            handle_event("claude", event, env)
    return given


def _recall_dir(env: dict[str, str]) -> str:
    return str(Path(env["ZEROSHOT_STATE_DIR"]) / "active-memory" / "recall")


def test_sub_agent_gets_its_own_ledger_and_the_main_agent_the_card_again(tmp_path: Path) -> None:
    root, env, lesson = _world(tmp_path)
    events = _events("sub", root)
    given = _replay(events, env)
    agent = next(e["agent_id"] for e in events if e.get("agent_id"))
    session = events[0]["session_id"]
    # The sub-agent read a.py twice (card once); the main agent's ledger is untouched.
    assert given == ["main:Agent:-", f"{agent}:Read:card", f"{agent}:Read:-"]
    main = read_state(ledger_path_for(_recall_dir(env), session))
    sub = read_state(ledger_path_for(_recall_dir(env), f"{session}/agent-{agent}"))
    assert (main.spent, main.delivered) == (0, set())
    assert sub.delivered == {(lesson, 1)} and not sub.pending  # its batch confirmed it
    # The main agent's own Read of a.py gets the card.
    call = dict(events[2], tool_name="Read", tool_input={"file_path": str(root / "a.py")})
    assert "Regenerate a.py" in json.dumps(answer_hook("claude", call, env))


def test_interrupted_call_is_refunded_by_the_next_prompt(tmp_path: Path) -> None:
    root, env, lesson = _world(tmp_path)
    events = _events("interrupt", root)
    pre = next(e for e in events if e["hook_event_name"] == "PreToolUse")
    pre = dict(pre, tool_name="Read", tool_input={"file_path": str(root / "a.py")})
    events = [pre if e["hook_event_name"] == "PreToolUse" else e for e in events]
    assert _replay(events, env) == ["main:Read:card"]
    session = events[0]["session_id"]
    state = read_state(ledger_path_for(_recall_dir(env), session))
    assert (state.spent, state.delivered, state.pending) == (0, set(), [])
    assert read_deliveries(_recall_dir(env), f"session:{session}") == []
    # Refunded: the same call gets the card again.
    assert "Regenerate a.py" in json.dumps(answer_hook("claude", pre, env))
    assert [d["lesson"] for d in read_deliveries(_recall_dir(env), f"session:{session}")] == [
        lesson
    ]


def test_a_refused_call_stays_charged_its_batch_confirms_it(tmp_path: Path) -> None:
    root, env, _ = _world(tmp_path)
    events = _events("deny", root)
    events = [
        dict(e, tool_input={"command": "cat a.py"}) if e["hook_event_name"] == "PreToolUse" else e
        for e in events
    ]
    assert _replay(events, env) == ["main:Bash:card"]
    state = read_state(ledger_path_for(_recall_dir(env), events[0]["session_id"]))
    assert state.spent > 0 and state.pending == []


def test_a_failing_call_and_its_siblings_stay_charged(tmp_path: Path) -> None:
    root, env, _ = _world(tmp_path)
    events = _events("batch", root)
    # The post-tool events confirm; a prompt afterwards refunds nothing.
    assert _replay(events, env) == ["main:Bash:-", "main:Read:card", "main:Read:-"]
    handle_event(
        "claude", next(e for e in events if e["hook_event_name"] == "UserPromptSubmit"), env
    )
    state = read_state(ledger_path_for(_recall_dir(env), events[0]["session_id"]))
    assert state.spent > 0 and len(state.delivered) == 1


def test_compaction_resets_the_context_ledger(tmp_path: Path) -> None:
    root, env, _ = _world(tmp_path)
    events = _events("compact", root)
    first = [
        e for e in events if e["hook_event_name"] != "SessionStart" or e["source"] == "startup"
    ]
    first = first[: next(i for i, e in enumerate(first) if e["hook_event_name"] == "Stop") + 1]
    assert _replay(first, env) == ["main:Read:card"]
    read = next(e for e in events if e["hook_event_name"] == "PreToolUse")
    assert "additionalContext" not in json.dumps(answer_hook("claude", read, env))
    compacted = next(e for e in events if e.get("source") == "compact")
    assert handle_event("claude", compacted, env) == "reset"
    assert "Regenerate a.py" in json.dumps(answer_hook("claude", read, env))


def test_only_events_that_change_a_context_are_classified() -> None:
    assert classify("claude", {"hook_event_name": "SessionStart", "source": "resume"}) is None
    assert classify("claude", {"hook_event_name": "PostToolBatch"}) == ("confirm", None)
    assert classify("codex", {"hook_event_name": "UserPromptSubmit"}) is None  # never pending
    assert classify("gemini", {"hook_event_name": "PreCompress", "trigger": "auto"}) is None
    assert classify("gemini", {"hook_event_name": "PreCompress", "trigger": "manual"}) == (
        "reset",
        None,
    )
    assert classify("pi", {"event": "session_compact"}) == ("reset", None)
    assert classify("copilot", {"hook_event_name": "preToolUse"}) is None
