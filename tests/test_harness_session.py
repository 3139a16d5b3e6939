"""A session's run record joined with its hooks' deliveries and receipts (harness_session.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from recall_support import (
    claude_payload,
    codex_payload,
    hook_env,
    make_checkout,
    publish,
    repository_lesson,
    run_hook,
)

from active_memory.cli import main
from active_memory.errors import InvalidRecord
from active_memory.recall.records import read_deliveries, record_receipt, run_dir
from active_memory.runlog.importers.harness_session import import_harness_session

SESSION = "5f0c1d2e-aaaa-4bbb-8ccc-123456789abc"


def _line(kind: str, at: str, content: Any, cwd: Path) -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["model"] = "claude-sonnet-4-5"
    entry = {"type": kind, "sessionId": SESSION, "cwd": str(cwd), "timestamp": at}
    return json.dumps({**entry, "message": message})


def _transcript(path: Path, checkout: Path) -> Path:
    read = {
        "type": "tool_use",
        "id": "t1",
        "name": "Read",
        "input": {"file_path": str(checkout / "src/api/client.py")},
    }
    fetch = {
        "type": "tool_use",
        "id": "t2",
        "name": "WebFetch",
        "input": {"url": "https://example.com"},
    }
    lines = [
        _line("user", "2026-12-01T10:00:00.000Z", "Fix the client", checkout),
        _line("assistant", "2026-12-01T10:00:01.000Z", [read], checkout),
        _line(
            "user",
            "2026-12-01T10:00:02.000Z",
            [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            checkout,
        ),
        _line("assistant", "2026-12-01T10:00:03.000Z", [fetch], checkout),
        _line(
            "user",
            "2026-12-01T10:00:04.000Z",
            [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}],
            checkout,
        ),
        _line(
            "assistant", "2026-12-01T10:00:05.000Z", [{"type": "text", "text": "Done."}], checkout
        ),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    checkout = make_checkout(tmp_path / "api")
    (checkout / "src" / "api").mkdir(parents=True)
    (checkout / "src" / "api" / "client.py").write_text("x = 1\n", encoding="utf-8")
    store = tmp_path / "lessons.sqlite3"
    receipt = publish(
        store, [repository_lesson("Regenerate the client", files=["src/api/client.py"])]
    )
    lesson = receipt.created[0][0]
    env = hook_env(tmp_path / "state", store)
    transcript = _transcript(tmp_path / f"{SESSION}.jsonl", checkout)
    return {"checkout": checkout, "env": env, "transcript": transcript, "lesson": lesson}


def _read_call(world: dict[str, Any], harness: str = "claude") -> None:
    build = claude_payload if harness == "claude" else codex_payload
    payload = build(
        "Read",
        {"file_path": str(world["checkout"] / "src/api/client.py")},
        session=SESSION,
        cwd=world["checkout"],
    )
    done = run_hook(harness, json.dumps(payload), world["env"])
    assert done.returncode == 0, done.stderr


def test_a_card_the_hook_delivered_is_in_the_sessions_run_record(world: dict[str, Any]) -> None:
    _read_call(world)
    record = import_harness_session(
        "claude", world["transcript"], session_id=SESSION, cwd=None, env=world["env"]
    )
    assert record.deliveries is not None
    assert [(d.session, d.lesson, d.revision) for d in record.deliveries] == [
        (SESSION, world["lesson"], 1)
    ]


def test_hook_receipts_replace_the_transcripts_for_hooked_tools_only(
    world: dict[str, Any],
) -> None:
    _read_call(world)
    record = import_harness_session(
        "claude", world["transcript"], session_id=None, cwd=None, env=world["env"]
    )
    tools = [(r.tool, r.paths) for r in record.receipts]
    # One Read (the hook's, not also the transcript's) and the unhooked WebFetch.
    assert tools.count(("Read", ("src/api/client.py",))) == 1
    assert ("WebFetch", ()) in tools
    assert len(tools) == 2
    assert all(r.node == "worker" for r in record.receipts)


def test_hooks_that_ran_and_delivered_nothing_give_an_empty_list(world: dict[str, Any]) -> None:
    payload = claude_payload(
        "Read", {"file_path": "README.md"}, session=SESSION, cwd=world["checkout"]
    )
    assert run_hook("claude", json.dumps(payload), world["env"]).returncode == 0
    record = import_harness_session(
        "claude", world["transcript"], session_id=SESSION, cwd=None, env=world["env"]
    )
    assert record.deliveries == ()


def test_no_hook_evidence_leaves_deliveries_absent(world: dict[str, Any]) -> None:
    record = import_harness_session(
        "claude", world["transcript"], session_id=SESSION, cwd=None, env=world["env"]
    )
    assert record.deliveries is None
    # The transcript's receipts stand.
    assert [r.tool for r in record.receipts] == ["Read", "WebFetch"]


def test_receipts_joined_past_the_cap_keep_the_first_and_the_latest(
    world: dict[str, Any],
) -> None:
    from active_memory.recall.environment import resolve_context
    from active_memory.recall.types import ToolCall

    call = ToolCall("claude", "Grep", {}, session=SESSION, cwd=str(world["checkout"]))
    context = resolve_context(call, world["env"])
    for index in range(600):
        record_receipt(context, "Grep", [f"src/f{index:03d}.py"])
    record = import_harness_session(
        "claude", world["transcript"], session_id=SESSION, cwd=None, env=world["env"]
    )
    assert len(record.receipts) == 512
    assert record.receipts_dropped == 601 - 512
    paths = [r.paths[0] for r in record.receipts if r.tool == "Grep"]
    assert paths[0] == "src/f000.py" and paths[-1] == "src/f599.py"


def test_a_line_torn_by_a_crash_loses_only_itself(world: dict[str, Any]) -> None:
    _read_call(world)
    recall_dir = os.path.join(world["env"]["ZEROSHOT_STATE_DIR"], "active-memory", "recall")
    path = Path(run_dir(recall_dir, f"session:{SESSION}")) / "deliveries.jsonl"
    whole = path.read_text(encoding="utf-8")
    # A cut record with no newline, then the next whole record glued on, then a repeat.
    path.write_text('{"session": "x", "lesson": "L-9", "rev' + whole + whole, encoding="utf-8")
    deliveries = read_deliveries(recall_dir, f"session:{SESSION}")
    assert [d["lesson"] for d in deliveries] == [world["lesson"]]


def test_codex_session_ids_join_the_same_way(world: dict[str, Any], tmp_path: Path) -> None:
    _read_call(world, "codex")
    rollout = tmp_path / "rollout.jsonl"
    meta = {"id": SESSION, "cwd": str(world["checkout"]), "timestamp": "2026-12-01T10:00:00Z"}
    lines = [
        {"timestamp": "2026-12-01T10:00:00Z", "type": "session_meta", "payload": meta},
        {
            "timestamp": "2026-12-01T10:00:01Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "Fix it"},
        },
        {
            "timestamp": "2026-12-01T10:00:02Z",
            "type": "event_msg",
            "payload": {"type": "agent_message", "message": "Done."},
        },
    ]
    rollout.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    record = import_harness_session("codex", rollout, session_id=None, cwd=None, env=world["env"])
    assert record.deliveries is not None and len(record.deliveries) == 1


def test_a_transcript_without_a_turn_is_an_empty_session_said_clearly(
    world: dict[str, Any], tmp_path: Path
) -> None:
    from active_memory.errors import EmptySession

    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    # Nothing to learn, which the worker finishes as such (docs/queue.md), still a clear
    # error for an import by hand.
    with pytest.raises(EmptySession, match="no turn in the claude session log"):
        import_harness_session("claude", empty, session_id=None, cwd=None, env=world["env"])
    garbled = tmp_path / "garbled.jsonl"
    garbled.write_text("not a transcript\n", encoding="utf-8")
    with pytest.raises(InvalidRecord, match="no run in the claude session log") as raised:
        import_harness_session("claude", garbled, session_id=None, cwd=None, env=world["env"])
    assert not isinstance(raised.value, EmptySession)


def test_import_claude_writes_the_joined_deliveries(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    _read_call(world)
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", world["env"]["ZEROSHOT_STATE_DIR"])
    out = tmp_path / "run.json"
    assert main(["import", "claude", str(world["transcript"]), "-o", str(out), "--json"]) == 0
    written = json.loads(out.read_text(encoding="utf-8"))
    assert [d["lesson"] for d in written["deliveries"]] == [world["lesson"]]
    report = json.loads(capsys.readouterr().out)
    assert report["runs"][0]["deliveries"] == 1


def test_the_hooked_tools_are_the_claude_installers_matcher() -> None:
    from active_memory.hooks.installers import claude
    from active_memory.runlog.importers.harness_session import HOOKED_TOOLS

    assert HOOKED_TOOLS["claude"] == frozenset(claude.MATCHER.split("|"))
