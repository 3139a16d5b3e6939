"""The Gemini CLI extension in `plugins/gemini/`, rendered from the installers' own rules.

`gemini extensions install <clone>/plugins/gemini --consent` (or `gemini extensions link`)
installs what `hook install gemini` writes (the same `AfterTool` matcher and timeout, the
`SessionEnd` hook), our MCP server and the init skill, as one extension (docs/plugins.md).
Facts read from Gemini CLI 0.61's bundle and checked with the binary:

- an extension is a folder with `gemini-extension.json`; `install` copies it into
  `~/.gemini/extensions/<name>/` (Node's `fs.cp`: a relative link in it becomes a link to
  the absolute path it pointed to), `link` uses it where it is. A Git URL is cloned and
  must hold the manifest at its root, which here would mean a `hooks/hooks.json` at the
  repository's root, which Claude Code loads too: so the extension installs from a clone's
  folder only;
- its hooks come only from `<extension>/hooks/hooks.json` (`{"hooks": {event: groups}}`,
  Gemini CLI's hook shape, timeouts in milliseconds); every string of that file and of the
  manifest is hydrated: `${extensionPath}` becomes the extension's folder. Extension hooks
  run in any folder (project hooks need a trusted one) while `hooksConfig.enabled` (on by
  default), and Gemini CLI waits for `SessionStart` hooks before its first model request;
- `skills/<name>/SKILL.md` are its skills (their text hydrated too); the MCP servers of
  the manifest start in the session's folder;
- it gives an extension no data folder: ours is `~/.gemini/active-memory/`
  (`$GEMINI_CLI_HOME` replaces the home folder, as for Gemini CLI itself).

    python -m active_memory.harness_plugins [ROOT]

writes the files again; tests/test_harness_plugin_files.py fails when they drift.
"""

from __future__ import annotations

from typing import Any

from active_memory.harness_plugins.identity import (
    DESCRIPTION,
    NAME,
    SETUP_TIMEOUT_SECONDS,
    SOURCE_LINKS,
    VERSION,
)
from active_memory.harness_plugins.launchers import HOOK, SETUP, Layout, launchers, say
from active_memory.harness_plugins.rendering import Entry, as_json, link, text
from active_memory.hooks.installers import gemini

FOLDER = "plugins/gemini"
ROOT_ENV = "ACTIVE_MEMORY_EXTENSION"
"""The variable our hook handlers get the extension's folder in (Gemini CLI hydrates
`${extensionPath}` in a handler's `env`): the shell expands it inside quotes, so a folder
whose path holds a quote or a `$` still works."""

_DATA = 'data="${GEMINI_CLI_HOME:-$HOME}/.gemini/active-memory"'
_GONE = say(
    "Active Memory cannot be set up: the clone this extension was installed from is gone. "
    "Install it again from a clone: gemini extensions install <clone>/plugins/gemini --consent"
)
_SOURCE = f"""source="$root"
bootstrap="$root/bootstrap.py"
if [ ! -f "$bootstrap" ] || [ ! -d "$source/active_memory" ]; then
    {_GONE}
    exit 0
fi
"""

LAYOUT = Layout(
    harness="gemini",
    title="Gemini CLI extension",
    hook_data=_DATA,
    data=_DATA,
    source=_SOURCE,
)


def _handler(name: str, launcher: str, arguments: str, timeout_ms: int) -> dict[str, Any]:
    command = f'"${ROOT_ENV}/bin/{launcher}"' + (f" {arguments}" if arguments else "")
    return {
        "name": name,
        "type": "command",
        "command": command,
        "timeout": timeout_ms,
        "env": {ROOT_ENV: "${extensionPath}"},
    }


def hooks() -> dict[str, Any]:
    """`hooks/hooks.json`: the set-up, then every hook `hook install gemini` writes (the
    same events, matchers, names, timeouts and arguments)."""
    setup = _handler("active-memory-setup", SETUP, "", SETUP_TIMEOUT_SECONDS * 1000)
    events: dict[str, list[dict[str, Any]]] = {"SessionStart": [{"hooks": [setup]}]}
    for entry in gemini.entries(None):
        arguments = entry.handler["command"].split(" ", 1)[1]
        handler = _handler(entry.handler["name"], HOOK, arguments, entry.handler["timeout"])
        group: dict[str, Any] = {"hooks": [handler]}
        if entry.matcher is not None:
            group = {"matcher": entry.matcher, **group}
        events.setdefault(entry.event, []).append(group)
    return {"hooks": events}


def manifest() -> dict[str, Any]:
    """`gemini-extension.json`: the extension and its MCP server."""
    return {
        "name": NAME,
        "version": VERSION,
        "description": DESCRIPTION,
        "mcpServers": {
            NAME: {"command": "${extensionPath}${/}bin${/}active-memory", "args": ["mcp"]}
        },
    }


def skill() -> str:
    """The init skill, naming the extension's command (Gemini CLI hydrates the path)."""
    from active_memory.skills import render_skill

    return render_skill("${extensionPath}/bin/active-memory")


def entries() -> dict[str, Entry]:
    """Every file of the extension, by its path from the repository root."""
    from active_memory.skills import SKILL_NAME

    files: dict[str, Entry] = {
        f"{FOLDER}/gemini-extension.json": as_json(manifest()),
        f"{FOLDER}/hooks/hooks.json": as_json(hooks()),
        f"{FOLDER}/skills/{SKILL_NAME}/SKILL.md": text(skill()),
    }
    for relative, script in launchers(LAYOUT).items():
        files[f"{FOLDER}/{relative}"] = text(script, executable=True)
    for name, target in SOURCE_LINKS.items():
        files[f"{FOLDER}/{name}"] = link(target)
    return files
