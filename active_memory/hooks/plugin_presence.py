"""Is our plugin (or extension) installed and on in a harness? (docs/plugins.md)

A plugin brings the same hooks `hook install` writes, so `setup` installs none for a
harness whose plugin is on: both would run on every tool call (two processes, one
ledger). Each harness records it its own way, as its pinned binary writes it:

- Claude Code: `enabledPlugins` of `~/.claude/settings.json`, `"active-memory@<marketplace>":
  true` (`claude plugin install`);
- Copilot CLI: the same key in `$COPILOT_HOME/settings.json` (default `~/.copilot`);
- Codex: `[plugins."active-memory@<marketplace>"] enabled = true` in
  `$CODEX_HOME/config.toml` (`codex plugin add`);
- Gemini CLI: the extension folder `~/.gemini/extensions/active-memory/` with its
  manifest (`gemini extensions install|link`), unless `extension-enablement.json` turns
  it off everywhere it names (`gemini extensions disable`).

Each answer is the sentence `setup` shows, or None. A file that cannot be read or parsed
counts as no plugin: the installer then reads it and says what is wrong.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

PLUGIN = "active-memory"
"""Our plugin's and extension's name in every harness (the marketplace's may differ)."""


def plugin_in_use(harness: str, env: Mapping[str, str] | None = None) -> str | None:
    """Why `harness` needs no hook install (our plugin is on), or None."""
    environment = os.environ if env is None else env
    home = Path(environment.get("HOME") or Path.home())
    if harness == "claude":
        return _enabled_plugins(home / ".claude" / "settings.json")
    if harness == "copilot":
        copilot = environment.get("COPILOT_HOME")
        return _enabled_plugins((Path(copilot) if copilot else home / ".copilot") / "settings.json")
    if harness == "codex":
        return _codex_plugin(environment)
    if harness == "gemini":
        return _gemini_extension(home / ".gemini" / "extensions")
    return None


def _ours(key: Any) -> bool:
    return isinstance(key, str) and key.split("@")[0] == PLUGIN


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _enabled_plugins(path: Path) -> str | None:
    document = _json(path)
    enabled = document.get("enabledPlugins") if isinstance(document, dict) else None
    if not isinstance(enabled, dict):
        return None
    for key, on in enabled.items():
        if _ours(key) and on is True:
            return f"the Active Memory plugin {key} is enabled in {path}; it brings the hooks"
    return None


def _codex_plugin(env: Mapping[str, str]) -> str | None:
    import tomlkit

    from active_memory.hooks.installers.codex_trust import config_path

    path = config_path(env)
    try:
        document = tomlkit.parse(path.read_text(encoding="utf-8")).unwrap()
    except (OSError, ValueError, tomlkit.exceptions.TOMLKitError):
        return None
    plugins = document.get("plugins")
    if not isinstance(plugins, dict):
        return None
    for key, table in plugins.items():
        if _ours(key) and isinstance(table, dict) and table.get("enabled", True) is True:
            return f"the Active Memory plugin {key} is enabled in {path}; it brings the hooks"
    return None


def _gemini_extension(extensions: Path) -> str | None:
    folder = extensions / PLUGIN
    manifest = _json(folder / "gemini-extension.json")
    if not isinstance(manifest, dict) or manifest.get("name") != PLUGIN:
        return None
    enablement = _json(extensions / "extension-enablement.json")
    entry = enablement.get(PLUGIN) if isinstance(enablement, dict) else None
    overrides = entry.get("overrides") if isinstance(entry, dict) else None
    if (
        isinstance(overrides, list)
        and overrides
        and all(isinstance(rule, str) and rule.startswith("!") for rule in overrides)
    ):
        return None  # `gemini extensions disable`: off wherever it says
    return f"the Active Memory extension is installed in {folder}; it brings the hooks"
