"""`import codex`: a run record from a Codex session log (`rollout-*.jsonl`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.cli import main
from active_memory.runlog.importers.codex import import_rollout
from active_memory.runlog.record import ErrorOutcome, VerifiedOutcome, load_run_record

FIXTURE = Path(__file__).parent / "fixtures" / "sessions" / "codex-rollout.jsonl"
SESSION = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"


def _line(at: str, kind: str, payload: object) -> str:
    return json.dumps({"timestamp": at, "type": kind, "payload": payload})


def test_session_meta_gives_identity_repository_and_source() -> None:
    record = import_rollout(FIXTURE).runs[0].record
    assert record["run_id"] == f"codex-{SESSION}"
    assert record["title"] == "Make the cart total round half up"
    assert record["repository"]["namespace"] == "repo:github.com/acme/shop"
    assert record["repository"]["checkout"] == "/home/dev/shop"
    assert record["source"] == {
        "repository": "acme/shop",
        "branch": "main",
        "revision": "89abcdef0123456789abcdef0123456789abcdef",
    }
    assert record["runtime"] == {
        "harness": "codex",
        "provider": "openai",
        "nodes": {"worker": {"kind": "agent", "model": "gpt-5-codex"}},
    }


def test_turns_settle_by_how_they_ended(tmp_path: Path) -> None:
    out = tmp_path / "codex.run.json"
    assert main(["import", "codex", str(FIXTURE), "-o", str(out)]) == 0
    record = load_run_record(out)
    visits = record.visits()
    assert [v.execution for v in visits] == ["1", "2", "3"]
    assert isinstance(visits[0].outcome, VerifiedOutcome)  # task_complete, tool recovered
    assert isinstance(visits[1].outcome, ErrorOutcome)
    assert visits[1].outcome.code == "crash"  # "stream disconnected before completion"
    assert visits[2].outcome is None  # turn_aborted: interrupted by the user
    assert record.outcome == "cancelled"
    assert record.completions == {"1": "Rounding now uses half-up; added a test."}


def test_tool_calls_and_patches_become_receipts() -> None:
    receipts = [(r["tool"], r["paths"]) for r in import_rollout(FIXTURE).runs[0].record["receipts"]]
    assert receipts == [
        ("shell", ["web"]),  # bash -lc "cd web && …"
        ("shell_command", ["src/cart"]),  # its workdir
        ("apply_patch", ["src/cart/total.py", "tests/test_total.py"]),
        ("read_file", []),  # /etc/passwd is outside the workspace
        ("local_shell", ["tests"]),
    ]


def test_timed_out_and_failed_tool_outputs_are_logged() -> None:
    events = import_rollout(FIXTURE).runs[0].record["events"]
    lines = [e["event"]["line"] for e in events if e["event"].get("stream") == "error"]
    assert lines[0].startswith("tool shell timed out: exit code 124")
    assert lines[1].startswith("tool read_file failed")


def test_malformed_lines_are_reported_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "codex", str(FIXTURE), "--out", str(tmp_path), "--json"]) == 0
    captured = capsys.readouterr()
    skipped = json.loads(captured.out)["skipped"]
    assert [s["line"] for s in skipped] == [20, 21, 22]
    assert skipped[2]["reason"] == "response_item entry without a payload object"
    assert "skipped line 20" in captured.err


def test_a_tool_timeout_that_ends_an_interrupted_turn_is_a_timeout(tmp_path: Path) -> None:
    call = {"type": "function_call", "name": "shell", "call_id": "c1"}
    call["arguments"] = json.dumps({"command": ["bash", "-lc", "make slow"]})
    timed_out = {"output": "command timed out", "metadata": {"exit_code": 124}}
    log = tmp_path / "rollout-timeout.jsonl"
    log.write_text(
        "\n".join(
            [
                _line("2026-11-21T09:00:00Z", "session_meta", {"id": "s-2", "cwd": "/w"}),
                _line(
                    "2026-11-21T09:00:01Z", "event_msg", {"type": "user_message", "message": "go"}
                ),
                _line("2026-11-21T09:00:02Z", "response_item", call),
                _line(
                    "2026-11-21T09:10:02Z",
                    "response_item",
                    {
                        "type": "function_call_output",
                        "call_id": "c1",
                        "output": json.dumps(timed_out),
                    },
                ),
                _line(
                    "2026-11-21T09:10:05Z",
                    "event_msg",
                    {"type": "turn_aborted", "reason": "interrupted"},
                ),
            ]
        )
        + "\n"
    )
    result = import_rollout(log)
    assert result.skipped == []
    completed = [
        e for e in result.runs[0].record["events"] if e["event"]["kind"] == "node_completed"
    ]
    assert completed[0]["event"]["completion"]["outcome"]["code"] == "timeout"
    assert result.runs[0].record["outcome"] == "failed"


def test_rate_limit_errors_leave_the_turn_without_an_outcome(tmp_path: Path) -> None:
    log = tmp_path / "rollout-limit.jsonl"
    message = "exceeded retry limit, last status: 429 Too Many Requests"
    log.write_text(
        "\n".join(
            [
                _line("2026-11-21T09:00:00Z", "session_meta", {"id": "s-3", "cwd": "/w"}),
                _line("2026-11-21T09:00:01Z", "event_msg", {"type": "task_started"}),
                _line(
                    "2026-11-21T09:00:01Z", "event_msg", {"type": "user_message", "message": "go"}
                ),
                _line("2026-11-21T09:01:00Z", "event_msg", {"type": "error", "message": message}),
                _line("2026-11-21T09:01:00Z", "event_msg", {"type": "task_complete"}),
            ]
        )
        + "\n"
    )
    record = import_rollout(log).runs[0].record
    kinds = [e["event"]["kind"] for e in record["events"]]
    assert kinds.count("node_started") == 1  # task_started + user_message is one turn
    assert "node_completed" not in kinds
    assert record["outcome"] == "failed"


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("unexpected status 504 Gateway Timeout: upstream request timed out", "timeout"),
        ("stream disconnected before completion: idle timeout waiting for SSE", "timeout"),
        ("unexpected status 500 Internal Server Error: boom", "crash"),
    ],
)
def test_a_turn_that_failed_in_its_task_complete_is_not_verified(
    tmp_path: Path, message: str, code: str
) -> None:
    # Codex 0.171 writes a failed turn as task_complete with `error` and no error event
    # (seen with the real binary against the fake model server).
    log = tmp_path / "rollout-failed.jsonl"
    failed = {"type": "task_complete", "last_agent_message": None, "error": {"message": message}}
    log.write_text(
        "\n".join(
            [
                _line("2026-12-01T09:00:00Z", "session_meta", {"id": "s-4", "cwd": "/w"}),
                _line("2026-12-01T09:00:01Z", "event_msg", {"type": "task_started"}),
                _line(
                    "2026-12-01T09:00:01Z", "event_msg", {"type": "user_message", "message": "go"}
                ),
                _line("2026-12-01T09:00:05Z", "event_msg", failed),
            ]
        )
        + "\n"
    )
    record = import_rollout(log).runs[0].record
    [completed] = [e for e in record["events"] if e["event"]["kind"] == "node_completed"]
    assert completed["event"]["completion"]["outcome"]["code"] == code
    assert record["outcome"] == "failed"
