"""`hook install` writes the lean hook entry and the harness config runs it by absolute
path; when the entry cannot be written it falls back to pip's console script with a note;
`hook doctor` flags an entry whose interpreter is gone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from install_support import run

CONSOLE = Path(sys.executable).parent / "active-memory-hook"


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("ACTIVE_MEMORY_STORE", raising=False)
    monkeypatch.chdir(root)
    return root


def _command(checkout: Path) -> str:
    settings = json.loads((checkout / ".gemini" / "settings.json").read_text())
    command: str = settings["hooks"]["AfterTool"][0]["hooks"][0]["command"]
    return command


def test_install_writes_the_lean_entry_and_the_config_runs_it(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["install", "gemini", "--json"], capsys)
    assert code == 0 and err == ""
    entry = tmp_path / "state" / "active-memory" / "bin" / "active-memory-hook"
    assert _command(checkout) == f"{entry} gemini"
    text = entry.read_text()
    assert text.splitlines()[0] == f"#!{sys.executable}"
    assert "import re" not in text and "from active_memory.hooks.command import run" in text
    # It answers a hook call as the harness runs it: no output for a call that matches
    # nothing, exit 0, nothing logged.
    payload = {"session_id": "s", "cwd": str(checkout), "tool_name": "read_file",
               "tool_input": {"file_path": "README.md"}}  # fmt: skip
    done = subprocess.run([str(entry), "gemini"], input=json.dumps(payload), text=True,
                          capture_output=True, check=False)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not (tmp_path / "state" / "active-memory" / "recall" / "hook.log").exists()


def test_a_dry_run_names_the_entry_without_writing_it(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["install", "gemini", "--dry-run"], capsys)
    assert code == 0 and "active-memory/bin/active-memory-hook gemini" in out
    assert not (tmp_path / "state" / "active-memory" / "bin").exists()


def test_an_unwritable_state_dir_falls_back_to_the_console_script_with_a_note(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "state" / "active-memory" / "bin"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file where the folder should be\n")
    code, _, err = run(["install", "gemini"], capsys)
    assert code == 0
    assert _command(checkout) == f"{CONSOLE} gemini"
    assert "could not write the lean hook entry" in err and str(CONSOLE) in err


def test_doctor_flags_a_lean_entry_whose_interpreter_is_gone(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["install", "gemini"], capsys)[0] == 0
    entry = tmp_path / "state" / "active-memory" / "bin" / "active-memory-hook"
    lines = entry.read_text().splitlines(keepends=True)
    entry.write_text("#!/gone/python3\n" + "".join(lines[1:]))
    code, out, _ = run(["doctor", "--json"], capsys)
    checks = {c["name"]: c for c in json.loads(out)["installed"][0]["checks"]}
    assert code == 1 and checks["resolvable"]["ok"] is False
    assert "/gone/python3" in checks["resolvable"]["detail"]
    assert "hook install" in checks["resolvable"]["fix"]
