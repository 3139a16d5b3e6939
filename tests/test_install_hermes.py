"""`active-memory hook install hermes`: the plugin folder, its entry in Hermes'
`config.yaml`, and `hook doctor`'s checks of both.

The plugin itself runs in the real Hermes in tests/test_real_opencode_hermes.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from install_support import HOOK, lean_state, run  # noqa: F401 - autouse fixture

from active_memory.hooks import doctor
from active_memory.hooks.installers.hermes import MARKER, plugin_command, plugin_source

CONFIG = """# my Hermes settings
model:
  default: qwen3  # the fast one
  provider: custom
plugins:
  enabled:
    - disk-cleanup
  disabled: []
display:
  skin: mono
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.delenv("HERMES_ENABLE_PROJECT_PLUGINS", raising=False)
    monkeypatch.chdir(root)
    hermes = tmp_path / "home" / ".hermes"
    hermes.mkdir(parents=True)
    (hermes / "config.yaml").write_text(CONFIG)
    return hermes


def test_user_install_writes_the_plugin_and_enables_it_keeping_the_users_config(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["install", "hermes", "--user"], capsys)

    plugin = home / "plugins" / "active-memory" / "__init__.py"
    assert code == 0 and str(plugin) in out
    assert plugin.read_text() == plugin_source(HOOK)
    assert plugin_command(plugin.read_text()) == str(HOOK)
    assert (home / "plugins" / "active-memory" / "plugin.yaml").read_text().startswith(MARKER)
    config = (home / "config.yaml").read_text()
    ours = "    - disk-cleanup\n    - active-memory\n"
    assert config == CONFIG.replace("    - disk-cleanup\n", ours)


def test_second_install_changes_nothing_and_uninstall_restores_everything(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["install", "hermes", "--user"], capsys)
    plugin = home / "plugins" / "active-memory" / "__init__.py"
    os.utime(plugin, (1_000_000, 1_000_000))
    assert "already installed" in run(["install", "hermes", "--user"], capsys)[1]
    assert plugin.stat().st_mtime == 1_000_000
    # Hermes compiled the plugin when it loaded it.
    (plugin.parent / "__pycache__").mkdir()
    (plugin.parent / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\0")

    code, _, _ = run(["uninstall", "hermes", "--user"], capsys)
    assert code == 0
    assert not plugin.parent.exists()
    assert (home / "config.yaml").read_text() == CONFIG


def test_uninstall_keeps_the_entry_while_the_other_install_remains(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run(["install", "hermes", "--user"], capsys)
    run(["install", "hermes", "--project"], capsys)
    run(["uninstall", "hermes", "--project"], capsys)
    assert "- active-memory" in (home / "config.yaml").read_text()
    run(["uninstall", "hermes", "--user"], capsys)
    assert (home / "config.yaml").read_text() == CONFIG


def test_a_missing_config_is_created_with_only_our_entry(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "config.yaml").unlink()
    run(["install", "hermes", "--user"], capsys)
    assert (home / "config.yaml").read_text() == "plugins:\n  enabled:\n  - active-memory\n"


def test_dry_run_prints_the_diff_and_writes_nothing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["install", "hermes", "--user", "--dry-run"], capsys)
    assert code == 0
    assert "+    - active-memory" in out and "+def register(ctx: Any) -> None:" in out
    assert "nothing was written" in err
    assert not (home / "plugins").exists()
    assert (home / "config.yaml").read_text() == CONFIG


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ("model: [unclosed\n", "not valid YAML"),
        ("- a list\n", "top level must be a mapping"),
        ("plugins: yes\n", "`plugins` must be a mapping"),
        ("plugins:\n  enabled: all\n", "`plugins.enabled` must be a list"),
    ],
)
def test_a_config_it_cannot_edit_is_named_and_nothing_is_written(
    home: Path, capsys: pytest.CaptureFixture[str], config: str, said: str
) -> None:
    (home / "config.yaml").write_text(config)
    code, _, err = run(["install", "hermes", "--user"], capsys)
    assert code == 2 and said in err and "config.yaml" in err
    assert not (home / "plugins").exists()
    assert (home / "config.yaml").read_text() == config


def test_a_foreign_plugin_of_our_name_is_never_touched(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = home / "plugins" / "active-memory" / "__init__.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("def register(ctx):\n    pass\n")
    for action in ("install", "uninstall"):
        code, _, err = run([action, "hermes", "--user"], capsys)
        assert code == 2 and "not written by active-memory" in err
    assert plugin.read_text() == "def register(ctx):\n    pass\n"
    assert (home / "config.yaml").read_text() == CONFIG


def test_project_install_says_hermes_needs_project_plugins_enabled(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(["install", "hermes", "--project"], capsys)
    assert code == 0
    assert (Path.cwd() / ".hermes" / "plugins" / "active-memory" / "__init__.py").is_file()
    assert "HERMES_ENABLE_PROJECT_PLUGINS=1" in err
    (item,) = [i for i in doctor.diagnose(Path.cwd()) if i.harness == "hermes"]
    enabled = {c.name: c for c in item.checks}["enabled"]
    assert not enabled.ok and "HERMES_ENABLE_PROJECT_PLUGINS" in (enabled.fix or "")

    (home / ".env").write_text("OPENAI_API_KEY=x\nHERMES_ENABLE_PROJECT_PLUGINS=true\n")
    (item,) = [i for i in doctor.diagnose(Path.cwd()) if i.harness == "hermes"]
    assert {c.name: c.ok for c in item.checks}["enabled"]


def test_doctor_fails_a_plugin_hermes_would_not_load(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["install", "hermes", "--user"], capsys)
    (item,) = [i for i in doctor.diagnose(Path.cwd()) if i.harness == "hermes"]
    checks = {c.name: c for c in item.checks}
    assert checks["present"].ok and checks["resolvable"].ok and checks["enabled"].ok

    config = home / "config.yaml"
    config.write_text(config.read_text().replace("  disabled: []", "  disabled: [active-memory]"))
    (home / "plugins" / "active-memory" / "plugin.yaml").unlink()
    (item,) = [i for i in doctor.diagnose(Path.cwd()) if i.harness == "hermes"]
    checks = {c.name: c for c in item.checks}
    assert not checks["present"].ok and "plugin.yaml" in checks["present"].detail
    assert not checks["enabled"].ok
    assert "hook install hermes" in (checks["enabled"].fix or "")
