"""Installers that work as installed: session-end hooks, absolute commands, Codex trust, doctor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from install_support import HOOK, lean_state, run  # noqa: F401 - autouse fixture

from active_memory.hooks.installers import codex_trust

USER_HOOK = {"type": "command", "command": "python3 .codex/hooks/guard.py", "timeout": 30}


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("ACTIVE_MEMORY_STORE", raising=False)
    monkeypatch.chdir(root)
    return root


def _hooks(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())["hooks"]
    return document


def _config(checkout: Path) -> dict[str, Any]:
    path = Path(os.environ["HOME"]) / ".codex" / "config.toml"
    return tomlkit.parse(path.read_text()).unwrap() if path.exists() else {}


def test_claude_install_adds_the_session_end_hook_with_the_absolute_script(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["install", "claude"], capsys)[0] == 0
    hooks = _hooks(checkout / ".claude" / "settings.local.json")
    assert hooks["PreToolUse"][0]["hooks"][0]["command"] == f"{HOOK} claude"
    assert hooks["SessionEnd"] == [
        {"hooks": [{"type": "command", "command": f"{HOOK} session-end claude", "timeout": 5}]}
    ]
    # Idempotent, and uninstall takes both out, leaving nothing of ours.
    assert "already installed" in run(["install", "claude"], capsys)[1]
    run(["uninstall", "claude"], capsys)
    assert not (checkout / ".claude" / "settings.local.json").exists()


def test_http_install_keeps_a_command_session_end_hook(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["install", "claude", "--http"], capsys)
    hooks = _hooks(checkout / ".claude" / "settings.local.json")
    assert hooks["PreToolUse"][0]["hooks"][0]["type"] == "http"
    assert hooks["SessionEnd"][0]["hooks"][0]["command"] == f"{HOOK} session-end claude"


def test_an_unresolvable_hook_command_exits_2_and_writes_nothing(
    checkout: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(["install", "claude", "--hook-command", "/no/such/hook"], capsys)
    assert code == 2 and out == ""
    assert "--hook-command /no/such/hook: not an executable file" in err
    # No script next to the interpreter and none on PATH: the same, with what to do.
    lonely = checkout.parent / "python-elsewhere" / "python3"
    lonely.parent.mkdir()
    monkeypatch.setattr(sys, "executable", str(lonely))
    monkeypatch.setenv("PATH", str(checkout.parent / "empty-bin"))
    code, out, err = run(["install", "codex"], capsys)
    assert code == 2
    assert "cannot find the active-memory-hook console script" in err
    assert "--hook-command" in err
    assert not (checkout / ".claude").exists() and not (checkout / ".codex").exists()
    assert not (Path(os.environ["HOME"]) / ".codex").exists()


def test_a_venv_install_runs_without_the_venv_on_path(checkout: Path, tmp_path: Path) -> None:
    # `.venv/bin/active-memory hook install claude` run by its path, PATH without the venv:
    # the hook command written must run from a shell with that same bare PATH.
    cli = Path(sys.executable).parent / "active-memory"
    bare = {"HOME": os.environ["HOME"], "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
            "ZEROSHOT_STATE_DIR": str(tmp_path / "state")}  # fmt: skip
    done = subprocess.run(
        [str(cli), "hook", "install", "claude"], cwd=checkout, env=bare,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    command = _hooks(checkout / ".claude" / "settings.local.json")["PreToolUse"][0]["hooks"][0][
        "command"
    ]
    payload = {"session_id": "s", "cwd": str(checkout), "hook_event_name": "PreToolUse",
               "tool_name": "Read", "tool_input": {"file_path": "README.md"}}  # fmt: skip
    ran = subprocess.run(
        ["/bin/sh", "-c", command], input=json.dumps(payload), env=bare,
        capture_output=True, text=True, check=False, cwd=checkout,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert not (tmp_path / "state" / "active-memory" / "recall" / "hook.log").exists()
    receipts = list((tmp_path / "state").rglob("receipts.jsonl"))
    assert len(receipts) == 1  # the hook ran and recorded the call


def test_codex_install_writes_trust_entries_codex_accepts(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = run(["install", "codex"], capsys)
    assert code == 0
    path = checkout / ".codex" / "hooks.json"
    state = _config(checkout)["hooks"]["state"]
    pre = f"{path}:pre_tool_use:0:0"
    compact = f"{path}:post_compact:0:0"
    end = f"{path}:session_end:0:0"
    assert set(state) == {pre, compact, end}
    handler = {"type": "command", "command": f"{HOOK} codex", "timeout": 10}
    assert state[pre]["trusted_hash"] == codex_trust.hook_hash("PreToolUse", None, handler)
    context = {"type": "command", "command": f"{HOOK} context codex", "timeout": 5}
    assert state[compact]["trusted_hash"] == codex_trust.hook_hash("PostCompact", None, context)
    # The project is not trusted yet: said, with the exact entry.
    assert f'[projects."{checkout}"]' in err and "--trust-project" in err


def test_trust_project_writes_the_project_entry(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["install", "codex", "--trust-project", "--json"], capsys)
    assert code == 0
    document = json.loads(out)
    assert all(check["ok"] for check in document["checks"]), document["checks"]
    assert _config(checkout)["projects"][str(checkout)] == {"trust_level": "trusted"}
    code, _, err = run(["install", "claude", "--trust-project"], capsys)
    assert code == 2 and "only for `hook install codex`" in err


def test_the_trust_hash_matches_a_known_codex_hash() -> None:
    # Reported by codex 0.171's app-server (`hooks/list` currentHash) for these handlers.
    pre = {"type": "command", "command": "/x/active-memory-hook codex", "timeout": 10}
    end = {"type": "command", "command": "/x/active-memory-hook session-end codex", "timeout": 3}
    stop = {"type": "command", "command": "echo stop"}
    assert codex_trust.hook_hash("PreToolUse", None, pre) == (
        "sha256:a9e3571831c6264ebd767260eb75914a92a0ace9f6dbf307de2d34e609014578"
    )
    assert codex_trust.hook_hash("SessionEnd", None, end) == (
        "sha256:93e280addeeb0fc9032d07075836ebfd1e7132c56990d2a4bd5d34e54b11476d"
    )
    assert codex_trust.hook_hash("Stop", "ignored", stop) == (
        "sha256:236335e9e512004a0f5f42af65a07ea9059bd9a23dbb68286ed57fecf2b69ddf"
    )


def test_uninstall_keeps_the_users_other_hooks_trusted(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["install", "codex", "--trust-project"], capsys)
    path = checkout / ".codex" / "hooks.json"
    # The user adds their own hook after ours and trusts it (as Codex's /hooks would).
    document = json.loads(path.read_text())
    document["hooks"]["PreToolUse"].append({"matcher": "Bash", "hooks": [USER_HOOK]})
    path.write_text(json.dumps(document, indent=2))
    config = Path(os.environ["HOME"]) / ".codex" / "config.toml"
    user_key = f"{path}:pre_tool_use:1:0"
    user_hash = codex_trust.hook_hash("PreToolUse", "Bash", USER_HOOK)
    config.write_text(
        config.read_text() + codex_trust.trust_entry_text(user_key, user_hash), encoding="utf-8"
    )

    assert run(["uninstall", "codex"], capsys)[0] == 0

    # The user's hook moved from group 1 to group 0: its trust moved with it.
    hooks = json.loads(path.read_text())
    assert hooks["hooks"]["PreToolUse"] == [{"matcher": "Bash", "hooks": [USER_HOOK]}]
    settings = tomlkit.parse(config.read_text())
    statuses = codex_trust.trust_status(settings, path, hooks, lambda e, h: h == USER_HOOK)
    assert statuses == [("PreToolUse", f"{path}:pre_tool_use:0:0", "trusted")]
    assert set(settings["hooks"]["state"]) == {f"{path}:pre_tool_use:0:0"}
    # Installing again appends ours after the user's: their key does not move.
    run(["install", "codex"], capsys)
    settings = tomlkit.parse(config.read_text())
    assert settings["hooks"]["state"][f"{path}:pre_tool_use:0:0"]["trusted_hash"] == user_hash
    assert f"{path}:pre_tool_use:1:0" in settings["hooks"]["state"]


def test_codex_dry_run_shows_both_files_and_writes_nothing(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _err = run(["install", "codex", "--dry-run"], capsys)
    assert code == 0
    assert f"+++ {checkout / '.codex' / 'hooks.json'}" in out
    assert "+++ " + str(Path(os.environ["HOME"]) / ".codex" / "config.toml") in out
    assert "trusted_hash" in out and "session-end codex" in out
    assert not (checkout / ".codex").exists()
    assert not (Path(os.environ["HOME"]) / ".codex").exists()


def test_doctor_passes_for_a_working_install(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["install", "claude"], capsys)
    run(["install", "codex", "--trust-project"], capsys)
    code, out, _ = run(["doctor", "--json"], capsys)
    document = json.loads(out)
    assert code == 0 and document["ok"] is True
    found = {(item["harness"], item["where"]) for item in document["installed"]}
    assert found == {("claude", "project"), ("codex", "project")}
    names = {check["name"] for check in document["installed"][1]["checks"]}
    assert names == {"present", "resolvable", "runs", "trusted", "settings", "store", "worker"}


def test_doctor_reports_what_is_wrong_and_what_to_do(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["doctor"], capsys)[0] == 1  # nothing installed
    run(["install", "codex"], capsys)  # project not trusted
    settings = checkout / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    bare = {"type": "command", "command": "active-memory-hook-gone claude"}
    http = {"type": "http", "url": "http://127.0.0.1:9/active-memory/v1/hook/claude"}
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [http]}]}}))
    del bare
    code, out, _ = run(["doctor", "--json"], capsys)
    assert code == 1
    items = {item["harness"]: item for item in json.loads(out)["installed"]}
    claude_checks = {c["name"]: c for c in items["claude"]["checks"]}
    assert claude_checks["present"]["ok"] is False  # no SessionEnd hook
    assert claude_checks["server"]["ok"] is False
    assert "active-memory serve" in claude_checks["server"]["fix"]
    codex_checks = {c["name"]: c for c in items["codex"]["checks"]}
    assert codex_checks["trusted"]["ok"] is False
    assert "not trusted" in codex_checks["trusted"]["detail"]
    # A command that does not run.
    path = checkout / ".codex" / "hooks.json"
    text = path.read_text().replace(str(HOOK), "/gone/active-memory-hook")
    path.write_text(text)
    code, out, _ = run(["doctor"], capsys)
    assert code == 1
    assert "resolvable: does not run: /gone/active-memory-hook not found" in out


def test_doctor_names_the_context_hooks_an_older_install_lacks(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["install", "claude"], capsys)
    settings = checkout / ".claude" / "settings.local.json"
    document = json.loads(settings.read_text())
    for event in ("PostToolBatch", "UserPromptSubmit", "SessionStart"):
        del document["hooks"][event]  # what `hook install claude` wrote before issue 26
    settings.write_text(json.dumps(document))
    code, out, _ = run(["doctor", "--json"], capsys)
    assert code == 1
    [item] = json.loads(out)["installed"]
    present = next(c for c in item["checks"] if c["name"] == "present")
    assert present["detail"] == "missing: PostToolBatch, UserPromptSubmit, SessionStart"
    assert present["fix"] == "run `active-memory hook install claude` again"
    run(["install", "claude"], capsys)
    assert run(["doctor"], capsys)[0] == 0


def test_doctor_flags_an_invalid_settings_file(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["install", "claude"], capsys)
    (checkout / ".active-memory.toml").write_text("budgetBytes = 0\n")
    code, out, _ = run(["doctor"], capsys)
    assert code == 1
    assert "settings: " in out and "budgetBytes: must be an integer 1..16384" in out


def test_opencode_plugin_runs_the_absolute_script(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from active_memory.hooks.installers import opencode

    run(["install", "opencode"], capsys)
    text = (checkout / ".opencode" / "plugins" / "active-memory.js").read_text()
    assert opencode.plugin_command(text) == str(HOOK)
    # The same command queues the session (docs/harnesses.md, "OpenCode").
    assert '["session-end", "opencode"]' in text


def test_a_trust_file_that_cannot_be_written_leaves_the_hooks_file_as_it_was(
    checkout: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.hooks.installers import files

    hooks = checkout / ".codex" / "hooks.json"
    hooks.parent.mkdir()
    original = json.dumps({"hooks": {"PreToolUse": [{"hooks": [USER_HOOK]}]}}, indent=2)
    hooks.write_text(original)
    real_write = files.write_atomic

    def failing(path: Path, text: str) -> None:
        if path.name == "config.toml":
            raise OSError(28, "No space left on device")
        real_write(path, text)

    monkeypatch.setattr(files, "write_atomic", failing)
    code, _, err = run(["install", "codex"], capsys)
    assert code == 2
    assert "config.toml: cannot write (No space left on device); nothing was changed" in err
    assert hooks.read_text() == original  # put back: no hook of ours without its trust
