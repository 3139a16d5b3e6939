"""Every harness through to a lesson, with its real binary (issue 29 item 4).

For each of Claude Code, Codex, Pi, Gemini CLI, Copilot CLI, OpenCode and Hermes: a
session in which the same command fails twice ends; its session-end hook queues it and
starts the automatic worker (no `worker` command is typed); the worker's lane, the real
`claude -p` chosen by the user's `[worker]` settings and pointed at the scripted model on
loopback, publishes a lesson; the next session's model request carries the card; that
session's own postmortem keeps the lesson with its delivery as evidence. The scenario and
its checks are tests/e2e_support.py; how each binary is driven, tests/e2e_harnesses.py.

The binaries come from ACTIVE_MEMORY_TEST_<HARNESS> (`.ci/run`) or PATH; without them
these tests skip, and with CI=true they fail. Each prints its phases' wall times.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_harnesses import CLAUDE, CODEX, GEMINI, HERMES, OPENCODE, PI, copilot_drive
from e2e_support import Drive, run_scenario
from fakes.harness import require_harness


def _loop(drive: Drive, tmp_path: Path) -> None:
    binary = require_harness(drive.name)
    claude = require_harness("claude")
    timings = run_scenario(drive, tmp_path, binary, claude)
    print(f"{drive.name}: {timings}")


def test_a_claude_code_session_teaches_by_itself(tmp_path: Path) -> None:
    _loop(CLAUDE, tmp_path)


def test_a_codex_session_teaches_by_itself(tmp_path: Path) -> None:
    _loop(CODEX, tmp_path)


def test_a_pi_session_teaches_by_itself(tmp_path: Path) -> None:
    _loop(PI, tmp_path)


def test_a_gemini_cli_session_teaches_by_itself(tmp_path: Path) -> None:
    _loop(GEMINI, tmp_path)


def test_a_copilot_cli_session_teaches_by_itself(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _loop(copilot_drive(tmp_path_factory.mktemp("copilot-cache")), tmp_path)


def test_an_opencode_session_teaches_by_itself(tmp_path: Path) -> None:
    _loop(OPENCODE, tmp_path)


def test_a_hermes_session_teaches_by_itself(tmp_path: Path) -> None:
    _loop(HERMES, tmp_path)
