"""Line reading (columns of torn lines, over-long lines) and Codex tool outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.runlog.importers import jsonl
from active_memory.runlog.importers.codex_output import output_status
from active_memory.runlog.importers.common import Skipped
from active_memory.runlog.importers.jsonl import read_jsonl


@pytest.mark.parametrize(
    ("line", "column"),
    [('{"type": "user", "message":', 28), ('{"a": 1,', 9), ('{"a"', 5)],
)
def test_a_line_cut_after_a_colon_or_comma_is_reported_at_its_real_column(
    tmp_path: Path, line: str, column: int
) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text(line + "\n" + json.dumps({"ok": 1}) + "\n")
    skipped: list[Skipped] = []
    assert [n for n, _ in read_jsonl(log, skipped)] == [2]
    assert skipped[0].line == 1
    assert skipped[0].reason.endswith(f"at column {column}")


def test_an_over_long_line_is_skipped_without_being_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 64)
    log = tmp_path / "s.jsonl"
    log.write_text(json.dumps({"big": "x" * 500}) + "\n" + json.dumps({"ok": 1}) + "\n")
    skipped: list[Skipped] = []
    assert [entry for _, entry in read_jsonl(log, skipped)] == [{"ok": 1}]
    assert [(s.line, s.reason) for s in skipped] == [(1, "line longer than 64 bytes")]


def test_bad_lines_past_the_listed_ones_are_counted_in_one_entry(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text("not json\n" * (jsonl.MAX_LISTED_LINES + 7))
    skipped: list[Skipped] = []
    assert list(read_jsonl(log, skipped)) == []
    assert len(skipped) == jsonl.MAX_LISTED_LINES + 1
    assert skipped[-1].reason == "7 more bad lines (not listed)"


def test_unified_exec_exit_code_is_found_after_a_very_long_command() -> None:
    command = "python -m pytest " + "--deselect t::x " * 2000
    output = (
        f"Command: /bin/bash -lc '{command}'\nChunk ID: 1a2b3c\nWall time: 3.2 seconds\n"
        "Process exited with code 1\nOriginal token count: 40\nOutput:\n"
        "tests/test_a.py F\nE   KeyError: 'total'\n1 failed in 0.2s\n"
    )
    assert output_status(output) == (True, False, "exit code 1: E   KeyError: 'total'")


def test_a_running_process_and_a_zero_exit_are_not_failures() -> None:
    running = "Chunk ID: 9\nWall time: 10.0 seconds\nProcess running with session ID 3\nOutput:\n.."
    assert output_status(running)[:2] == (False, False)
    done = "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nerror: this is only printed text\n"
    assert output_status(done)[:2] == (False, False)


def test_exit_code_lines_inside_the_output_are_not_the_tools_exit_code() -> None:
    text = "Wall time: 0.1 seconds\nOutput:\nExit code: 3\nProcess exited with code 9\n"
    assert output_status("Exit code: 0\n" + text)[:2] == (False, False)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (json.dumps({"output": "boom\n", "metadata": {"exit_code": 2}}), (True, False)),
        (json.dumps({"output": "slow", "metadata": {"exit_code": 124}}), (True, True)),
        (
            json.dumps({"content": [{"type": "text", "text": "nope"}], "isError": True}),
            (True, False),
        ),
        ({"content": "denied", "success": False}, (True, False)),
        ("Exit code: 1\nWall time: 60 seconds\nOutput:\ncommand timed out\n", (True, True)),
        ("plain text the tool printed", (False, False)),
    ],
)
def test_codex_output_shapes(output: object, expected: tuple[bool, bool]) -> None:
    assert output_status(output)[:2] == expected
