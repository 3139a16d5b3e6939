"""What reading a call's signals loads (docs/recall.md, "The hook's import budget"): a
call that runs no command never loads the shell reading, one that runs a command does."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_PROBE = """
import json, sys
from active_memory.recall.signals import extract_signals
from active_memory.recall.types import ToolCall
tool, tool_input = json.loads(sys.argv[1])
found = extract_signals(ToolCall("claude", tool, tool_input, cwd="/work/api"), "/work/api")
ours = sorted(name for name in sys.modules if name.startswith("active_memory"))
print(json.dumps([list(found.paths), ours]))
"""

SHELL_READING = (
    "active_memory.recall.shell_signals",
    "active_memory.shell",
    "active_memory.command_family",
)


def _probe(tool: str, tool_input: dict[str, object]) -> tuple[list[str], set[str]]:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps([tool, tool_input])],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    paths, modules = json.loads(result.stdout)
    return paths, set(modules)


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Read", {"file_path": "/work/api/src/a.py"}),
        ("Grep", {"pattern": "handleRefund", "path": "src"}),
        ("apply_patch", {"input": "*** Begin Patch\n*** Update File: src/a.py\n*** End Patch"}),
    ],
)
def test_a_call_that_runs_no_command_does_not_load_the_shell_reading(
    tool: str, tool_input: dict[str, object]
) -> None:
    paths, modules = _probe(tool, tool_input)
    assert paths, "the probe must have read a path"
    assert "active_memory.recall.path_signals" in modules
    assert [name for name in SHELL_READING if name in modules] == []


def test_a_call_that_runs_a_command_loads_the_shell_reading() -> None:
    paths, modules = _probe("Bash", {"command": "cd src && cat a.py"})
    assert paths == ["src", "src/a.py"]
    assert [name for name in SHELL_READING if name not in modules] == []
