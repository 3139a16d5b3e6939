"""The Codex plugin's set-up trusts exactly the installed plugin's hooks, once per version
of them (harness_plugins/codex_hook_trust.py): the user's other settings are kept as they
were, a hook the user disabled stays disabled, and a trust the user withdrew is not
written again until the hooks change. tests/test_codex_plugin_real.py proves that the real
`codex` runs hooks trusted this way."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import tomlkit

from active_memory.harness_plugins import codex_hook_trust
from active_memory.hooks.installers import codex_trust

ROOT = Path(__file__).resolve().parents[1]
USER_CONFIG = """# my settings
model = "gpt-5-codex"

[marketplaces.active-memory]
source_type = "local"
source = "/src/active-memory"

[hooks.state."/home/me/.codex/hooks.json:pre_tool_use:0:0"]
trusted_hash = "sha256:mine"
"""
KEY = "active-memory@active-memory:hooks/hooks.json"


def _installed(codex_home: Path) -> Path:
    plugin = codex_home / "plugins" / "cache" / "active-memory" / "active-memory" / "0.1.0"
    shutil.copytree(ROOT / "plugins" / "codex", plugin, symlinks=True)
    return plugin


def _state(config: Path) -> dict[str, dict[str, object]]:
    document = tomlkit.parse(config.read_text("utf-8")).unwrap()
    state = document.get("hooks", {}).get("state", {})
    assert isinstance(state, dict)
    return state


def _world(tmp_path: Path) -> tuple[Path, Path, Path]:
    codex_home = tmp_path / "codex"
    plugin = _installed(codex_home)
    data = codex_home / "plugins" / "data" / "active-memory-active-memory"
    data.mkdir(parents=True)
    config = codex_home / "config.toml"
    config.write_text(USER_CONFIG, encoding="utf-8")
    return plugin, data, config


def test_every_hook_of_the_installed_plugin_is_trusted_with_codex_s_hash(tmp_path: Path) -> None:
    plugin, data, config = _world(tmp_path)
    assert codex_hook_trust.main([str(plugin), str(data)]) == 0
    state = _state(config)
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text("utf-8"))
    for event, group, index, handler in codex_trust.positions(hooks):
        key = f"{KEY}:{codex_trust.LABELS[event]}:{group}:{index}"
        matcher = hooks["hooks"][event][group].get("matcher")
        assert state[key] == {"trusted_hash": codex_trust.hook_hash(event, matcher, handler)}
    assert {k for k in state if k.startswith("active-memory@")} == {
        f"{KEY}:session_start:0:0", f"{KEY}:pre_tool_use:0:0", f"{KEY}:post_compact:0:0",
        f"{KEY}:session_end:0:0",
    }  # fmt: skip
    # The user's own text and entries are kept as they were.
    text = config.read_text("utf-8")
    assert text.startswith(USER_CONFIG)
    assert "trusted the plugin's hooks in Codex (4 entries)" in (data / "bootstrap.log").read_text()


def test_a_trust_the_user_withdrew_is_not_written_again_for_the_same_hooks(
    tmp_path: Path,
) -> None:
    plugin, data, config = _world(tmp_path)
    codex_hook_trust.main([str(plugin), str(data)])
    config.write_text(USER_CONFIG, encoding="utf-8")  # the user distrusted them
    assert codex_hook_trust.main([str(plugin), str(data)]) == 0
    assert config.read_text("utf-8") == USER_CONFIG


def test_changed_hooks_are_trusted_again_and_gone_ones_forgotten(tmp_path: Path) -> None:
    plugin, data, config = _world(tmp_path)
    codex_hook_trust.main([str(plugin), str(data)])
    hooks_file = plugin / "hooks" / "hooks.json"
    hooks = json.loads(hooks_file.read_text("utf-8"))
    hooks["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = 20  # a new version's hook
    del hooks["hooks"]["SessionEnd"]
    hooks_file.write_text(json.dumps(hooks), encoding="utf-8")
    codex_hook_trust.main([str(plugin), str(data)])
    state = _state(config)
    handler = hooks["hooks"]["PreToolUse"][0]["hooks"][0]
    expected = codex_trust.hook_hash("PreToolUse", None, handler)
    assert state[f"{KEY}:pre_tool_use:0:0"] == {"trusted_hash": expected}
    assert f"{KEY}:session_end:0:0" not in state
    assert state["/home/me/.codex/hooks.json:pre_tool_use:0:0"] == {"trusted_hash": "sha256:mine"}


def test_a_hook_the_user_disabled_stays_disabled(tmp_path: Path) -> None:
    plugin, data, config = _world(tmp_path)
    config.write_text(
        USER_CONFIG + f'\n[hooks.state."{KEY}:pre_tool_use:0:0"]\nenabled = false\n',
        encoding="utf-8",
    )
    codex_hook_trust.main([str(plugin), str(data)])
    state = _state(config)
    assert state[f"{KEY}:pre_tool_use:0:0"] == {"enabled": False}
    assert "trusted_hash" in state[f"{KEY}:session_end:0:0"]


def test_an_unreadable_config_changes_nothing(tmp_path: Path) -> None:
    plugin, data, config = _world(tmp_path)
    config.write_text("[hooks\n", encoding="utf-8")
    assert codex_hook_trust.main([str(plugin), str(data)]) == 1
    assert config.read_text("utf-8") == "[hooks\n"
    assert not (data / codex_hook_trust.RECORD).exists()


def test_a_folder_codex_did_not_install_is_refused(tmp_path: Path) -> None:
    assert codex_hook_trust.main([str(ROOT / "plugins" / "codex"), str(tmp_path)]) == 1
    assert codex_hook_trust.main([]) == 2
