"""`import pi|gemini|copilot PATH`: the client's own session log (written by the real
binary: tests/fixtures/harness_sessions/) becomes a run record, streamed; malformed lines
are reported and skipped; the session is joined with what its hooks recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from active_memory.runlog.importers.harness_session import import_session_log

FIXTURES = Path(__file__).parent / "fixtures" / "harness_sessions"
CLI = Path(sys.executable).parent / "active-memory"
LOGS = {
    "pi": ("pi-0.73.1.jsonl", "/tmp/pix/proj", "pi-01a23249-a077-7518-9c73-172217d36800", "read"),
    "gemini": ("gemini-0.61.0.jsonl", "/tmp/gmx/proj",
               "gemini-9df9924c-5a9f-4e6d-9a75-481a5202ecbc", "read_file"),
    "copilot": ("copilot-1.0.102.jsonl", "/tmp/cpx/proj",
                "copilot-cd87ceb7-cca1-4f11-bde2-c807428639ec", "view"),
}  # fmt: skip


def session_log(harness: str, tmp_path: Path, edit: Any = None) -> tuple[Path, Path]:
    """The fixture with its folder moved to a checkout under `tmp_path`; (log, checkout)."""
    name, folder, _, _ = LOGS[harness]
    checkout = tmp_path / "proj"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin",
                    "git@github.com:acme/api.git"], check=True)  # fmt: skip
    lines = (FIXTURES / name).read_text(encoding="utf-8").replace(folder, str(checkout))
    if edit is not None:
        lines = edit(lines.splitlines())
        lines = "\n".join(lines) + "\n"
    path = tmp_path / name
    path.write_text(lines, encoding="utf-8")
    return path, checkout


@pytest.mark.parametrize("harness", ["pi", "gemini", "copilot"])
def test_the_session_log_becomes_one_run_record(harness: str, tmp_path: Path) -> None:
    path, checkout = session_log(harness, tmp_path)
    result = import_session_log(harness, path)
    assert result.skipped == []
    (run,) = result.runs
    record = run.record
    assert record["run_id"] == LOGS[harness][2]
    assert record["outcome"] == "succeeded"
    assert record["repository"]["checkout"] == str(checkout)
    assert record["repository"]["namespace"] == "repo:github.com/acme/api"
    assert [(r["tool"], r["paths"]) for r in record["receipts"]] == [(LOGS[harness][3], ["a.py"])]
    assert run.report is not None and run.report["turns_by_ending"] == {"verified": 1}


@pytest.mark.parametrize("harness", ["pi", "gemini", "copilot"])
def test_a_malformed_line_is_reported_and_the_rest_imported(harness: str, tmp_path: Path) -> None:
    def break_line(lines: list[str]) -> list[str]:
        return [lines[0], '{"type": "message", "cut', *lines[1:]]

    path, _ = session_log(harness, tmp_path, break_line)
    result = import_session_log(harness, path)
    assert [(s.line, "JSON" in s.reason or "json" in s.reason) for s in result.skipped] == [
        (2, True)
    ]
    assert len(result.runs) == 1 and result.runs[0].record["receipts"]


def test_a_failed_pi_tool_call_is_a_log_line(tmp_path: Path) -> None:
    def fail(lines: list[str]) -> list[str]:
        return [line.replace('"isError":false', '"isError":true') for line in lines]

    path, _ = session_log("pi", tmp_path, fail)
    (run,) = import_session_log("pi", path).runs
    lines = [e["event"]["line"] for e in run.record["events"] if e["event"]["kind"] == "safe_log"]
    assert lines == ["tool read failed: X=1 CARD-PI-MARKER"]


def test_not_a_session_log_imports_nothing_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "other.jsonl"
    path.write_text('{"hello": "world"}\n', encoding="utf-8")
    for harness in ("pi", "gemini", "copilot"):
        result = import_session_log(harness, path)
        assert result.runs == [] and result.skipped


def test_the_cli_imports_a_copilot_session_folder_as_json(tmp_path: Path) -> None:
    path, _ = session_log("copilot", tmp_path)
    folder = tmp_path / "session-state" / "cd87ceb7"
    folder.mkdir(parents=True)
    path.rename(folder / "events.jsonl")
    env = {"HOME": str(tmp_path / "home"), "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
           "PATH": "/usr/bin:/bin"}  # fmt: skip
    done = subprocess.run(
        [str(CLI), "import", "copilot", str(folder), "--out", str(tmp_path), "--json"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert run["run_id"] == LOGS["copilot"][2] and run["receipts"] == 1
    assert run["deliveries"] is None  # no hook records for this session here
    assert "maintenance will abstain" in done.stderr
    assert Path(run["path"]).is_file()


def test_the_cli_refuses_a_missing_log(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(CLI), "import", "gemini", str(tmp_path / "nope.jsonl")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "no such session log" in done.stderr


def test_a_gemini_session_takes_the_workers_lane_and_needs_a_model_named(
    tmp_path: Path,
) -> None:
    from active_memory.runlog.record import parse_run_record
    from active_memory.worker.lanes import LaneTarget
    from active_memory.worker.runtime import NoModel, session_runtime

    path, _ = session_log("gemini", tmp_path)
    (run,) = import_session_log("gemini", path).runs
    record = parse_run_record(run.record, str(path))
    with pytest.raises(NoModel, match=r"no postmortem lane of its own.*\[worker\] lane"):
        session_runtime(record, active_memory={})
    # The lane is the worker's (claude -p): a Gemini model is no model for it.
    with pytest.raises(NoModel, match=r"the claude lane needs a model.*\[worker\] model"):
        session_runtime(record, target=LaneTarget(harness="claude"), active_memory={})
    config = session_runtime(
        record, target=LaneTarget(harness="claude", model="claude-sonnet-5"), active_memory={}
    )
    assert (config.settings.harness, config.settings.provider) == ("claude", "anthropic")
    assert config.lane is not None and config.lane.model == "claude-sonnet-5"
