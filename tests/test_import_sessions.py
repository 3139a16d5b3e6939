"""Session logs of every layout in use, imported faithfully (fixtures: tests/fixtures/sessions).

Each fixture's tool calls are counted here straight from its files (independently of the
importer), and its prompts are the ones its README says a person typed.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from active_memory.cli import main
from active_memory.errors import InvalidRecord
from active_memory.runlog.importers.claude import import_transcript
from active_memory.runlog.importers.codex import import_rollout
from active_memory.runlog.record import VerifiedOutcome, parse_run_record

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"
INLINE = SESSIONS / "claude-1.0-inline" / "5f0c3a2e-1b7d-4e8f-9a6b-2c4d6e8f0a1b.jsonl"
FOLDER = SESSIONS / "claude-2.1-subagents" / "7c1e9b40-52d3-4f6a-8e21-0b9d3c5a7f12.jsonl"
REAL = SESSIONS / "claude-2.1.332-real" / "913df1ad-bf35-4229-9a7f-7a3c08238481.jsonl"
CUT = SESSIONS / "claude-cut-off.jsonl"
CODEX_077 = SESSIONS / "codex-0.77.jsonl"
CODEX_EARLY = SESSIONS / "codex-early.jsonl"
CODEX_REAL = SESSIONS / "codex-0.171-real.jsonl"


def _lines(path: Path) -> list[dict[str, Any]]:
    found = []
    for raw in path.read_text().splitlines():
        try:
            found.append(json.loads(raw))
        except json.JSONDecodeError:
            continue
    return found


def _claude_calls(path: Path) -> int:
    """tool_use blocks of `assistant` entries (progress echoes are `progress` entries)."""
    return sum(
        1
        for entry in _lines(path)
        if entry.get("type") == "assistant"
        for block in entry["message"]["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    )


def _subagent_files(main_file: Path) -> list[Path]:
    folder = main_file.parent / main_file.stem / "subagents"
    return [p for p in sorted(folder.glob("agent-*.jsonl")) if "acompact" not in p.name]


def _codex_calls(path: Path) -> int:
    kinds = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
    return sum(1 for e in _lines(path) if e.get("payload", e).get("type") in kinds)


def _report(path: Path, harness: str = "claude") -> dict[str, Any]:
    result = import_transcript(path) if harness == "claude" else import_rollout(path)
    report = result.runs[0].report
    assert report is not None
    return report


def _turns(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        e["event"]
        for e in record["events"]
        if e["event"]["kind"] == "node_started" and e["event"]["reference"]["node"] == "worker"
    ]


def _times(record: dict[str, Any]) -> list[datetime]:
    return [datetime.fromisoformat(e["at"]) for e in record["events"] if "at" in e]


# --- Claude Code: sub-agents in each layout ------------------------------------------


def test_inline_subagents_of_claude_1_0_are_nodes_of_their_own() -> None:
    run = import_transcript(INLINE).runs[0]
    report = run.report
    assert report is not None
    assert report["tool_calls"] == _claude_calls(INLINE) == 10
    per_node = report["tool_calls_per_node"]
    agents = sorted(node for node in per_node if node.startswith("worker/agent-"))
    assert len(agents) == 2  # two parallel Task calls, two sidechains
    assert per_node["worker"] == 6 and [per_node[a] for a in agents] == [2, 2]
    assert report["turns"] == 2  # the two prompts typed
    visits = parse_run_record(run.record).visits()
    assert {v.node for v in visits if isinstance(v.outcome, VerifiedOutcome)} >= set(agents)
    receipt_nodes = {r["node"] for r in run.record["receipts"]}
    assert receipt_nodes == {"worker", *agents}


def test_subagents_folder_of_claude_2_1_is_joined_once_despite_progress_echoes() -> None:
    report = _report(FOLDER)
    (agent_file,) = _subagent_files(FOLDER)
    expected = _claude_calls(FOLDER) + _claude_calls(agent_file)
    assert report["tool_calls"] == expected == 8
    assert report["tool_calls_per_node"] == {"worker": 5, "worker/agent-a4f19c2": 3}
    assert report["subagents"] == [
        {
            "node": "worker/agent-a4f19c2",
            "from": "7c1e9b40-52d3-4f6a-8e21-0b9d3c5a7f12/subagents/agent-a4f19c2.jsonl",
            "tool_calls": 3,
        }
    ]
    # The compaction helper's log (agent-acompact-*) is not a sub-agent of the work.
    assert report["lines_ignored"]["progress echo of a sub-agent (read from its own file)"] == 8


def test_progress_echoes_stand_in_when_the_subagent_file_is_missing(tmp_path: Path) -> None:
    alone = tmp_path / FOLDER.name
    shutil.copy(FOLDER, alone)
    report = _report(alone)
    assert report["tool_calls_per_node"] == {"worker": 5, "worker/agent-a4f19c2": 3}
    assert report["subagents"][0]["from"] == "progress echoes (no sub-agent file)"


def test_a_subagent_file_imported_alone_is_refused_naming_the_parent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (agent_file,) = _subagent_files(FOLDER)
    with pytest.raises(InvalidRecord, match="sub-agent a4f19c2"):
        import_transcript(agent_file)
    assert main(["import", "claude", str(agent_file), "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert str(FOLDER) in error and "import the parent transcript" in error
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing overwritten


def test_a_real_claude_2_1_332_session_with_a_background_subagent() -> None:
    run = import_transcript(REAL).runs[0]
    report = run.report
    assert report is not None
    (agent_file,) = _subagent_files(REAL)
    assert report["tool_calls"] == _claude_calls(REAL) + _claude_calls(agent_file) == 6
    assert report["tool_calls_per_node"]["worker/agent-aafae932a20d78975"] == 2
    assert report["turns"] == 2  # `-p` prompt, then a resumed `-p` prompt; /compact is not
    failures = [
        e["event"]["line"] for e in run.record["events"] if e["event"]["kind"] == "safe_log"
    ]
    assert failures == [
        "tool Bash failed: exit code 1: ModuleNotFoundError: No module named 'nosuchmodule'"
    ]


# --- Claude Code: what never opens a turn; time; honest endings ----------------------


def test_compaction_and_slash_commands_never_open_turns() -> None:
    record = import_transcript(FOLDER).runs[0].record
    # Typed: the first prompt and the custom /review command the model answered. Not:
    # two compaction summaries, /model, /compact, their local output, meta lines.
    assert [t["reference"]["execution"] for t in _turns(record)] == ["1", "2"]
    report = _report(FOLDER)
    assert report["lines_ignored"]["compaction summary"] == 2
    assert report["lines_ignored"]["local command output"] == 2
    # The auto-compaction came mid-turn: the turn went on past it (its timed-out test run
    # is logged on turn 1), and ended with an answer.
    logs = [
        (e["event"]["execution"], e["event"]["line"])
        for e in record["events"]
        if e["event"]["kind"] == "safe_log"
    ]
    assert ("1", "tool Bash timed out: Command timed out after 2m 0.0s") in logs
    assert report["turns_by_ending"] == {"verified": 2}


@pytest.mark.parametrize("path", [INLINE, FOLDER, REAL, CUT], ids=lambda p: p.parent.name)
def test_event_times_never_go_backwards(path: Path) -> None:
    times = _times(import_transcript(path).runs[0].record)
    assert times and times == sorted(times)


def test_a_log_cut_off_mid_turn_is_interrupted_never_verified() -> None:
    result = import_transcript(CUT)
    record = parse_run_record(result.runs[0].record)
    first, second = [v for v in record.visits() if v.node == "worker"]
    assert isinstance(first.outcome, VerifiedOutcome)
    assert second.outcome is None  # interrupted: no outcome, never evidence
    assert record.outcome == "cancelled"
    assert [(s.line, s.reason) for s in result.skipped] == [
        (8, "not JSON: Expecting value at column 122")  # the torn last line, cut after `:`
    ]
    report = result.runs[0].report
    assert report is not None
    assert report["lines_skipped"] == {"not JSON: Expecting value at column 122": 1}


def test_home_paths_never_become_workspace_paths() -> None:
    run = import_transcript(INLINE).runs[0]
    assert run.report is not None and run.report["paths_dropped"] == {"home": 1, "outside": 0}
    assert not any(
        p.startswith("~") or ".claude" in p for r in run.record["receipts"] for p in r["paths"]
    )


# --- Codex ---------------------------------------------------------------------------


def test_codex_0_77_rollout_with_a_long_failing_command() -> None:
    run = import_rollout(CODEX_077).runs[0]
    report = run.report
    assert report is not None
    assert report["tool_calls"] == _codex_calls(CODEX_077) == 8
    assert report["turns"] == 2
    lines = [e["event"]["line"] for e in run.record["events"] if e["event"]["kind"] == "safe_log"]
    first_call = next(e for e in _lines(CODEX_077) if e["payload"].get("type") == "function_call")
    long_command = json.loads(first_call["payload"]["arguments"])["cmd"]
    assert len(long_command) > 1000  # the exit code stands far past the first 200 characters
    assert lines[0] == (
        "tool exec_command failed: exit code 2: "
        "E   ImportError: cannot import name 'half_up' from 'shop.money'"
    )
    assert "deselect" not in " ".join(lines)  # the error is quoted, never the command
    assert "tool github__get_issue failed: GitHub API error: 404 Not Found" in lines
    assert report["paths_dropped"] == {"home": 1, "outside": 0}  # read_file ~/.config/…
    tools = [r["tool"] for r in run.record["receipts"]]
    assert tools == [
        "exec_command",
        "shell_command",
        "apply_patch",
        "exec_command",
        "write_stdin",
        "github__get_issue",
        "read_file",
        "shell",
    ]


def test_a_codex_turn_without_task_complete_is_interrupted() -> None:
    record = parse_run_record(import_rollout(CODEX_077).runs[0].record)
    first, second = record.visits()
    assert isinstance(first.outcome, VerifiedOutcome)
    assert second.outcome is None
    assert record.outcome == "cancelled"


def test_agent_text_alone_does_not_answer_a_codex_turn(tmp_path: Path) -> None:
    log = tmp_path / "rollout.jsonl"
    rows = [
        ("session_meta", {"id": "s-1", "cwd": "/w"}),
        ("event_msg", {"type": "task_started"}),
        ("event_msg", {"type": "user_message", "message": "Fix it"}),
        ("event_msg", {"type": "agent_message", "message": "Working on it."}),
    ]
    log.write_text(
        "".join(
            json.dumps({"timestamp": f"2026-11-21T08:00:0{i}Z", "type": k, "payload": p}) + "\n"
            for i, (k, p) in enumerate(rows)
        )
    )
    record = parse_run_record(import_rollout(log).runs[0].record)
    assert record.visits()[0].outcome is None and record.outcome == "cancelled"


def test_codex_early_layout_before_the_envelope() -> None:
    run = import_rollout(CODEX_EARLY).runs[0]
    report = run.report
    assert report is not None
    assert report["tool_calls"] == _codex_calls(CODEX_EARLY) == 3
    assert report["turns"] == 2  # two prompts; the user_instructions message is not one
    assert run.record["title"] == "Why does test_total fail?"
    receipts = [(r["tool"], r["paths"]) for r in run.record["receipts"]]
    assert receipts == [
        ("shell", ["tests"]),
        ("shell", ["src/cart/total.py"]),
        ("local_shell", []),
    ]


def test_a_real_codex_0_171_rollout() -> None:
    run = import_rollout(CODEX_REAL).runs[0]
    report = run.report
    assert report is not None
    assert report["tool_calls"] == _codex_calls(CODEX_REAL) == 2
    assert report["turns_by_ending"] == {"verified": 1}
    assert run.record["title"] == "Run the rounding tests"  # from item_completed UserMessage
    lines = [e["event"]["line"] for e in run.record["events"] if e["event"]["kind"] == "safe_log"]
    assert lines[0] == (
        "tool exec_command failed: exit code 3: ModuleNotFoundError: No module named "
        "checkout_rounding"
    )


@pytest.mark.parametrize("path", [CODEX_077, CODEX_EARLY, CODEX_REAL], ids=lambda p: p.stem)
def test_codex_event_times_never_go_backwards(path: Path) -> None:
    times = _times(import_rollout(path).runs[0].record)
    assert times == sorted(times)


# --- the report ----------------------------------------------------------------------


def test_import_json_report_counts_turns_calls_subagents_and_skips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "claude", str(FOLDER), "--out", str(tmp_path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    report = document["runs"][0]["report"]
    assert report["turns"] == 2
    assert report["tool_calls_per_node"] == {"worker": 5, "worker/agent-a4f19c2": 3}
    assert report["subagents_joined"] == 1
    assert report["lines_ignored"]["slash command"] == 3
    assert report["times_clamped"] >= 0 and report["receipts_dropped"] == 0
    assert document["skipped"] == [] and report["lines_skipped"] == {}


def test_import_prints_the_report_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "codex", str(CODEX_077), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 turns (interrupted 1, verified 1), 8 tool calls (worker 8)" in out
    assert "1 path outside the workspace dropped" in out


def test_claude_2_0_sibling_agent_files_are_joined(tmp_path: Path) -> None:
    # 2.0.x wrote agent-<id>.jsonl beside the transcript; the transcript names the ID.
    main_file = tmp_path / FOLDER.name
    shutil.copy(FOLDER, main_file)
    (agent_file,) = _subagent_files(FOLDER)
    shutil.copy(agent_file, tmp_path / agent_file.name)
    report = _report(main_file)
    assert report["subagents"][0]["from"] == agent_file.name
    assert report["tool_calls_per_node"] == {"worker": 5, "worker/agent-a4f19c2": 3}


def test_a_subagent_file_of_another_session_is_not_joined(tmp_path: Path) -> None:
    main_file = tmp_path / FOLDER.name
    shutil.copy(FOLDER, main_file)
    (agent_file,) = _subagent_files(FOLDER)
    folder = tmp_path / FOLDER.stem / "subagents"
    folder.mkdir(parents=True)
    foreign = agent_file.read_text().replace(FOLDER.stem, "00000000-0000-0000-0000-000000000000")
    (folder / agent_file.name).write_text(foreign)
    result = import_transcript(main_file)
    report = result.runs[0].report
    assert report is not None and report["tool_calls_per_node"] == {"worker": 5}
    assert [s.reason for s in result.skipped] == [
        f"{FOLDER.stem}/subagents/{agent_file.name}: belongs to another session"
    ]


def test_a_clock_that_goes_back_is_clamped_and_counted(tmp_path: Path) -> None:
    def entry(kind: str, at: str, content: Any) -> str:
        message: dict[str, Any] = {"role": kind, "content": content}
        return json.dumps(
            {"type": kind, "sessionId": "s-1", "cwd": "/w", "timestamp": at, "message": message}
        )

    log = tmp_path / "s.jsonl"
    log.write_text(
        "\n".join(
            [
                entry("user", "2026-11-20T10:00:10Z", "First"),
                entry("assistant", "2026-11-20T10:00:05Z", [{"type": "text", "text": "ok"}]),
                entry("user", "2026-11-20T10:00:20Z", "Second"),
                entry("assistant", "2026-11-20T10:00:21Z", [{"type": "text", "text": "ok"}]),
            ]
        )
        + "\n"
    )
    run = import_transcript(log).runs[0]
    times = _times(run.record)
    assert times == sorted(times)
    assert run.report is not None and run.report["times_clamped"] >= 1
