"""The Gemini CLI, Codex and Copilot CLI plugins' committed files are what the installers'
rules render (active_memory/harness_plugins/), register what `hook install <harness>`
registers, and keep out of each other's way (docs/plugins.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from active_memory.harness_plugins import codex, copilot, gemini
from active_memory.harness_plugins.__main__ import every_entry
from active_memory.harness_plugins.identity import SOURCE_LINKS, VERSION
from active_memory.harness_plugins.launchers import COMMAND, HOOK, SETUP
from active_memory.harness_plugins.rendering import stale, write
from active_memory.hooks.installers import codex as codex_installer
from active_memory.hooks.installers import copilot as copilot_installer
from active_memory.hooks.installers import gemini as gemini_installer

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "python -m active_memory.harness_plugins ."


def test_committed_plugin_files_are_what_the_installers_render() -> None:
    drifted = stale(ROOT, every_entry())
    assert not drifted, f"{drifted} differ from the rendering: run `{REGENERATE}` and commit"


def _commands(groups: list[dict[str, Any]], key: str = "command") -> list[str]:
    return [handler[key] for group in groups for handler in group["hooks"]]


def test_the_gemini_extension_registers_what_hook_install_gemini_does() -> None:
    rendered = gemini.hooks()["hooks"]
    for entry in gemini_installer.entries(None):
        (group,) = rendered[entry.event]
        assert group.get("matcher") == entry.matcher
        (handler,) = group["hooks"]
        assert handler["timeout"] == entry.handler["timeout"]
        assert handler["name"] == entry.handler["name"]
        # The same words after the command: `gemini`, `session-end gemini`.
        assert handler["command"].split(" ", 1)[1] == entry.handler["command"].split(" ", 1)[1]
        assert entry.is_ours(handler)  # the installer's own test of what is ours
    assert _commands(rendered["SessionStart"]) == [f'"$ACTIVE_MEMORY_EXTENSION/bin/{SETUP}"']


def test_the_codex_plugin_registers_what_hook_install_codex_does() -> None:
    rendered = codex.hooks()["hooks"]
    for entry in codex_installer.entries(None):
        (group,) = rendered[entry.event]
        assert group.get("matcher") == entry.matcher
        (handler,) = group["hooks"]
        assert handler["timeout"] == entry.handler["timeout"]
        assert handler["command"].split(" ", 1)[1] == entry.handler["command"].split(" ", 1)[1]
        assert codex_installer.is_ours_at(entry.event, handler)
    assert _commands(rendered["SessionStart"]) == [f'"$PLUGIN_ROOT/bin/{SETUP}"']


def test_the_copilot_plugin_registers_what_hook_install_copilot_does() -> None:
    rendered = copilot.hooks()
    installed = copilot_installer.plan(Path("/nowhere.json"), True).after
    assert installed is not None
    for event, handlers in json.loads(installed)["hooks"].items():
        (ours,) = rendered["hooks"][event]
        (theirs,) = handlers
        assert ours["timeoutSec"] == theirs["timeoutSec"]
        assert ours["bash"].split(" ", 1)[1] == theirs["bash"].split(" ", 1)[1]
        assert copilot_installer.is_ours(ours)
    assert rendered["version"] == 1
    assert [h["bash"] for h in rendered["hooks"]["sessionStart"]] == [
        f'"$COPILOT_PLUGIN_ROOT/bin/{SETUP}"'
    ]


def test_no_other_harness_puts_a_hooks_file_where_claude_code_loads_one() -> None:
    # Claude Code always loads <plugin root>/hooks/hooks.json, and our Claude plugin's
    # root is the repository's: a Gemini or Codex hooks file there would run in Claude Code.
    assert not (ROOT / "hooks").exists()
    for path in every_entry():
        assert not path.startswith("hooks/"), path


@pytest.mark.parametrize("folder", ["plugins/gemini", "plugins/copilot"])
def test_the_source_links_of_a_plugin_folder_reach_the_repository(folder: str) -> None:
    for name, target in SOURCE_LINKS.items():
        link = ROOT / folder / name
        assert os.readlink(link) == target
        expected = ROOT / "plugins" / name if name == "bootstrap.py" else ROOT / name
        assert link.resolve() == expected.resolve()


def test_every_launcher_a_plugin_names_is_committed_and_executable() -> None:
    for folder in ("plugins/gemini", "plugins/codex", "plugins/copilot"):
        for name in (HOOK, COMMAND, SETUP):
            path = ROOT / folder / "bin" / name
            assert path.is_file() and os.access(path, os.X_OK), path
    assert (ROOT / "plugins/codex/locate_source.py").is_file()


def test_each_marketplace_lists_its_harness_folder() -> None:
    codex_market = json.loads((ROOT / codex.MARKETPLACE_FILE).read_text("utf-8"))
    assert codex_market["plugins"][0]["source"] == {"source": "local", "path": "./plugins/codex"}
    copilot_market = json.loads((ROOT / copilot.MARKETPLACE_FILE).read_text("utf-8"))
    assert copilot_market["plugins"][0]["source"] == "./plugins/copilot"
    # Copilot CLI reads .github/plugin/ before .claude-plugin/: this one, not Claude's.
    assert copilot.MARKETPLACE_FILE == ".github/plugin/marketplace.json"


def test_the_codex_mcp_server_starts_this_version_from_codex_s_cache() -> None:
    (server,) = codex.mcp()["mcpServers"].values()
    assert server["command"] == "sh"
    assert (
        f"/plugins/cache/active-memory/active-memory/{VERSION}/bin/active-memory"
        in (server["args"][1])
    )
    manifest = json.loads((ROOT / "plugins/codex/.codex-plugin/plugin.json").read_text("utf-8"))
    assert manifest["version"] == VERSION  # the cache folder Codex names after it
    assert "CODEX_HOME" in server["env_vars"]


def test_writing_the_rendering_repairs_a_drifted_tree(tmp_path: Path) -> None:
    entries = every_entry()
    assert write(tmp_path, entries) and stale(tmp_path, entries) == []
    (tmp_path / "plugins/codex/hooks/hooks.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "plugins/gemini/bin/active-memory-hook").chmod(0o644)
    (tmp_path / "plugins/copilot/active_memory").unlink()
    assert sorted(stale(tmp_path, entries)) == [
        "plugins/codex/hooks/hooks.json",
        "plugins/copilot/active_memory",
        "plugins/gemini/bin/active-memory-hook",
    ]
    assert len(write(tmp_path, entries)) == 3
    assert stale(tmp_path, entries) == []
