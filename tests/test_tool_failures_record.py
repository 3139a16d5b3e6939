"""`tool_failures` in the run record (SPEC §3): fields, bounds, paths, bad input."""

from __future__ import annotations

from typing import Any

import pytest

from active_memory.errors import InvalidRecord
from active_memory.runlog.importers.common import checked
from active_memory.runlog.record import parse_run_record
from active_memory.runlog.tool_failures import (
    FAILURES_KEPT_FIRST,
    MAX_COMMAND_BYTES,
    MAX_ERROR_BYTES,
    MAX_TOOL_FAILURES,
    cut_bytes,
)


def _record(failures: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "schema": "active-memory/run@1",
        "run_id": "run-1",
        "outcome": "failed",
        "repository": {"namespace": "repo:github.com/acme/api", "checkout": "/work/api"},
        "tool_failures": failures,
        **extra,
    }


def _failure(number: int = 0, **fields: Any) -> dict[str, Any]:
    return {
        "node": "worker",
        "execution": "1",
        "tool": "Bash",
        "at": f"2026-12-01T10:{number // 60:02d}:{number % 60:02d}Z",
        "command": f"git add build/{number}.css",
        "family": "git add",
        "cwd": "",
        "exit_code": 1,
        "error": "The following paths are ignored by one of your .gitignore files: build",
        "paths": [f"build/{number}.css"],
        **fields,
    }


def test_the_spec_example_round_trips_unchanged() -> None:
    example = _failure(
        resolved_by={
            "at": "2026-12-01T10:05:00Z",
            "command": "git add -f build/0.css",
            "family": "git add",
        }
    )
    out = checked(_record([example]), "<test>")
    assert out["tool_failures"] == [example | {"at": "2026-12-01T10:00:00Z"}]
    assert out["tool_failures_dropped"] == 0
    failure = parse_run_record(out).tool_failures[0]
    assert failure.resolved_by is not None and failure.resolved_by.family == "git add"


def test_past_256_failures_the_first_and_the_latest_survive_and_the_rest_are_counted() -> None:
    failures = [_failure(n) for n in range(MAX_TOOL_FAILURES + 40)]
    record = parse_run_record(_record(failures))
    kept = [f.command for f in record.tool_failures]
    assert len(kept) == MAX_TOOL_FAILURES
    assert kept[:FAILURES_KEPT_FIRST] == [f["command"] for f in failures[:FAILURES_KEPT_FIRST]]
    assert kept[-1] == failures[-1]["command"]
    assert record.tool_failures_dropped == 40


def test_command_and_error_are_cut_to_their_byte_bounds_without_splitting_a_character() -> None:
    record = parse_run_record(_record([_failure(command="é" * 400, error="€" * 700)]))
    failure = record.tool_failures[0]
    assert len(failure.command.encode()) <= MAX_COMMAND_BYTES
    assert len(failure.error.encode()) <= MAX_ERROR_BYTES
    assert failure.command.endswith("…") and failure.error.endswith("…")
    assert cut_bytes("short", 10) == "short"


def test_paths_become_root_relative_and_a_path_outside_the_checkout_is_dropped() -> None:
    record = parse_run_record(
        _record([_failure(paths=["/work/api/src/a.py", "/etc/passwd", "../x", "src/a.py"])])
    )
    assert record.tool_failures[0].paths == ("src/a.py",)


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("family", None, "tool_failures[0].family"),
        ("tool", 3.5, None),
        ("exit_code", "one", "tool_failures[0].exit_code"),
        ("exit_code", True, "tool_failures[0].exit_code"),
        ("at", "yesterday", "tool_failures[0].at"),
    ],
)
def test_a_bad_failure_is_refused_naming_its_field(
    field: str, value: Any, named: str | None
) -> None:
    failure = _failure()
    if value is None:
        del failure[field]
    else:
        failure[field] = value
    if named is None:  # a number where a name is expected is read as text, like elsewhere
        assert parse_run_record(_record([failure])).tool_failures[0].tool == "3.5"
        return
    with pytest.raises(InvalidRecord, match=named.replace("[", r"\[").replace("]", r"\]")):
        parse_run_record(_record([failure]))


def test_a_negative_dropped_count_is_refused() -> None:
    with pytest.raises(InvalidRecord, match="tool_failures_dropped"):
        parse_run_record(_record([], tool_failures_dropped=-1))
