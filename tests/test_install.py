"""`active-memory hook install|uninstall` on realistic Claude Code and Codex config files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from install_support import HOOK, lean_state, run  # noqa: F401 - autouse fixture

from active_memory.hooks.paths import DEFAULT_PORT

"""What the installer writes: the console script next to the running interpreter."""

GUARD = {"type": "command", "command": "~/.claude/hooks/guard.sh", "timeout": 30}
PRETTIER = {"type": "command", "command": 'npx prettier --write "$CLAUDE_FILE_PATHS"'}

CLAUDE_SETTINGS: dict[str, Any] = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"]},
    "env": {"DEBUG": "1"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [GUARD]}],
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [PRETTIER]}],
    },
    "model": "sonnet",
}

CODEX_HOOKS: dict[str, Any] = {
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
        ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "python3 .codex/hooks/guard.py"}],
            }
        ],
    }
}


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout (cwd: a subfolder of it) and an empty home."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "api").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.chdir(root / "src" / "api")
    return root


def write_json(path: Path, document: dict[str, Any], indent: int | str = 2) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=indent) + "\n"
    path.write_text(text)
    return text


def pre_tool_use(path: Path) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = json.loads(path.read_text())["hooks"]["PreToolUse"]
    return groups


def ours(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        handler
        for group in groups
        for handler in group["hooks"]
        if "active-memory" in json.dumps(handler)
    ]


def test_claude_install_appends_our_group_and_keeps_everything_else(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = checkout / ".claude" / "settings.local.json"
    write_json(settings, CLAUDE_SETTINGS)

    code, out, _ = run(["install", "claude"], capsys)

    assert code == 0
    assert str(settings) in out
    after = json.loads(settings.read_text())
    assert list(after) == list(CLAUDE_SETTINGS)  # key order kept
    assert {k: v for k, v in after.items() if k != "hooks"} == {
        k: v for k, v in CLAUDE_SETTINGS.items() if k != "hooks"
    }
    assert after["hooks"]["PostToolUse"] == CLAUDE_SETTINGS["hooks"]["PostToolUse"]
    groups = after["hooks"]["PreToolUse"]
    assert groups[0] == {"matcher": "Bash", "hooks": [GUARD]}
    assert groups[1]["hooks"] == [{"type": "command", "command": f"{HOOK} claude", "timeout": 10}]
    assert "Read" in groups[1]["matcher"].split("|")


def test_second_install_changes_nothing(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = checkout / ".claude" / "settings.local.json"
    write_json(settings, CLAUDE_SETTINGS)
    run(["install", "claude"], capsys)
    first = settings.read_bytes()
    os.utime(settings, (1_000_000, 1_000_000))

    code, out, _ = run(["install", "claude"], capsys)

    assert code == 0
    assert "already installed" in out
    assert settings.read_bytes() == first
    assert settings.stat().st_mtime == 1_000_000  # not even rewritten


def test_uninstall_restores_the_users_file_exactly(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = checkout / ".claude" / "settings.local.json"
    original = write_json(settings, CLAUDE_SETTINGS)
    run(["install", "claude"], capsys)

    code, out, _ = run(["uninstall", "claude"], capsys)

    assert code == 0
    assert "removed" in out
    assert settings.read_text() == original
    code, out, _ = run(["uninstall", "claude"], capsys)
    assert "not installed" in out
    assert settings.read_text() == original


def test_uninstall_removes_only_our_handler_from_a_shared_group(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = checkout / ".claude" / "settings.local.json"
    mine = {"type": "command", "command": "/opt/venv/bin/active-memory hook claude"}
    document = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [GUARD, mine]}]}}
    write_json(settings, document)

    run(["uninstall", "claude"], capsys)

    assert pre_tool_use(settings) == [{"matcher": "*", "hooks": [GUARD]}]


def test_install_recognises_our_hook_spelled_with_a_path(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = checkout / ".claude" / "settings.local.json"
    mine = {"type": "command", "command": "'/opt/my venv/bin/active-memory' hook claude"}
    write_json(settings, {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [GUARD, mine]}]}})

    run(["install", "claude"], capsys)

    groups = pre_tool_use(settings)
    assert len(groups) == 1  # updated in place, not added twice
    assert groups[0]["matcher"] == "*"  # a group shared with the user's hook keeps its matcher
    assert groups[0]["hooks"][0] == GUARD
    assert groups[0]["hooks"][1]["command"] == f"{HOOK} claude"


def test_duplicates_of_our_hook_collapse_to_one(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = checkout / ".claude" / "settings.local.json"
    mine = {"type": "command", "command": "active-memory hook claude"}
    write_json(
        settings,
        {
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Read", "hooks": [mine]},
                    {"matcher": "Bash", "hooks": [GUARD]},
                    {"matcher": "Edit", "hooks": [mine]},
                ]
            }
        },
    )

    run(["install", "claude"], capsys)

    groups = pre_tool_use(settings)
    assert len(ours(groups)) == 1
    assert [g["matcher"] for g in groups][1] == "Bash"
    assert len(groups) == 2


def test_http_install_replaces_the_command_hook_and_keeps_the_token_out_of_the_file(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = checkout / ".claude" / "settings.local.json"
    write_json(settings, CLAUDE_SETTINGS)
    run(["install", "claude"], capsys)

    code, out, _ = run(["install", "claude", "--http", "--port", "49001"], capsys)

    assert code == 0
    assert "export ACTIVE_MEMORY_TOKEN" in out
    handlers = ours(pre_tool_use(settings))
    assert len(handlers) == 1
    http = handlers[0]
    assert http["type"] == "http"
    assert http["url"] == "http://127.0.0.1:49001/active-memory/v1/hook/claude"
    assert http["headers"]["Authorization"] == "Bearer $ACTIVE_MEMORY_TOKEN"
    assert "ACTIVE_MEMORY_TOKEN" in http["allowedEnvVars"]
    for name in http["headers"]:
        value = http["headers"][name]
        for variable in value.replace("${", "$").replace("}", "").split("$")[1:]:
            assert variable.split()[0] in http["allowedEnvVars"], name


def test_http_default_port_is_the_servers_default(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["install", "claude", "--http"], capsys)
    url = ours(pre_tool_use(checkout / ".claude" / "settings.local.json"))[0]["url"]
    assert url.startswith(f"http://127.0.0.1:{DEFAULT_PORT}/")


def test_dry_run_prints_a_diff_and_writes_nothing(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = checkout / ".claude" / "settings.local.json"
    original = write_json(settings, CLAUDE_SETTINGS)

    code, out, err = run(["install", "claude", "--dry-run"], capsys)

    assert code == 0
    assert settings.read_text() == original
    assert out.startswith(f"--- {settings}\n+++ {settings}\n")
    assert f'+            "command": "{HOOK} claude",' in out
    assert not [line for line in out.splitlines() if line.startswith("-") and "---" not in line]
    assert "nothing was written" in err


def test_dry_run_does_not_create_a_missing_file(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["install", "claude", "--dry-run", "--user"], capsys)

    assert code == 0
    assert "--- /dev/null" in out
    assert not (Path(os.environ["HOME"]) / ".claude").exists()


def test_dry_run_json_reports_the_diff(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["install", "codex", "--dry-run", "--json"], capsys)

    document = json.loads(out)
    assert code == 0
    assert document["changed"] is True
    assert document["dry_run"] is True
    assert document["path"] == str(checkout / ".codex" / "hooks.json")
    assert f"{HOOK} codex" in document["diff"]
    assert not (checkout / ".codex").exists()


def test_user_install_creates_the_home_settings_file(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = run(["install", "claude", "--user"], capsys)

    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    assert code == 0
    assert ours(pre_tool_use(settings))[0]["command"] == f"{HOOK} claude"
    assert not (checkout / ".claude").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{\n  "hooks": {\n    "PreToolUse": [\n  }\n', "settings.local.json:4: not valid JSON"),
        ('{"hooks": {}, // mine\n}\n', "not valid JSON"),
        ('["hooks"]\n', "top level must be a JSON object"),
        ('{"hooks": []}\n', "`hooks` must be a JSON object"),
        ('{"hooks": {"PreToolUse": {"matcher": "Bash"}}}\n', "`hooks.PreToolUse` must be a list"),
        ('{"hooks": {"PreToolUse": ["Bash"]}}\n', "`hooks.PreToolUse[0]` must be an object"),
    ],
)
def test_malformed_settings_is_a_clear_error_and_left_untouched(
    checkout: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    settings = checkout / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(text)

    for action in ("install", "uninstall"):
        code, out, err = run([action, "claude"], capsys)
        assert code == 2
        assert str(settings) in err
        assert expected in err
        assert "nothing was changed" in err
        assert out == ""
        assert settings.read_text() == text
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.local.json"]


def test_four_space_indentation_and_file_mode_are_kept(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = checkout / ".claude" / "settings.local.json"
    write_json(settings, CLAUDE_SETTINGS, indent=4)
    settings.chmod(0o600)

    run(["install", "claude"], capsys)

    text = settings.read_text()
    assert text.startswith('{\n    "$schema"')
    assert '\n                "hooks": [' in text
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600


def test_codex_install_merges_into_existing_hooks_json(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hooks = checkout / ".codex" / "hooks.json"
    original = write_json(hooks, CODEX_HOOKS)

    code, out, _ = run(["install", "codex"], capsys)

    assert code == 0
    assert "trust" in out  # tells the user how Codex trusts the hook
    after = json.loads(hooks.read_text())
    assert after["hooks"]["SessionStart"] == CODEX_HOOKS["hooks"]["SessionStart"]
    groups = after["hooks"]["PreToolUse"]
    assert groups[0] == CODEX_HOOKS["hooks"]["PreToolUse"][0]
    assert groups[1] == {"hooks": [{"type": "command", "command": f"{HOOK} codex", "timeout": 10}]}
    assert run(["install", "codex"], capsys)[1].startswith("the Codex hooks are already installed")
    run(["uninstall", "codex"], capsys)
    assert hooks.read_text() == original


def test_codex_user_install_follows_codex_home(
    checkout: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))

    run(["install", "codex", "--user"], capsys)

    assert ours(pre_tool_use(tmp_path / "codex-home" / "hooks.json"))


def test_codex_has_no_http_hooks(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["install", "codex", "--http"], capsys)

    assert code == 2
    assert "no HTTP hooks" in err
    assert not (checkout / ".codex").exists()


def test_claude_and_codex_hooks_do_not_claim_each_other(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One hooks file holding both commands (a user copied settings around): each
    # installer manages only its own.
    settings = checkout / ".claude" / "settings.local.json"
    codex_hook = {"type": "command", "command": "active-memory hook codex"}
    write_json(settings, {"hooks": {"PreToolUse": [{"hooks": [codex_hook]}]}})

    run(["install", "claude"], capsys)
    run(["uninstall", "claude"], capsys)

    assert pre_tool_use(settings) == [{"hooks": [codex_hook]}]


def test_uninstall_drops_containers_that_only_held_our_hook(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = checkout / ".claude" / "settings.local.json"
    write_json(settings, {"model": "opus"})

    run(["install", "claude"], capsys)
    run(["uninstall", "claude"], capsys)

    assert json.loads(settings.read_text()) == {"model": "opus"}


@pytest.mark.parametrize(
    ("command", "mine"),
    [
        ("active-memory-hook claude", True),
        ("active-memory hook claude", True),
        ("/home/me/.venv/bin/active-memory-hook claude", True),
        ('"C:\\\\Tools\\\\active-memory-hook.exe" claude', True),
        ("uvx active-memory hook claude --verbose", True),
        ("active-memory-hook codex", False),
        ("my-active-memory hook claude", False),
        ("active-memory hook claudette", False),
        ("echo active-memory", False),
    ],
)
def test_which_claude_commands_are_ours(command: str, mine: bool) -> None:
    from active_memory.hooks.installers import claude

    assert claude.is_ours({"type": "command", "command": command}) is mine


def test_uninstall_removes_a_file_that_held_only_our_hook(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hooks = checkout / ".codex" / "hooks.json"
    run(["install", "codex"], capsys)
    assert hooks.is_file()

    code, out, _ = run(["uninstall", "codex", "--dry-run"], capsys)
    assert code == 0
    assert "+++ /dev/null" in out
    assert hooks.is_file()

    run(["uninstall", "codex"], capsys)
    assert not hooks.exists()
    assert (checkout / ".codex").is_dir()  # folders are left alone
