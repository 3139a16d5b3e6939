"""The Copilot CLI plugin in `plugins/copilot/` and this repository as a Copilot CLI
marketplace (`.github/plugin/marketplace.json`), rendered from the installers' own rules.

`copilot plugin marketplace add <this repository or a clone>` then `copilot plugin
install active-memory@active-memory` installs what `hook install copilot` writes (the
same `preToolUse` and `sessionEnd` hooks and timeouts), our MCP server and the init skill,
as one plugin (docs/plugins.md). Facts checked with the 1.0.102 binary:

- a marketplace's catalogue is the first of `.plugin/marketplace.json`,
  `.github/plugin/marketplace.json`, `.claude-plugin/marketplace.json` at its root (so
  Copilot CLI reads ours, not the Claude Code one); a plugin is a folder with
  `plugin.json`;
- from a local marketplace the plugin is used where it is ("loaded live"); from a Git one
  its folder is copied into `~/.copilot/installed-plugins/<marketplace>/<plugin>/`,
  following links: the links in the folder to the package's source bring it along;
  installing a folder or a URL directly still works but is deprecated;
- its hooks (`hooks.json`, Copilot CLI's shape) run without a trust step, with
  `COPILOT_PLUGIN_ROOT` and `COPILOT_PLUGIN_DATA`
  (`~/.copilot/plugin-data/<marketplace>/<plugin>/`) in their environment, and Copilot
  CLI waits for `sessionStart` hooks before its first model request;
- its MCP servers (`.mcp.json`, `${PLUGIN_ROOT}` substituted) start in the plugin's
  folder whatever `cwd` says, learn the session from `COPILOT_AGENT_SESSION_ID` and get
  no data folder and no MCP roots: the launcher reads the session's folder from
  `~/.copilot/session-state/<session>/workspace.yaml`.

    python -m active_memory.harness_plugins [ROOT]

writes the files again; tests/test_harness_plugin_files.py fails when they drift.
"""

from __future__ import annotations

from typing import Any

from active_memory.harness_plugins.identity import (
    AUTHOR,
    DESCRIPTION,
    KEYWORDS,
    LICENSE,
    MARKETPLACE,
    NAME,
    SETUP_TIMEOUT_SECONDS,
    SOURCE_LINKS,
    VERSION,
)
from active_memory.harness_plugins.launchers import HOOK, SETUP, Layout, launchers, say
from active_memory.harness_plugins.rendering import Entry, as_json, link, text
from active_memory.hooks.installers import copilot

FOLDER = "plugins/copilot"
MARKETPLACE_FILE = ".github/plugin/marketplace.json"
HOME = "${COPILOT_HOME:-$HOME/.copilot}"
DATA = f"{HOME}/plugin-data/{MARKETPLACE}/{NAME}"
"""The data folder of the plugin installed from this marketplace (a shell word's inside)."""

_DATA = f"""data="${{COPILOT_PLUGIN_DATA:-}}"
if [ -z "$data" ]; then
    # Copilot CLI tells the hooks their data folder, not the MCP servers:
    # <home>/plugin-data/<marketplace>/<plugin>, the plugin being used from
    # <home>/installed-plugins/<marketplace>/<plugin> (a Git marketplace) or live from a
    # local marketplace's folder (this repository's marketplace, {MARKETPLACE}).
    marketplace_folder=$(dirname -- "$root")
    installed=$(dirname -- "$marketplace_folder")
    case "$installed" in
    */installed-plugins)
        marketplace=$(basename -- "$marketplace_folder")
        data="${{installed%/installed-plugins}}/plugin-data/$marketplace/$(basename -- "$root")"
        ;;
    *)
        data="{DATA}"
        ;;
    esac
fi
"""
_NO_SOURCE = say(
    "Active Memory cannot be set up: this plugin folder holds no Active Memory source. "
    "Install it from a marketplace: copilot plugin marketplace add <clone or OWNER/REPO>, "
    "then copilot plugin install active-memory@active-memory"
)
_SOURCE = f"""source="$root"
bootstrap="$root/bootstrap.py"
if [ ! -f "$bootstrap" ] || [ ! -d "$source/active_memory" ]; then
    {_NO_SOURCE}
    exit 0
fi
"""
_SESSION_FOLDER = f"""session="${{COPILOT_AGENT_SESSION_ID:-}}"
if [ "$#" -eq 1 ] && [ "$1" = "mcp" ] && [ -n "$session" ]; then
    # Copilot CLI starts a plugin's MCP server in the plugin's folder; the session's own
    # folder (its repository) is in the session's workspace.yaml.
    state="{HOME}/session-state/$session/workspace.yaml"
    folder=$(sed -n 's/^cwd: //p' "$state" 2>/dev/null | head -n 1)
    case "$folder" in
    /*)
        if [ -d "$folder" ]; then
            exec "$command" mcp --cwd "$folder"
        fi
        ;;
    esac
fi
"""

LAYOUT = Layout(
    harness="copilot",
    title="Copilot CLI plugin",
    hook_data='data="${COPILOT_PLUGIN_DATA:-}"',
    data=_DATA,
    source=_SOURCE,
    before_command=_SESSION_FOLDER,
)


def _handler(launcher: str, arguments: str, timeout: int) -> dict[str, Any]:
    # The shell expands `$COPILOT_PLUGIN_ROOT` inside the quotes.
    command = f'"$COPILOT_PLUGIN_ROOT/bin/{launcher}"' + (f" {arguments}" if arguments else "")
    return {"type": "command", "bash": command, "timeoutSec": timeout}


def hooks() -> dict[str, Any]:
    """`hooks.json`: the set-up, then every hook `hook install copilot` writes (the same
    events, timeouts and arguments; a context event names itself on the command line)."""
    handlers = [
        (copilot.EVENT, copilot.handler(None)),
        *((event, copilot.context_handler(None, event)) for event in copilot.CONTEXT_EVENTS),
        (copilot.SESSION_END, copilot.session_end_handler(None)),
    ]
    events: dict[str, list[dict[str, Any]]] = {
        "sessionStart": [_handler(SETUP, "", SETUP_TIMEOUT_SECONDS)]
    }
    for event, handler in handlers:
        arguments = handler["bash"].split(" ", 1)[1]
        events.setdefault(event, []).append(_handler(HOOK, arguments, handler["timeoutSec"]))
    return {"version": 1, "hooks": events}


def mcp() -> dict[str, Any]:
    """`.mcp.json`: our server, every tool offered."""
    return {
        "mcpServers": {
            NAME: {
                "type": "local",
                "command": "${PLUGIN_ROOT}/bin/active-memory",
                "args": ["mcp"],
                "tools": ["*"],
            }
        }
    }


def manifest() -> dict[str, Any]:
    """`plugin.json`."""
    return {
        "name": NAME,
        "version": VERSION,
        "description": DESCRIPTION,
        "author": AUTHOR,
        "license": LICENSE,
        "keywords": KEYWORDS,
        "skills": "skills/",
        "hooks": "hooks.json",
        "mcpServers": ".mcp.json",
    }


def marketplace() -> dict[str, Any]:
    """`.github/plugin/marketplace.json`: this repository as a Copilot CLI marketplace."""
    return {
        "name": MARKETPLACE,
        "owner": AUTHOR,
        "metadata": {"description": "Active Memory for GitHub Copilot CLI"},
        "plugins": [
            {
                "name": NAME,
                "source": f"./{FOLDER}",
                "description": DESCRIPTION,
                "version": VERSION,
            }
        ],
    }


def skill() -> str:
    """The init skill, naming the command the set-up puts in the data folder."""
    from active_memory.skills import render_skill

    return render_skill(shell_word=f'"{DATA}/bin/active-memory"')


def entries() -> dict[str, Entry]:
    """Every file of the plugin and the marketplace, by path from the repository root."""
    from active_memory.skills import SKILL_NAME

    files: dict[str, Entry] = {
        MARKETPLACE_FILE: as_json(marketplace()),
        f"{FOLDER}/plugin.json": as_json(manifest()),
        f"{FOLDER}/hooks.json": as_json(hooks()),
        f"{FOLDER}/.mcp.json": as_json(mcp()),
        f"{FOLDER}/skills/{SKILL_NAME}/SKILL.md": text(skill()),
    }
    for relative, script in launchers(LAYOUT).items():
        files[f"{FOLDER}/{relative}"] = text(script, executable=True)
    for name, target in SOURCE_LINKS.items():
        files[f"{FOLDER}/{name}"] = link(target)
    return files
