"""Hermes Agent: a plugin of ours, `active-memory/`, enabled in Hermes' `config.yaml`.

Hermes 0.19 loads directory plugins (`plugin.yaml` and `__init__.py` with
`register(ctx)`) from `$HERMES_HOME/plugins/` (user, default `~/.hermes`) and, when
`HERMES_ENABLE_PROJECT_PLUGINS=1` is set, from `./.hermes/plugins/` of the folder it
starts in (project). Either way a plugin runs only once its name is in `plugins.enabled`
of `$HERMES_HOME/config.yaml` (Hermes plugins are opt-in), so the installer writes:

- `<plugins>/active-memory/__init__.py` (package data `hermes_plugin.py`, its command the
  absolute hook path) and `<plugins>/active-memory/plugin.yaml`: wholly ours, each with a
  marker line; a file of those names without it is never overwritten or removed;
- `active-memory` in `plugins.enabled` of `config.yaml`, edited as YAML round trip
  (ruamel.yaml: the user's comments, order and other keys stay). Uninstalling removes it
  only when no other install of ours (project or user) is left.

Why a plugin and not shell hooks in `config.yaml`: a shell hook can observe a tool call
or add context before the next model call (`pre_llm_call`, once per turn), but only the
plugin API's `transform_tool_result` can add to the tool's result itself
(docs/harnesses.md, "Hermes").
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from active_memory.errors import InvalidRecord
from active_memory.hooks.installers.files import FileChange, read_text
from active_memory.hooks.installers.owned_file import plan_owned, shipped_source

PLUGIN_NAME = "active-memory"
PLUGIN_FILE = "__init__.py"
MANIFEST_FILE = "plugin.yaml"
MARKER = "# active-memory: written by `active-memory hook install hermes`"
MANIFEST = f"""{MARKER}
name: {PLUGIN_NAME}
version: "0.1.0"
description: Lessons from earlier runs with each tool's result; sessions queued.
provides_hooks:
  - transform_tool_result
  - on_session_end
  - on_session_finalize
"""
PROJECT_PLUGINS_ENV = "HERMES_ENABLE_PROJECT_PLUGINS"


def hermes_home(env: Mapping[str, str]) -> Path:
    """`$HERMES_HOME`, default `~/.hermes`."""
    configured = env.get("HERMES_HOME")
    home = Path(env.get("HOME") or Path.home())
    return Path(configured).expanduser() if configured else home / ".hermes"


def config_path(env: Mapping[str, str]) -> Path:
    """Hermes' own settings file, `$HERMES_HOME/config.yaml`."""
    return hermes_home(env) / "config.yaml"


def plugin_path(plugins_dir: Path) -> Path:
    """`<plugins_dir>/active-memory/__init__.py`: the file `hook install` names."""
    return plugins_dir / PLUGIN_NAME / PLUGIN_FILE


def plugin_source(script: Path | None = None) -> str:
    """The plugin's Python source (package data), running `script` (default: PATH)."""
    return shipped_source("hermes_plugin.py", script)


def plugin_command(text: str) -> str | None:
    """The hook executable an installed plugin runs (its `COMMAND = …` line)."""
    for line in text.splitlines():
        if line.startswith("COMMAND = "):
            literal = line.rsplit(" or ", 1)[-1].strip()
            try:
                value = json.loads(literal)
            except ValueError:
                return None
            return value if isinstance(value, str) else None
    return None


def plan(
    path: Path, install: bool, script: Path | None, env: Mapping[str, str], other: Path | None
) -> list[FileChange]:
    """The plugin's two files at `path`'s folder and the `plugins.enabled` entry.

    `other`: the plugin file of the other place (project or user); while it is ours,
    uninstalling leaves the entry enabled.
    """
    manifest = path.parent / MANIFEST_FILE
    changes = [
        plan_owned(path, MARKER, plugin_source(script) if install else None),
        plan_owned(manifest, MARKER, MANIFEST if install else None),
    ]
    still_used = other is not None and (read_text(other) or "").startswith(MARKER)
    config = config_path(env)
    before = read_text(config)
    after = enabled_text(config, before, enable=install or still_used)
    changes.append(FileChange(config, before, after))
    return changes


def enabled_text(path: Path, text: str | None, *, enable: bool) -> str | None:
    """`text` of `config.yaml` with our plugin in (or out of) `plugins.enabled`; the rest
    as it was. InvalidRecord for a file that is not a YAML mapping."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.util import load_yaml_guess_indent

    yaml = YAML()
    yaml.preserve_quotes = True
    try:
        document: Any = yaml.load(text) if text and text.strip() else None
        if document is not None and text is not None:  # written back in the file's style
            _, sequence, offset = load_yaml_guess_indent(text)
            yaml.indent(mapping=_mapping_indent(text), sequence=sequence or 2,
                        offset=offset or 0)  # fmt: skip
    except YAMLError as exc:
        raise InvalidRecord(
            str(path), f"not valid YAML ({exc}); fix it or move it away, nothing was changed"
        ) from None
    if document is None:
        if not enable:
            return text
        return f"plugins:\n  enabled:\n  - {PLUGIN_NAME}\n"
    if not isinstance(document, dict):
        raise InvalidRecord(str(path), "the top level must be a mapping; nothing was changed")
    plugins = document.get("plugins")
    if plugins is None:
        if not enable:
            return text
        document["plugins"] = {"enabled": [PLUGIN_NAME]}
    elif not isinstance(plugins, dict):
        raise InvalidRecord(str(path), "`plugins` must be a mapping; nothing was changed")
    else:
        listed = plugins.get("enabled")
        if listed is None:
            if not enable:
                return text
            plugins["enabled"] = [PLUGIN_NAME]
        elif not isinstance(listed, list):
            raise InvalidRecord(str(path), "`plugins.enabled` must be a list; nothing was changed")
        elif enable and PLUGIN_NAME not in listed:
            listed.append(PLUGIN_NAME)
        elif not enable and PLUGIN_NAME in listed:
            listed.remove(PLUGIN_NAME)
        else:
            return text
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def _mapping_indent(text: str) -> int:
    # The first nested key's indentation (ruamel guesses only the sequences' style).
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        if stripped and stripped != line and not stripped.startswith(("-", "#")):
            return len(line) - len(stripped)
    return 2


def is_enabled(env: Mapping[str, str]) -> bool:
    """Our plugin is in `plugins.enabled` (and not in `plugins.disabled`) of config.yaml."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        document: Any = YAML(typ="safe").load(read_text(config_path(env)) or "")
    except (YAMLError, InvalidRecord):
        return False
    plugins = document.get("plugins") if isinstance(document, dict) else None
    if not isinstance(plugins, dict):
        return False
    enabled = plugins.get("enabled")
    disabled = plugins.get("disabled")
    return (
        isinstance(enabled, list)
        and PLUGIN_NAME in enabled
        and not (isinstance(disabled, list) and PLUGIN_NAME in disabled)
    )


def project_plugins_enabled(env: Mapping[str, str]) -> bool:
    """Hermes would load project plugins: `HERMES_ENABLE_PROJECT_PLUGINS` is truthy in the
    environment or in `$HERMES_HOME/.env`, which Hermes loads at start-up."""
    truthy = ("1", "true", "yes", "on")
    if env.get(PROJECT_PLUGINS_ENV, "").strip().lower() in truthy:
        return True
    try:
        text = read_text(hermes_home(env) / ".env") or ""
    except InvalidRecord:
        return False
    for line in text.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        if name.strip() == PROJECT_PLUGINS_ENV:
            return value.strip().strip("'\"").lower() in truthy
    return False
