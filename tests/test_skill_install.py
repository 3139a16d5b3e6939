"""`active-memory skill install|uninstall claude|codex`: where the skill goes, that it is
refreshed and removed only when ours, and that its text matches what `init` does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import get_args

import pytest

from active_memory.cli import main
from active_memory.init.flow import ANSWER_ACTION
from active_memory.init.inventory import ExclusionKind
from active_memory.skills import MARKER, SKILL_NAME, render_skill, skills_root
from active_memory.specialists.kinds import SPECIALISTS
from active_memory.specialists.providers.exchange import ANSWER_SCHEMA, TASK_SCHEMA

FOREIGN = "---\nname: active-memory-init\ndescription: someone else's skill\n---\n\nmine\n"
OTHER = "---\nname: deploy\ndescription: the user's deploy skill\n---\n\nsteps\n"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    monkeypatch.chdir(root / "src")  # a sub-folder: the checkout's top is used
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return root


def skill_file(root: Path) -> Path:
    return root / SKILL_NAME / "SKILL.md"


@pytest.mark.parametrize(
    ("client", "folder"), [("claude", ".claude/skills"), ("codex", ".agents/skills")]
)
def test_install_writes_the_skill_in_the_client_s_project_folder_once(
    repo: Path, client: str, folder: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / folder / "deploy").mkdir(parents=True)
    (repo / folder / "deploy" / "SKILL.md").write_text(OTHER)
    assert main(["skill", "install", client, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    path = repo / folder / SKILL_NAME / "SKILL.md"
    assert first["changed"] is True and first["path"] == str(path)
    text = path.read_text()
    assert text.startswith(f'---\nname: {SKILL_NAME}\ndescription: "Initialise Active Memory')
    assert MARKER in text
    assert main(["skill", "install", client, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed"] is False
    assert (repo / folder / "deploy" / "SKILL.md").read_text() == OTHER  # merged, untouched


def test_user_level_folders_follow_home_and_claude_config_dir(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    assert skills_root("claude", "user", repo) == home / ".claude" / "skills"
    assert skills_root("codex", "user", repo) == home / ".agents" / "skills"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert main(["skill", "install", "claude", "--user"]) == 0
    assert MARKER in skill_file(tmp_path / "cfg" / "skills").read_text()


def test_reinstalling_refreshes_an_older_copy_of_ours(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = skill_file(repo / ".claude" / "skills")
    path.parent.mkdir(parents=True)
    path.write_text(f"---\nname: {SKILL_NAME}\ndescription: old\n---\n\n{MARKER}\nold text\n")
    assert main(["skill", "install", "claude"]) == 0
    assert "installed" in capsys.readouterr().out
    assert path.read_text() == render_skill()


@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_a_skill_of_our_name_that_is_not_ours_is_a_conflict_and_left_alone(
    repo: Path, action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = skill_file(repo / ".agents" / "skills")
    path.parent.mkdir(parents=True)
    path.write_text(FOREIGN)
    assert main(["skill", action, "codex"]) == 2
    assert "did not write; nothing was changed" in capsys.readouterr().err
    assert path.read_text() == FOREIGN


def test_another_folder_declaring_our_name_is_a_conflict(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = repo / ".agents" / "skills" / "memory-init" / "SKILL.md"
    other.parent.mkdir(parents=True)
    other.write_text(FOREIGN)
    assert main(["skill", "install", "codex"]) == 2
    assert f"{other} already declares the skill name" in capsys.readouterr().err
    assert not skill_file(repo / ".agents" / "skills").exists()


def test_uninstall_removes_only_ours_and_its_emptied_folder(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = repo / ".claude" / "skills"
    (root / "deploy").mkdir(parents=True)
    (root / "deploy" / "SKILL.md").write_text(OTHER)
    assert main(["skill", "install", "claude"]) == 0
    assert main(["skill", "uninstall", "claude"]) == 0
    assert "removed" in capsys.readouterr().out
    assert sorted(p.name for p in root.iterdir()) == ["deploy"]
    assert main(["skill", "uninstall", "claude"]) == 0
    assert "is not installed" in capsys.readouterr().out


def test_a_dry_run_prints_the_diff_and_writes_nothing(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["skill", "install", "claude", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("--- /dev/null\n") and f"+name: {SKILL_NAME}" in out
    assert not (repo / ".claude").exists()


def test_the_skill_names_what_init_prints_and_the_files_it_exchanges() -> None:
    text = render_skill("/opt/bin/active-memory")
    assert "ACTIVE_MEMORY_COMMAND: /opt/bin/active-memory\n" in text
    assert "/opt/bin/active-memory init --json --directory SESSION\n" in text
    for specialist in SPECIALISTS:
        assert f"`{specialist}`" in text
    for kind in get_args(ExclusionKind):
        assert f"`{kind}`" in text
    for phase in ("discovery", "maintenance", "complete"):
        assert f"`{phase}`" in text or f"{phase.capitalize()} phase" in text
    for field in ("phase", "next_action", "inventory", "tasks", "task_file", "answer_file"):
        assert f"`{field}`" in text
    assert TASK_SCHEMA in text and ANSWER_SCHEMA in text
    assert "answer_file" in ANSWER_ACTION  # the command's own next_action names the same file
    spaced = render_skill("/opt/my tools/active-memory")
    assert "    '/opt/my tools/active-memory' init --json --directory SESSION\n" in spaced
