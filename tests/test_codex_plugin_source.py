"""plugins/codex/locate_source.py: the Codex plugin's set-up finds the package's source
in the marketplace `codex plugin marketplace add` recorded (a local folder, or the Git
clone Codex keeps), and says why when it cannot."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOCATOR = ROOT / "plugins" / "codex" / "locate_source.py"


def _load() -> Any:
    # A plain script of the plugin folder, not part of the package: loaded from its file.
    spec = importlib.util.spec_from_file_location("codex_locate_source", LOCATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


locator = _load()


def _source(root: Path) -> Path:
    (root / "active_memory").mkdir(parents=True)
    (root / "plugins").mkdir()
    (root / "plugins" / "bootstrap.py").write_text("", encoding="utf-8")
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    return root


def _plugin(codex_home: Path, marketplace: str = "active-memory") -> Path:
    plugin = codex_home / "plugins" / "cache" / marketplace / "active-memory" / "0.1.0"
    plugin.mkdir(parents=True)
    return plugin


def _locate(plugin: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(LOCATOR), str(plugin)],
                          capture_output=True, text=True, timeout=30, check=False)  # fmt: skip


def test_a_local_marketplace_is_its_folder(tmp_path: Path) -> None:
    source = _source(tmp_path / "my clone")
    codex_home = tmp_path / "codex"
    plugin = _plugin(codex_home)
    (codex_home / "config.toml").write_text(
        f'model = "x"\n\n[marketplaces.active-memory]\nsource_type = "local"\n'
        f'source = "{source}"\n', encoding="utf-8")  # fmt: skip
    done = _locate(plugin)
    assert (done.returncode, done.stdout.strip()) == (0, str(source))


def test_a_git_marketplace_is_the_clone_codex_keeps(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    source = _source(codex_home / ".tmp" / "marketplaces" / "team-tools")
    plugin = _plugin(codex_home, "team-tools")
    (codex_home / "config.toml").write_text(
        '[marketplaces.team-tools]\nsource_type = "git"\n'
        'source = "https://github.com/acme/active-memory.git"\n', encoding="utf-8")  # fmt: skip
    assert locator.locate(plugin) == source


def _message(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done
    text = json.loads(done.stdout)["systemMessage"]
    assert isinstance(text, str) and text.startswith("Active Memory cannot be set up:")
    return text


def test_a_marketplace_codex_no_longer_lists_says_to_add_it_again(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    plugin = _plugin(codex_home)
    (codex_home / "config.toml").write_text("[marketplaces.other]\n", encoding="utf-8")
    assert "codex plugin marketplace add" in _message(_locate(plugin))


def test_a_marketplace_without_our_source_says_what_is_missing(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    plugin = _plugin(codex_home)
    empty = tmp_path / "empty"
    empty.mkdir()
    (codex_home / "config.toml").write_text(
        f'[marketplaces.active-memory]\nsource_type = "local"\nsource = "{empty}"\n',
        encoding="utf-8",
    )
    message = _message(_locate(plugin))
    assert "pyproject.toml, active_memory, plugins/bootstrap.py missing" in message


def test_an_unreadable_config_is_named(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    plugin = _plugin(codex_home)
    (codex_home / "config.toml").write_text("[marketplaces\n", encoding="utf-8")
    assert str(codex_home / "config.toml") in _message(_locate(plugin))


def test_a_folder_codex_did_not_install_is_refused(tmp_path: Path) -> None:
    assert "is not a plugin Codex installed" in _message(_locate(ROOT / "plugins" / "codex"))


def test_usage_errors_exit_2() -> None:
    done = subprocess.run([sys.executable, str(LOCATOR)], capture_output=True, text=True,
                          timeout=30, check=False)  # fmt: skip
    assert done.returncode == 2 and "usage:" in done.stderr
