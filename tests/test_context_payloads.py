"""Context events recorded from the real Codex, Copilot CLI, Gemini CLI and Pi (our
extension) replayed through recall, in the order each binary sent them
(tests/fixtures/harness_payloads/*-contexts.jsonl, recorded by
tests/record_context_payloads.py; Claude Code's are in tests/test_context_events.py).
Each tool call goes through the hook entry the installer registers for that harness,
each context event through `handle_event` with the event name the installed command
passes; events we do not install reach nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from recall_support import hook_env, make_checkout, publish, repository_lesson

from active_memory.recall.contexts import handle_event
from active_memory.recall.engine import answer_hook
from active_memory.recall.ledger import ledger_path_for, read_state
from active_memory.recall.records import read_deliveries

FIXTURES = Path(__file__).parent / "fixtures" / "harness_payloads"
RECORDED = "/tmp/am-contexts/work"
CARD = "Regenerate a.py with make a."

# What `hook install` registers, per harness: the tool-call hook's event, and the context
# events (with the name the command line passes when the payload has none).
TOOL_EVENT = {"codex": "PreToolUse", "copilot": "preToolUse", "gemini": "AfterTool"}
CONTEXT_EVENTS = {
    "codex": {"PostCompact"},
    "copilot": {"userPromptSubmitted", "agentStop", "preCompact"},
    "gemini": {"PreCompress"},
}


def _events(name: str, scenario: str, root: Path) -> list[dict[str, Any]]:
    text = (FIXTURES / name).read_text(encoding="utf-8").replace(RECORDED, str(root))
    lines = [json.loads(line) for line in text.splitlines()]
    return [line for line in lines if line["scenario"] == scenario]


def _world(tmp_path: Path) -> tuple[Path, dict[str, str], str]:
    root = make_checkout(tmp_path / "work")
    (root / "a.py").write_text("A = 1\n", encoding="utf-8")
    store = tmp_path / "lessons.sqlite3"
    receipt = publish(store, [repository_lesson("Card for a", CARD, files=["a.py"])])
    return root, hook_env(tmp_path / "state", store), receipt.created[0][0]


def _event_name(line: dict[str, Any]) -> str:
    return str(line.get("event") or line["input"].get("hook_event_name") or "")


def _replay(harness: str, lines: list[dict[str, Any]], env: dict[str, str]) -> list[str]:
    """Each recorded line through what is installed; per tool call: who made it, the tool,
    and `card` or `-` for what it was given."""
    given = []
    for line in lines:
        event, payload = _event_name(line), line["input"]
        if event == TOOL_EVENT[harness]:
            answer = json.dumps(answer_hook(harness, payload, env))
            tool = payload.get("tool_name") or payload.get("toolName")
            who = "sub" if payload.get("agent_id") or payload.get("agentId") else "main"
            given.append(f"{who}:{tool}:{'card' if CARD in answer else '-'}")
        elif event in CONTEXT_EVENTS[harness]:
            handle_event(harness, payload, env, line.get("event"))
    return given


def _recall(env: dict[str, str]) -> str:
    return str(Path(env["ZEROSHOT_STATE_DIR"]) / "active-memory" / "recall")


def test_codex_sub_agent_calls_have_their_own_ledger(tmp_path: Path) -> None:
    root, env, lesson = _world(tmp_path)
    lines = _events("codex-0.171.0-contexts.jsonl", "sub", root)
    given = _replay("codex", lines, env)
    assert given == ["main:spawn_agent:-", "main:multi_agent_v1wait_agent:-", "sub:Bash:card",
                     "main:Bash:card"]  # fmt: skip
    session = lines[0]["input"]["session_id"]
    agent = next(x["input"]["agent_id"] for x in lines if x["input"].get("agent_id"))
    sub = read_state(ledger_path_for(_recall(env), f"{session}/agent-{agent}"))
    assert sub.delivered == {(lesson, 1)}


def test_codex_post_compact_resets_and_an_interruption_keeps_the_card(tmp_path: Path) -> None:
    root, env, _ = _world(tmp_path)
    # Automatic compaction between the two reads (PreCompact, PostCompact, SessionStart
    # `compact`): the second read gets the card again.
    assert _replay("codex", _events("codex-0.171.0-contexts.jsonl", "compact", root), env) == [
        "main:Bash:card", "main:Bash:card"
    ]  # fmt: skip
    # An interrupted call (no PostToolUse, no Stop), then a resumed session: the card was
    # in the conversation already, and nothing gives it back.
    lines = _events("codex-0.171.0-contexts.jsonl", "interrupt", root)
    assert [_event_name(x) for x in lines if _event_name(x) != "SessionStart"] == [
        "UserPromptSubmit", "PreToolUse", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"
    ]  # fmt: skip
    assert _replay("codex", lines, env) == ["main:Bash:card", "main:Bash:-"]


def test_copilot_sub_agent_calls_belong_to_the_parent_sessions_run(tmp_path: Path) -> None:
    root, env, _ = _world(tmp_path)
    lines = _events("copilot-1.0.102-contexts.jsonl", "sub", root)
    assert _replay("copilot", lines, env) == ["main:task:-", "sub:view:card", "main:view:card"]
    parent = lines[0]["input"]["sessionId"]
    agent = next(x["input"]["agentId"] for x in lines if x["input"].get("agentId"))
    sessions = [d["session"] for d in read_deliveries(_recall(env), f"session:{parent}")]
    assert sessions == [f"{parent}/agent-{agent}", parent]
    # Both contexts' turns ended (agentStop): nothing is left pending.
    assert read_state(ledger_path_for(_recall(env), parent)).pending == []


def test_copilot_refunds_an_interrupted_turn_and_resets_on_compaction(tmp_path: Path) -> None:
    root, env, lesson = _world(tmp_path)
    lines = _events("copilot-1.0.102-contexts.jsonl", "interrupt", root)
    # The interrupted call got the card; no agentStop came, the resumed prompt refunded
    # it, and the next view gets it again, confirmed by that turn's agentStop.
    assert _replay("copilot", lines, env) == ["main:bash:card", "main:view:card"]
    session = lines[0]["input"]["sessionId"]
    state = read_state(ledger_path_for(_recall(env), session))
    assert state.delivered == {(lesson, 1)} and state.pending == []
    # Automatic compaction between two views: the second gets the card again.
    compact = _events("copilot-1.0.102-contexts.jsonl", "compact", root)
    assert _replay("copilot", compact, env) == ["main:view:card", "main:view:card"]
    # `/compact` (manual) after the turn: the context's ledger is empty again.
    manual = _events("copilot-1.0.102-contexts.jsonl", "manual", root)
    assert _replay("copilot", manual, env) == ["main:view:card"]
    state = read_state(ledger_path_for(_recall(env), manual[0]["input"]["sessionId"]))
    assert (state.spent, state.delivered) == (0, set())


def test_gemini_cannot_tell_a_sub_agent_and_resets_only_on_a_manual_compress(
    tmp_path: Path,
) -> None:
    root, env, _ = _world(tmp_path)
    lines = _events("gemini-0.61.0-contexts.jsonl", "sub", root)
    # The codebase_investigator's read carries the session's own ID and nothing else:
    # its card counts for the main agent, whose own read then gets nothing.
    assert all("agent_id" not in x["input"] for x in lines)
    assert len({x["input"]["session_id"] for x in lines}) == 1
    assert _replay("gemini", lines, env) == [
        "main:read_file:card", "main:complete_task:-", "main:invoke_agent:-", "main:read_file:-"
    ]  # fmt: skip
    compress = _events("gemini-0.61.0-contexts.jsonl", "compress", root)
    assert [x["input"]["trigger"] for x in compress if _event_name(x) == "PreCompress"] == [
        "auto", "auto", "manual"
    ]  # fmt: skip
    assert _replay("gemini", compress, env) == ["main:read_file:card"]
    session = compress[0]["input"]["session_id"]
    assert read_state(ledger_path_for(_recall(env), session)).delivered == set()
    automatic = next(x for x in compress if x["input"].get("trigger") == "auto")
    assert handle_event("gemini", automatic["input"], env) is None


def test_pis_extension_sends_session_compact_which_resets(tmp_path: Path) -> None:
    root, env, _ = _world(tmp_path)
    lines = _events("pi-0.73.1-contexts.jsonl", "compact", root)
    read, compact, _end = (line["input"] for line in lines)
    assert CARD in json.dumps(answer_hook("pi", read, env))
    assert CARD not in json.dumps(answer_hook("pi", read, env))  # once per context
    assert handle_event("pi", compact, env) == "reset"
    assert CARD in json.dumps(answer_hook("pi", read, env))


def test_a_bad_context_event_prints_nothing_and_leaves_one_log_line(tmp_path: Path) -> None:
    root, env, _ = _world(tmp_path)
    log = Path(_recall(env)) / "hook.log"
    good = json.dumps({"sessionId": "s1", "cwd": str(root)})
    for arguments, payload, says in (
        (["context", "copilot", "preCompact"], "{not json", "JSON"),
        (["context", "copilot", "preCompact"], "[1, 2]", "must be a JSON object"),
        (["context", "zed"], good, "unknown harness 'zed'"),
        (["context", "copilot", "preCompact", "extra"], good, "usage:"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "active_memory.hooks.command", *arguments],
            input=payload.encode(), capture_output=True, env=env, check=False,
        )  # fmt: skip
        assert (done.returncode, done.stdout) == (0, b"")
        last = log.read_text(encoding="utf-8").splitlines()[-1]
        assert says in last, last
    # An event the harness's hooks do not send changes nothing and logs nothing.
    lines = len(log.read_text(encoding="utf-8").splitlines())
    assert handle_event("copilot", {"sessionId": "s1"}, env, "subagentStop") is None
    assert len(log.read_text(encoding="utf-8").splitlines()) == lines
