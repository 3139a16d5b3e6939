"""A project install writes nothing user-specific into files teams commit (issue 29 item
9), and `hook doctor` runs each installed hook as its harness would, Gemini CLI's trust
included, saying what to do."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from install_support import HOOK, lean_state, run  # noqa: F401 - autouse fixture


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CODEX_HOME", "XDG_CONFIG_HOME", "ACTIVE_MEMORY_STORE", "COPILOT_HOME",
                 "GEMINI_CLI_TRUST_WORKSPACE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(root)
    return root


def committed(root: Path) -> list[str]:
    """The files `git add -A` would take (the ignored ones left out)."""
    done = subprocess.run(["git", "-C", str(root), "ls-files", "--others", "--exclude-standard"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return sorted(done.stdout.split())


def test_a_claude_project_install_goes_to_the_per_person_file_git_ignores(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["install", "claude"], capsys)[0] == 0
    local = checkout / ".claude" / "settings.local.json"
    assert str(HOOK) in local.read_text()
    assert not (checkout / ".claude" / "settings.json").exists()
    assert committed(checkout) == []  # nothing of this user's for the team's commit
    exclude = (checkout / ".git" / "info" / "exclude").read_text()
    assert exclude.count("/.claude/settings.local.json") == 1
    assert run(["install", "claude"], capsys)[0] == 0  # idempotent: one line, once
    assert (checkout / ".git" / "info" / "exclude").read_text() == exclude


def test_a_claude_project_install_moves_ours_out_of_the_committed_file(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = checkout / ".claude" / "settings.json"
    shared.parent.mkdir()
    guard = {"type": "command", "command": "python3 guard.py"}
    old = {"type": "command", "command": "/home/someone/.venv/bin/active-memory-hook claude"}
    shared.write_text(json.dumps({"model": "opus", "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [guard, old]}]}}))  # fmt: skip
    assert run(["install", "claude"], capsys)[0] == 0
    kept = json.loads(shared.read_text())
    assert kept == {"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash",
                                                                "hooks": [guard]}]}}  # fmt: skip
    assert "/home/someone" not in shared.read_text()


@pytest.mark.parametrize("harness", ["codex", "gemini", "copilot", "pi", "opencode", "hermes"])
def test_other_project_installs_name_the_hook_from_the_home_folder(
    checkout: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    harness: str,
) -> None:  # fmt: skip
    state = Path(os.environ["HOME"]) / ".local" / "state" / "zeroshot"
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(state))  # the lean entry in the home folder
    code, out, err = run(["install", harness, "--json"], capsys)
    assert code == 0, err
    written = [Path(n) for n in json.loads(out)["files"] if Path(n).is_relative_to(checkout)]
    texts = [path.read_text() for path in written]
    assert written and not [t for t in texts if os.environ["HOME"] in t]
    assert any("~/.local/state/zeroshot/active-memory/bin/active-memory-hook" in t for t in texts)


def test_the_home_relative_command_runs_from_a_shell_and_doctor_probes_it(
    checkout: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    state = Path(os.environ["HOME"]) / ".local" / "state" / "zeroshot"
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(state))
    assert run(["install", "gemini"], capsys)[0] == 0
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
    code, out, _ = run(["doctor", "--json"], capsys)
    (item,) = json.loads(out)["installed"]
    checks = {c["name"]: c for c in item["checks"]}
    assert checks["runs"]["ok"] is True, checks["runs"]
    trusted = checks["trusted"]
    assert trusted["ok"] is True
    assert trusted["detail"] == "GEMINI_CLI_TRUST_WORKSPACE=true in this environment"
    assert code == 0


def test_doctor_says_gemini_blocks_the_hooks_of_an_untrusted_folder_and_what_to_do(
    checkout: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    assert run(["install", "gemini"], capsys)[0] == 0
    code, out, _ = run(["doctor", "--json"], capsys)
    (item,) = json.loads(out)["installed"]
    trusted = next(c for c in item["checks"] if c["name"] == "trusted")
    assert code == 1 and trusted["ok"] is False
    assert "Gemini CLI blocks this folder's project hooks" in trusted["detail"]
    assert "GEMINI_CLI_TRUST_WORKSPACE=true" in trusted["fix"]
    assert "--skip-trust does not run hooks" in trusted["fix"]
    # Trusted in Gemini CLI's own file, as its trust dialog writes it: fine.
    gemini = Path(os.environ["HOME"]) / ".gemini"
    gemini.mkdir(exist_ok=True)
    (gemini / "trustedFolders.json").write_text(json.dumps({str(checkout): "TRUST_FOLDER"}))
    code, out, _ = run(["doctor", "--json"], capsys)
    (item,) = json.loads(out)["installed"]
    assert next(c for c in item["checks"] if c["name"] == "trusted")["ok"] is True


def test_doctor_says_a_hook_whose_interpreter_is_gone_does_not_run(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "bin" / "active-memory-hook"
    broken.parent.mkdir()
    broken.write_text("#!/nonexistent/python3\nimport sys\n")
    broken.chmod(0o755)
    assert run(["install", "claude", "--hook-command", str(broken)], capsys)[0] == 0
    code, out, _ = run(["doctor", "--json"], capsys)
    (item,) = json.loads(out)["installed"]
    runs = next(c for c in item["checks"] if c["name"] == "runs")
    assert code == 1 and runs["ok"] is False
    assert str(broken) in runs["detail"]
    assert "exit 126" in runs["detail"] or "exit 127" in runs["detail"]  # as sh says it
    assert "hook install" in runs["fix"]
