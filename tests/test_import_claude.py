"""`import claude`: a run record from a Claude Code session transcript (JSONL)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from active_memory.cli import main
from active_memory.runlog.importers.claude import import_transcript
from active_memory.runlog.importers.session import classify_error
from active_memory.runlog.record import ErrorOutcome, VerifiedOutcome, load_run_record

FIXTURE = Path(__file__).parent / "fixtures" / "sessions" / "claude-session.jsonl"
SESSION = "0b7c2f4e-9d1a-4c3b-8e5f-6a7b8c9d0e1f"


def _entry(kind: str, at: str, content: Any, cwd: str, **extra: Any) -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["model"] = "claude-opus-4-1"
    return json.dumps(
        {"type": kind, "sessionId": "s-1", "cwd": cwd, "timestamp": at, "message": message} | extra
    )


def test_each_user_turn_is_one_visit_of_the_worker() -> None:
    result = import_transcript(FIXTURE)
    run = result.runs[0]
    assert run.run_id == f"claude-{SESSION}"
    record = run.record
    started = [e for e in record["events"] if e["event"]["kind"] == "node_started"]
    turns = [e for e in started if e["event"]["reference"]["node"] == "worker"]
    assert [e["event"]["reference"]["execution"] for e in turns] == ["1", "2", "3", "4"]
    # The inline sub-agent (isSidechain) runs as a node of its own, not as a turn.
    assert [e["event"]["reference"]["node"] for e in started if e not in turns] == [
        "worker/agent-u10"
    ]
    assert record["title"] == "Fix the failing checkout test"
    assert record["runtime"]["harness"] == "claude"
    assert record["runtime"]["nodes"]["worker"]["model"] == "claude-sonnet-4-5-20250929"
    assert record["source"] == {"branch": "fix/checkout"}


def test_turn_outcomes_follow_what_the_log_shows(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["import", "claude", str(FIXTURE), "-o", str(out)]) == 0
    visits = {v.execution: v for v in load_run_record(out).visits()}
    # 1 ended normally although a tool timed out inside it (the agent recovered).
    assert isinstance(visits["1"].outcome, VerifiedOutcome)
    # 2 was interrupted right after a tool call timed out: the visit timed out.
    assert isinstance(visits["2"].outcome, ErrorOutcome)
    assert visits["2"].outcome.code == "timeout"
    # 3 ended on "API Error: Request timed out.".
    assert isinstance(visits["3"].outcome, ErrorOutcome)
    assert visits["3"].outcome.code == "timeout"
    # 4 was interrupted by the user: no outcome, which is never evidence.
    assert visits["4"].outcome is None
    assert load_run_record(out).outcome == "cancelled"


def test_tool_calls_become_receipts_with_root_relative_paths() -> None:
    record = import_transcript(FIXTURE).runs[0].record
    by_tool = [(r["tool"], r["paths"]) for r in record["receipts"]]
    assert ("Read", ["src/checkout/cart.py"]) in by_tool
    assert ("Bash", ["web"]) in by_tool  # `cd web && npm test`
    assert ("Grep", ["src/checkout"]) in by_tool
    assert ("Glob", ["tests"]) in by_tool
    assert ("Read", ["docs/checkout.md"]) in by_tool  # a sub-agent's call counts too
    assert ("Write", ["tests/test_rounding.py"]) in by_tool
    assert ("Edit", []) in by_tool  # /etc/hosts is outside the workspace: dropped
    assert all("input" not in r and "result" not in r for r in record["receipts"])


def test_failed_and_timed_out_tool_calls_are_logged_on_their_turn() -> None:
    record = import_transcript(FIXTURE).runs[0].record
    lines = [
        (e["event"]["execution"], e["event"]["line"])
        for e in record["events"]
        if e["event"]["kind"] == "safe_log" and e["event"]["stream"] == "error"
    ]
    assert ("1", "tool Bash timed out: Command timed out after 2m 0.0s") in lines
    assert ("4", "tool Edit failed: File does not exist.") in lines


def test_malformed_lines_are_reported_and_skipped_never_fatal() -> None:
    result = import_transcript(FIXTURE)
    assert [(s.line, s.reason) for s in result.skipped] == [
        (22, "not JSON: Expecting value at column 47"),  # cut right after `:`
        (23, "not a JSON object"),
        (24, "assistant entry without a message object"),
    ]
    assert len(result.runs) == 1


def test_unknown_entry_types_are_skipped_silently(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text(
        "\n".join(
            [
                json.dumps({"type": "summary", "summary": "x", "leafUuid": "u"}),
                json.dumps({"type": "brand-new-kind", "payload": [1, 2]}),
                _entry("user", "2026-11-20T10:00:00Z", "hello", "/w"),
                _entry("assistant", "2026-11-20T10:00:01Z", [{"type": "text", "text": "hi"}], "/w"),
            ]
        )
    )
    result = import_transcript(log)
    assert result.skipped == []
    assert result.runs[0].record["outcome"] == "succeeded"
    assert result.runs[0].record["completions"] == {"1": "hi"}


def test_cli_reports_skipped_lines_on_stderr_and_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "claude", str(FIXTURE), "--out", str(tmp_path), "--json"]) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["runs"][0]["run_id"] == f"claude-{SESSION}"
    assert document["runs"][0]["path"] == str(tmp_path / f"claude-{SESSION}.run.json")
    assert document["runs"][0]["events"] == 17  # 15 + the sub-agent's start and end
    assert {"line": 23, "reason": "not a JSON object"} in document["skipped"]
    assert "skipped line 23: not a JSON object" in captured.err


def test_api_errors_map_to_crash_refusal_or_no_outcome(tmp_path: Path) -> None:
    rows = []
    texts = [
        ("API Error: 529 Overloaded. This is a server-side issue.", None),
        ("OAuth token revoked", "authentication_failed"),
        ("You've hit your session limit · resets 1:20am", "rate_limit"),
    ]
    for index, (text, flag) in enumerate(texts):
        at = f"2026-11-20T10:0{index}:00Z"
        rows.append(_entry("user", at, f"prompt {index}", "/w"))
        extra: dict[str, Any] = {"isApiErrorMessage": True}
        if flag:
            extra["error"] = flag
        rows.append(_entry("assistant", at, [{"type": "text", "text": text}], "/w", **extra))
    log = tmp_path / "errors.jsonl"
    log.write_text("\n".join(rows) + "\n")
    out = tmp_path / "errors.run.json"
    assert main(["import", "claude", str(log), "-o", str(out)]) == 0
    record = load_run_record(out)
    outcomes = [v.outcome for v in record.visits()]
    assert isinstance(outcomes[0], ErrorOutcome) and outcomes[0].code == "crash"
    assert isinstance(outcomes[1], ErrorOutcome) and outcomes[1].code == "refusal"
    assert outcomes[2] is None
    assert record.outcome == "failed"


def test_error_classification_needs_an_explicit_timeout() -> None:
    assert classify_error("API Error: Request timed out.") == "timeout"
    assert classify_error("exceeded retry limit, last status: 429 Too Many Requests") == "unknown"
    assert classify_error("API Error: Connection lost mid-response.") == "crash"
    assert classify_error("API Error: 400 prompt is too long") == "unknown"


def test_session_in_a_git_checkout_uses_its_remote_and_root(tmp_path: Path) -> None:
    repo = tmp_path / "api"
    (repo / "web").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(
        ["git", "remote", "add", "origin", "git@github.com:acme/api.git"], cwd=repo, check=True
    )
    cwd = str(repo / "web")
    read = [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "app.ts"}}]
    log = tmp_path / "in-repo.jsonl"
    log.write_text(
        _entry("user", "2026-11-20T10:00:00Z", "look", cwd)
        + "\n"
        + _entry("assistant", "2026-11-20T10:00:01Z", read, cwd)
        + "\n"
    )
    record = import_transcript(log).runs[0].record
    assert record["repository"]["namespace"] == "repo:github.com/acme/api"
    assert record["repository"]["remote"] == "git@github.com:acme/api.git"
    assert record["repository"]["aliases"] == ["acme/api", "api"]
    assert record["source"]["repository"] == "acme/api"
    assert record["receipts"][0]["paths"] == ["web/app.ts"]


def test_a_transcript_without_any_turn_imports_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "empty.jsonl"
    log.write_text("not json\n")
    assert main(["import", "claude", str(log), "--out", str(tmp_path)]) == 1
    assert "no user turn" in capsys.readouterr().err
    assert list(tmp_path.glob("*.run.json")) == []


def test_a_missing_transcript_is_a_usage_error(tmp_path: Path) -> None:
    assert main(["import", "claude", str(tmp_path / "nope.jsonl")]) == 2


def test_records_go_to_the_state_folder_by_default_never_the_current_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "checkout"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "state"))
    assert main(["import", "claude", str(FIXTURE)]) == 0
    assert list(work.iterdir()) == []
    written = tmp_path / "state" / "active-memory" / "imports" / f"claude-{SESSION}.run.json"
    assert written.is_file() and f"written to {written.parent}" in capsys.readouterr().out
