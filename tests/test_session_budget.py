"""SPEC §2 `budgetBytes` is one rule (session_budget.py) that every reader applies alike:
the runtime JSON, the settings files, the orchestrator's variable and the commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from active_memory.config import parse_runtime_settings
from active_memory.errors import ConfigError
from active_memory.session_budget import (
    ALLOWED,
    MAX_BUDGET_BYTES,
    budget_from_text,
    budget_left,
    budget_problem,
)
from active_memory.settings import SettingsError, effective_settings

PLAN = {"harness": "claude", "provider": "anthropic", "size": "standard", "nodes": {}}
CANDIDATES: list[Any] = [0, 1, 2, 2048, MAX_BUDGET_BYTES, MAX_BUDGET_BYTES + 1, -5, True, 2.5, "9"]


def _runtime_accepts(value: Any) -> bool:
    try:
        parse_runtime_settings({**PLAN, "activeMemory": {"budgetBytes": value}})
    except ConfigError:
        return False
    return True


def _settings_file_accepts(tmp_path: Path, value: Any) -> bool:
    checkout = tmp_path / f"checkout-{abs(hash(repr(value)))}"
    checkout.mkdir()
    written = json.dumps(value)  # a TOML scalar for every candidate here
    (checkout / ".active-memory.toml").write_text(f"budgetBytes = {written}\n", "utf-8")
    env = {"HOME": str(tmp_path), "ZEROSHOT_STATE_DIR": str(tmp_path / "state")}
    try:
        effective_settings(str(checkout), env, use_env=False)
    except SettingsError:
        return False
    return True


@pytest.mark.parametrize("value", CANDIDATES)
def test_the_runtime_json_and_the_settings_files_accept_exactly_the_same_budgets(
    tmp_path: Path, value: Any
) -> None:
    expected = budget_problem(value) is None
    assert _runtime_accepts(value) is expected
    assert _settings_file_accepts(tmp_path, value) is expected


@pytest.mark.parametrize("text", ["0", "1", "16384", "16385", "-1", "x", "", " 300 ", "2e3"])
def test_the_variable_is_read_by_the_same_rule_and_a_bad_one_leaves_the_next_layer(
    tmp_path: Path, text: str
) -> None:
    env = {
        "HOME": str(tmp_path),
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
        "ACTIVE_MEMORY_BUDGET_BYTES": text,
    }
    settings = effective_settings(None, env)
    parsed = budget_from_text(text)
    assert settings.budget_bytes == (parsed if parsed is not None else 2048)
    source = settings.values["budgetBytes"].source
    assert (source != "default") is (parsed is not None)


def test_what_is_left_never_goes_below_zero() -> None:
    assert budget_left(2048, 2000) == 48
    assert budget_left(100, 300) == 0  # a budget lowered mid-session leaves nothing


@pytest.mark.parametrize("command", ["recall", "instructions"])
@pytest.mark.parametrize("bad", ["0", "16385", "many"])
def test_a_command_s_budget_option_outside_the_rule_is_a_usage_error(
    tmp_path: Path, command: str, bad: str
) -> None:
    args = ["--budget-bytes", bad]
    args += ["claude", "Read", "a.py"] if command == "recall" else ["--graph", "0" * 64]
    args += ["--node", "worker"] if command == "instructions" else []
    done = subprocess.run(
        [sys.executable, "-c", "from active_memory.cli import run; run()", command, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert f"'{bad}' is not a budget; allowed {ALLOWED}" in done.stderr
