"""Gemini CLI, Copilot CLI and Pi hook payloads, as the real binaries sent them, answered.

The payloads are tests/fixtures/harness_payloads/ (captured from the binaries; see its
README). Each is answered through the same engine as Claude Code's: the card of the
lesson naming the file, in the harness's own answer shape; once per session; a receipt
for every call; and a payload the hook cannot read gives no context, exit 0 and one log
line (a new hook process, as the harness runs it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from recall_support import hook_env, make_checkout, publish, repository_lesson, run_hook

from active_memory.recall.engine import answer_hook
from active_memory.recall.records import read_receipts

FIXTURES = Path(__file__).parent / "fixtures" / "harness_payloads"
RECOMMENDATION = "Run make api-client after editing a.py; never edit the client by hand."
CAPTURED = {
    "gemini": ("gemini-0.61.0.jsonl", "AfterTool", "/tmp/gmx/proj"),
    "copilot": ("copilot-1.0.102.jsonl", "preToolUse", "/tmp/cpx/proj"),
    "pi": ("pi-0.73.1.jsonl", "pi", "/tmp/pix/proj"),
}


def captured(harness: str, root: Path) -> dict[str, Any]:
    """The recorded tool-call payload of `harness`, its folder replaced by `root`."""
    name, args, folder = CAPTURED[harness]
    for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
        if line.strip():
            text = line.replace(folder, str(root))
            entry = json.loads(text)
            if entry["args"] == args:
                payload: dict[str, Any] = entry["input"]
                return payload
    raise AssertionError(f"no {args} call in {name}")


def context_of(harness: str, answer: dict[str, Any]) -> str:
    if not answer:
        return ""
    if harness == "gemini":
        assert answer["hookSpecificOutput"]["hookEventName"] == "AfterTool"
        text: str = answer["hookSpecificOutput"]["additionalContext"]
    elif harness == "copilot":
        text = answer["additionalContext"]
    else:
        text = answer["append"]
        assert text.startswith("\n\n")
    return text


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    root = make_checkout(tmp_path / "proj")
    store = tmp_path / "lessons.sqlite3"
    publish(store, [repository_lesson("Regenerate the client", RECOMMENDATION, files=["a.py"])])
    return {"root": root, "env": hook_env(tmp_path / "state", store), "state": tmp_path / "state"}


@pytest.mark.parametrize("harness", ["gemini", "copilot", "pi"])
def test_the_captured_call_gets_the_card_once_per_session(
    harness: str, world: dict[str, Any]
) -> None:
    payload = captured(harness, world["root"])
    first = answer_hook(harness, payload, world["env"])
    assert RECOMMENDATION in context_of(harness, first)
    assert answer_hook(harness, payload, world["env"]) == {}  # once per session
    session = payload.get("session_id") or payload.get("sessionId") or payload["sessionID"]
    receipts = read_receipts(str(world["state"] / "active-memory" / "recall"), f"session:{session}")
    assert [r["paths"] for r in receipts] == [["a.py"], ["a.py"]]
    tool = {"gemini": "read_file", "copilot": "view", "pi": "read"}[harness]
    assert [r["tool"] for r in receipts] == [tool, tool]


def test_copilot_tool_arguments_as_json_text_are_read_too(world: dict[str, Any]) -> None:
    # Copilot CLI's hooks before 1.0 sent `toolArgs` as the arguments' JSON text.
    payload = captured("copilot", world["root"])
    payload["toolArgs"] = json.dumps(payload["toolArgs"])
    assert RECOMMENDATION in context_of("copilot", answer_hook("copilot", payload, world["env"]))


@pytest.mark.parametrize("harness", ["gemini", "copilot", "pi"])
def test_an_unreadable_payload_gives_no_context_exit_0_and_one_log_line(
    harness: str, world: dict[str, Any]
) -> None:
    payload = captured(harness, world["root"])
    broken = json.dumps(payload)[:-7]  # cut short, as a killed writer leaves it
    done = run_hook(harness, broken, world["env"])
    assert (done.returncode, done.stdout) == (0, b"")
    log = world["state"] / "active-memory" / "recall" / "hook.log"
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and f"hook {harness} " in lines[0]


def test_the_real_process_answers_each_harness(world: dict[str, Any]) -> None:
    for harness in ("gemini", "copilot", "pi"):
        payload = captured(harness, world["root"])
        payload["session_id" if harness == "gemini" else
                "sessionId" if harness == "copilot" else "sessionID"] = f"s-{harness}"  # fmt: skip
        done = run_hook(harness, json.dumps(payload), world["env"])
        assert done.returncode == 0, done.stderr
        assert RECOMMENDATION in context_of(harness, json.loads(done.stdout))


def test_the_captured_session_ends_name_the_session_and_its_log(tmp_path: Path) -> None:
    from active_memory.hooks.session_end import session_end

    name, _, folder = CAPTURED["gemini"]
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    (gemini,) = [json.loads(x)["input"] for x in lines if json.loads(x)["args"] == "SessionEnd"]
    end = session_end("gemini", gemini)
    assert (end.session_id, end.cwd, end.event) == (gemini["session_id"], folder, "SessionEnd")
    assert end.transcript == gemini["transcript_path"]

    name, _, folder = CAPTURED["copilot"]
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    (copilot,) = [json.loads(x)["input"] for x in lines if json.loads(x)["args"] == "sessionEnd"]
    end = session_end("copilot", copilot, {"HOME": str(tmp_path)})
    assert (end.session_id, end.cwd) == (copilot["sessionId"], folder)
    expected = tmp_path / ".copilot" / "session-state" / copilot["sessionId"] / "events.jsonl"
    assert end.transcript == str(expected)
    end = session_end("copilot", copilot, {"COPILOT_HOME": str(tmp_path / "ch")})
    assert end.transcript.startswith(str(tmp_path / "ch" / "session-state"))


def test_a_session_end_without_a_session_is_refused() -> None:
    from active_memory.hooks.session_end import session_end

    with pytest.raises(ValueError, match="no usable session id"):
        session_end("copilot", {"cwd": "/x", "reason": "complete"}, {})
    with pytest.raises(ValueError, match="no usable session id"):
        session_end("pi", {"cwd": "/x", "transcriptPath": "/x/s.jsonl"}, {})
