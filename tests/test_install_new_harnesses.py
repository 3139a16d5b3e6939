"""`active-memory hook install|uninstall pi|gemini|copilot`: merge, idempotence, dry run,
uninstall removes only ours, and a file of ours' name that we did not write is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from install_support import HOOK, lean_state, run  # noqa: F401 - autouse fixture

from active_memory.hooks.installers import pi


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("XDG_CONFIG_HOME", "COPILOT_HOME", "PI_CODING_AGENT_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(root)
    return root


USER_GEMINI: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "hooks": {
        "AfterTool": [
            {"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh"}]}
        ],
        "BeforeTool": [{"hooks": [{"type": "command", "command": "./guard.sh"}]}],
    },
}


def test_gemini_merges_into_the_users_settings_and_uninstall_restores_them(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = checkout / ".gemini" / "settings.json"
    settings.parent.mkdir()
    original = json.dumps(USER_GEMINI, indent=2) + "\n"
    settings.write_text(original)

    code, out, _ = run(["install", "gemini"], capsys)
    assert code == 0 and str(settings) in out
    document = json.loads(settings.read_text())
    assert document["security"] == USER_GEMINI["security"]
    assert document["hooks"]["BeforeTool"] == USER_GEMINI["hooks"]["BeforeTool"]
    groups = document["hooks"]["AfterTool"]
    assert groups[0] == USER_GEMINI["hooks"]["AfterTool"][0]  # theirs stays first
    ours = groups[1]["hooks"][0]
    assert ours["command"] == f"{HOOK} gemini" and ours["timeout"] == 10_000
    assert "read_file" in groups[1]["matcher"].split("|")
    (end,) = document["hooks"]["SessionEnd"]
    assert end["hooks"] == [{"name": "active-memory-session-end", "type": "command",
                             "command": f"{HOOK} session-end gemini", "timeout": 5000}]  # fmt: skip
    # `/compress` only: Gemini CLI matches a PreCompress group against the trigger.
    (compress,) = document["hooks"]["PreCompress"]
    assert compress == {"matcher": "manual", "hooks": [
        {"name": "active-memory-context", "type": "command",
         "command": f"{HOOK} context gemini", "timeout": 5000}]}  # fmt: skip

    installed = settings.read_text()
    assert run(["install", "gemini"], capsys)[1].startswith("the Gemini CLI hooks are already")
    assert settings.read_text() == installed

    assert run(["uninstall", "gemini"], capsys)[0] == 0
    assert json.loads(settings.read_text()) == USER_GEMINI


def test_gemini_dry_run_prints_the_diff_and_writes_nothing(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["install", "gemini", "--dry-run"], capsys)
    assert code == 0 and "dry run" in err
    assert "+++ " in out and '"AfterTool"' in out and f"{HOOK} gemini" in out
    assert not (checkout / ".gemini").exists()


def test_gemini_user_install_goes_to_the_home_settings(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["install", "gemini", "--user"], capsys)[0] == 0
    document = json.loads((tmp_path / "home" / ".gemini" / "settings.json").read_text())
    assert document["hooks"]["AfterTool"][0]["hooks"][0]["name"] == "active-memory"


def test_copilot_writes_its_own_hooks_file_beside_the_users(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hooks = tmp_path / "home" / ".copilot" / "hooks"
    hooks.mkdir(parents=True)
    theirs = '{"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "./x"}]}}\n'
    (hooks / "theirs.json").write_text(theirs)

    assert run(["install", "copilot", "--user"], capsys)[0] == 0
    ours = hooks / "active-memory.json"
    assert json.loads(ours.read_text()) == {
        "version": 1,
        "hooks": {
            "preToolUse": [{"type": "command", "bash": f"{HOOK} copilot", "timeoutSec": 10}],
            **{
                event: [
                    {"type": "command", "bash": f"{HOOK} context copilot {event}", "timeoutSec": 5}
                ]
                for event in ("userPromptSubmitted", "agentStop", "preCompact")
            },
            "sessionEnd": [
                {"type": "command", "bash": f"{HOOK} session-end copilot", "timeoutSec": 5}
            ],
        },
    }
    text = ours.read_text()
    assert "already" in run(["install", "copilot", "--user"], capsys)[1]
    assert ours.read_text() == text
    assert run(["uninstall", "copilot", "--user"], capsys)[0] == 0
    assert not ours.exists() and (hooks / "theirs.json").read_text() == theirs


def test_copilot_project_install_notes_an_untrusted_folder(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["install", "copilot"], capsys)
    assert code == 0
    assert (checkout / ".github" / "hooks" / "active-memory.json").exists()
    assert "trustedFolders" in err and str(checkout) in err

    config = tmp_path / "home" / ".copilot" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(
        "// User settings belong in settings.json.\n"
        + json.dumps({"trustedFolders": [str(checkout)]})
    )
    assert "trustedFolders" not in run(["install", "copilot"], capsys)[2]


def test_copilot_refuses_a_file_of_our_name_that_is_not_ours(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hooks = checkout / ".github" / "hooks"
    hooks.mkdir(parents=True)
    foreign = '{"version": 1, "hooks": {"sessionStart": [{"type": "command", "bash": "x"}]}}'
    (hooks / "active-memory.json").write_text(foreign)
    for action in ("install", "uninstall"):
        code, _, err = run([action, "copilot"], capsys)
        assert code == 2 and "holds no Active Memory hook" in err
        assert (hooks / "active-memory.json").read_text() == foreign


def test_pi_writes_the_extension_and_uninstall_keeps_the_users(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extensions = checkout / ".pi" / "extensions"
    extensions.mkdir(parents=True)
    (extensions / "theirs.ts").write_text("export default function (pi) {}\n")

    code, out, _ = run(["install", "pi"], capsys)
    ours = extensions / "active-memory.ts"
    assert code == 0 and f"pi --no-extensions -e {ours}" in out  # contained mode
    assert ours.read_text() == pi.extension_source(HOOK)
    assert pi.extension_command(ours.read_text()) == str(HOOK)
    assert "already" in run(["install", "pi"], capsys)[1]

    code, out, _ = run(["uninstall", "pi", "--dry-run"], capsys)
    assert code == 0 and "--- " in out and ours.exists()
    assert run(["uninstall", "pi"], capsys)[0] == 0
    assert not ours.exists() and (extensions / "theirs.ts").exists()


def test_pi_refuses_a_file_of_our_name_that_is_not_ours(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extensions = tmp_path / "home" / ".pi" / "agent" / "extensions"
    extensions.mkdir(parents=True)
    (extensions / "active-memory.ts").write_text("// someone else's\n")
    code, _, err = run(["install", "pi", "--user"], capsys)
    assert code == 2 and "not written by active-memory" in err
    assert (extensions / "active-memory.ts").read_text() == "// someone else's\n"


def test_doctor_checks_each_new_harness(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for harness in ("pi", "gemini", "copilot"):
        assert run(["install", harness], capsys)[0] == 0
    code, out, _ = run(["doctor", "--json"], capsys)
    found = {item["harness"]: item for item in json.loads(out)["installed"]}
    assert set(found) == {"pi", "gemini", "copilot"}
    for item in found.values():
        checks = {c["name"]: c["ok"] for c in item["checks"]}
        assert checks["present"] and checks["resolvable"]
    copilot_checks = {c["name"]: c["ok"] for c in found["copilot"]["checks"]}
    assert copilot_checks["trusted"] is False and code == 1


def test_the_session_join_knows_the_tools_gemini_hooks_see() -> None:
    from active_memory.hooks.installers import gemini
    from active_memory.runlog.importers.harness_session import GEMINI_MATCHER

    assert gemini.MATCHER == GEMINI_MATCHER
