"""`hook install … --mcp`: `active-memory mcp` registered in Claude Code's and Codex's MCP
configuration, next to the hooks, and removed again without touching anything else."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from install_support import run
from test_install import write_json

from active_memory.hooks.installers.mcp import CODEX_STARTUP_TIMEOUT_SEC

SERVER = str(Path(sys.executable).parent / "active-memory")


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    for name in ("ZEROSHOT_STATE_DIR", "XDG_STATE_HOME", "ACTIVE_MEMORY_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(root / "src")
    return root


OTHER = {"type": "stdio", "command": "npx", "args": ["-y", "@acme/docs-mcp"]}


def test_claude_project_install_writes_mcp_json_and_approves_it(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_json(checkout / ".mcp.json", {"mcpServers": {"docs": OTHER}})
    code, _, err = run(["install", "claude", "--mcp"], capsys)
    assert code == 0, err
    servers = json.loads((checkout / ".mcp.json").read_text())["mcpServers"]
    assert servers["docs"] == OTHER
    assert servers["active-memory"] == {"type": "stdio", "command": SERVER, "args": ["mcp"]}
    settings = json.loads((checkout / ".claude" / "settings.local.json").read_text())
    assert settings["enabledMcpjsonServers"] == ["active-memory"]
    assert "PreToolUse" in settings["hooks"]  # the hooks are installed as well
    # Again: nothing changes.
    before = (
        (checkout / ".mcp.json").read_text(),
        (checkout / ".claude/settings.local.json").read_text(),
    )
    code, out, _ = run(["install", "claude", "--mcp"], capsys)
    assert code == 0 and "nothing changed" in out
    after = (
        (checkout / ".mcp.json").read_text(),
        (checkout / ".claude/settings.local.json").read_text(),
    )
    assert before == after


def test_claude_uninstall_with_mcp_keeps_the_other_servers(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = write_json(checkout / ".mcp.json", {"mcpServers": {"docs": OTHER}})
    assert run(["install", "claude", "--mcp"], capsys)[0] == 0
    assert run(["uninstall", "claude", "--mcp"], capsys)[0] == 0
    assert (checkout / ".mcp.json").read_text() == original
    settings_path = checkout / ".claude" / "settings.local.json"
    assert not settings_path.exists() or "enabledMcpjsonServers" not in settings_path.read_text()


def test_claude_user_install_goes_to_claude_json(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = write_json(tmp_path / "home" / ".claude.json", {"numStartups": 4, "projects": {}})
    assert state
    assert run(["install", "claude", "--user", "--mcp"], capsys)[0] == 0
    document = json.loads((tmp_path / "home" / ".claude.json").read_text())
    assert document["numStartups"] == 4 and document["projects"] == {}
    assert document["mcpServers"]["active-memory"]["args"] == ["mcp"]


def test_codex_project_install_adds_a_table_to_its_config(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = checkout / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "npx"\n')
    code, _, err = run(["install", "codex", "--mcp"], capsys)
    assert code == 0, err
    document = tomllib.loads(config.read_text())
    assert document["model"] == "gpt-5" and document["mcp_servers"]["docs"]["command"] == "npx"
    assert document["mcp_servers"]["active-memory"] == {
        "command": SERVER,
        "args": ["mcp"],
        "startup_timeout_sec": CODEX_STARTUP_TIMEOUT_SEC,
    }
    assert run(["uninstall", "codex", "--mcp"], capsys)[0] == 0
    assert config.read_text() == 'model = "gpt-5"\n\n[mcp_servers.docs]\ncommand = "npx"\n'


def test_mcp_for_opencode_is_a_usage_error(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["install", "opencode", "--mcp"], capsys)
    assert code == 2 and "--mcp: opencode is not supported" in err


def test_a_broken_mcp_json_changes_nothing(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (checkout / ".mcp.json").write_text("{not json")
    code, _, err = run(["install", "claude", "--mcp"], capsys)
    assert code == 2 and ".mcp.json" in err and "nothing was changed" in err
    assert not (checkout / ".claude" / "settings.json").exists()


def test_codex_gets_the_store_and_state_dir_pinned(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    # Codex starts MCP servers with HOME, PATH and LANG only: what the server needs to
    # find the store is written into the table when it is set at install time.
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("ACTIVE_MEMORY_STORE", str(tmp_path / "l.sqlite3"))
    assert run(["install", "codex", "--user", "--mcp"], capsys)[0] == 0
    config = tmp_path / "home" / ".codex" / "config.toml"
    entry = tomllib.loads(config.read_text())["mcp_servers"]["active-memory"]
    assert entry["env"] == {
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
        "ACTIVE_MEMORY_STORE": str(tmp_path / "l.sqlite3"),
    }
    code, out, _ = run(["install", "codex", "--user", "--mcp"], capsys)
    assert code == 0 and "nothing changed" in out


def _doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    code, out, err = run(["doctor", "--json"], capsys)
    assert out, err
    return code, json.loads(out)["installed"]


def _mcp_checks(installed: list[dict[str, Any]], harness: str) -> dict[str, dict[str, Any]]:
    [item] = [i for i in installed if i["kind"] == "mcp" and i["harness"] == harness]
    return {check["name"]: check for check in item["checks"]}


def test_doctor_checks_the_claude_registration_approval_trust_and_a_real_start(
    checkout: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("ACTIVE_MEMORY_STORE", str(tmp_path / "lessons.sqlite3"))
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "state"))
    assert run(["install", "claude", "--mcp"], capsys)[0] == 0
    code, installed = _doctor(capsys)
    checks = _mcp_checks(installed, "claude")
    assert checks["present"]["ok"] and checks["resolvable"]["detail"] == SERVER
    # Approved by the installer, but Claude Code starts nothing before the folder's trust.
    assert not checks["approved"]["ok"] and "trust dialog" in checks["approved"]["fix"]
    assert checks["starts"]["ok"], checks["starts"]
    assert "search_lessons, get_lesson" in checks["starts"]["detail"] and code == 1
    home = Path(os.environ["HOME"])
    write_json(
        home / ".claude.json", {"projects": {str(checkout): {"hasTrustDialogAccepted": True}}}
    )
    checks = _mcp_checks(_doctor(capsys)[1], "claude")
    assert checks["approved"]["ok"]
    # A server that cannot start is a finding with a way forward.
    broken = tmp_path / "broken-active-memory"
    broken.write_text("#!/bin/sh\necho 'No module named mcp' >&2\nexit 1\n")
    broken.chmod(0o755)
    document = json.loads((checkout / ".mcp.json").read_text())
    document["mcpServers"]["active-memory"]["command"] = str(broken)
    write_json(checkout / ".mcp.json", document)
    checks = _mcp_checks(_doctor(capsys)[1], "claude")
    assert not checks["starts"]["ok"] and "No module named mcp" in checks["starts"]["detail"]
    assert "active-memory mcp" in checks["starts"]["fix"]


def test_doctor_finds_a_codex_registration_that_reads_another_store(
    checkout: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("ACTIVE_MEMORY_STORE", str(tmp_path / "lessons.sqlite3"))
    assert run(["install", "codex", "--user", "--mcp"], capsys)[0] == 0
    checks = _mcp_checks(_doctor(capsys)[1], "codex")
    assert checks["same store"]["ok"] and checks["starts"]["ok"], checks
    monkeypatch.setenv("ACTIVE_MEMORY_STORE", str(tmp_path / "elsewhere.sqlite3"))
    code, installed = _doctor(capsys)
    checks = _mcp_checks(installed, "codex")
    assert not checks["same store"]["ok"], checks
    assert "lessons.sqlite3" in checks["same store"]["detail"]
    assert "codex --user --mcp` again" in checks["same store"]["fix"] and code == 1
    out = run(["doctor"], capsys)[1]
    assert "Codex MCP server (user)" in out
