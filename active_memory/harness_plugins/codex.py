"""The Codex plugin in `plugins/codex/` and this repository as a Codex marketplace
(`.agents/plugins/marketplace.json`), rendered from the installers' own rules.

`codex plugin marketplace add <this repository or a clone>` then `codex plugin add
active-memory@active-memory` installs what `hook install codex --mcp` and `skill install
codex` write (the same PreToolUse and SessionEnd hooks and timeouts), as one plugin
(docs/plugins.md). Facts read from Codex's sources and checked with the 0.171 binary:

- a marketplace is `<root>/.agents/plugins/marketplace.json`; a plugin's source must be a
  folder below the root (`./` is refused), and `plugin add` copies that folder alone into
  `$CODEX_HOME/plugins/cache/<marketplace>/<plugin>/<version>/`, leaving links out. The
  marketplace itself stays where it was added from (a local folder) or is cloned into
  `$CODEX_HOME/.tmp/marketplaces/<name>/` (Git), as `[marketplaces.<name>]` of
  `config.toml` records: there the set-up finds the package's source
  (plugins/codex/locate_source.py);
- the plugin's hooks (`hooks/hooks.json`, Codex's hook shape) run with `PLUGIN_ROOT`
  and `PLUGIN_DATA` (`$CODEX_HOME/plugins/data/<plugin>-<marketplace>/`) in their
  environment, and only once trusted: `[hooks.state."<plugin>@<marketplace>:hooks/
  hooks.json:<event>:<group>:<handler>"]` with the hook's hash, which `plugin add` does
  not write. The set-up writes it (codex_hook_trust.py);
- its MCP servers (`.mcp.json`) start in the session's folder with a bare environment
  (HOME, PATH, LANG and the `env_vars` named); their command is not given the plugin's
  folder, so ours names the cache path of this version;
- `skills/` are its skills.

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
    MCP_ENV,
    NAME,
    SETUP_TIMEOUT_SECONDS,
    VERSION,
)
from active_memory.harness_plugins.launchers import HOOK, SETUP, Layout, launchers
from active_memory.harness_plugins.rendering import Entry, as_json, text
from active_memory.hooks.installers import codex

FOLDER = "plugins/codex"
MARKETPLACE_FILE = ".agents/plugins/marketplace.json"
HOME = "${CODEX_HOME:-$HOME/.codex}"
DATA = f"{HOME}/plugins/data/{NAME}-{MARKETPLACE}"
"""The plugin's data folder as a shell word's inside (what Codex names it)."""
CACHED = f"{HOME}/plugins/cache/{MARKETPLACE}/{NAME}/{VERSION}"
"""Where `codex plugin add` puts this version of the plugin."""
MCP_STARTUP_TIMEOUT_SEC = 30

_DATA = """data="${PLUGIN_DATA:-}"
if [ -z "$data" ]; then
    # Codex runs the plugin from $CODEX_HOME/plugins/cache/<marketplace>/<plugin>/<version>
    # and names its data folder $CODEX_HOME/plugins/data/<plugin>-<marketplace>; it tells
    # the hooks (PLUGIN_DATA), not the MCP servers.
    plugin_folder=$(dirname -- "$root")
    marketplace_folder=$(dirname -- "$plugin_folder")
    cache=$(dirname -- "$marketplace_folder")
    case "$cache" in
    */plugins/cache)
        plugin=$(basename -- "$plugin_folder")
        data="${cache%/cache}/data/$plugin-$(basename -- "$marketplace_folder")"
        ;;
    esac
fi
if [ -z "$data" ]; then
    echo "active-memory: $root is not a plugin Codex installed" \\
        "(codex plugin add active-memory@active-memory)" >&2
    exit 2
fi
"""
_SOURCE = """if ! source=$("$python" "$root/locate_source.py" "$root"); then
    echo "$source"
    exit 0
fi
bootstrap="$source/plugins/bootstrap.py"
"""
TRUST_MODULE = "active_memory.harness_plugins.codex_hook_trust"
_TRUST = f"""# Codex runs a plugin's hooks only once trusted, and `codex plugin add` does not trust
# them: the set-up does, once per version of our hooks (docs/plugins.md).
trust="$data/current/bin/python"
if [ -x "$trust" ] && ! [ "$data/codex-hook-trust.json" -nt "$root/hooks/hooks.json" ]; then
    "$trust" -m {TRUST_MODULE} "$root" "$data" >/dev/null 2>&1
fi
"""

LAYOUT = Layout(
    harness="codex",
    title="Codex plugin",
    hook_data='data="${PLUGIN_DATA:-}"',
    data=_DATA,
    source=_SOURCE,
    # The worker that builds runs the trust too: Codex stops the MCP server whose launcher
    # started the first set-up when `codex exec` ends, and the build goes on without it.
    setup_options=(
        f'--after-build {TRUST_MODULE} --after-build-arg "$root" --after-build-arg "$data"'
    ),
    after_setup=_TRUST,
    before_command=_TRUST,
)


def _handler(launcher: str, arguments: str, timeout: int) -> dict[str, Any]:
    # `$PLUGIN_ROOT` (no braces) is left to the shell, which expands it inside the quotes.
    command = f'"$PLUGIN_ROOT/bin/{launcher}"' + (f" {arguments}" if arguments else "")
    return {"type": "command", "command": command, "timeout": timeout}


def hooks() -> dict[str, Any]:
    """`hooks/hooks.json`: the set-up, then every hook `hook install codex` writes (the
    same events, matchers, timeouts and arguments)."""
    events: dict[str, list[dict[str, Any]]] = {
        "SessionStart": [{"hooks": [_handler(SETUP, "", SETUP_TIMEOUT_SECONDS)]}]
    }
    for entry in codex.entries(None):
        arguments = entry.handler["command"].split(" ", 1)[1]
        group: dict[str, Any] = {"hooks": [_handler(HOOK, arguments, entry.handler["timeout"])]}
        if entry.matcher is not None:
            group = {"matcher": entry.matcher, **group}
        events.setdefault(entry.event, []).append(group)
    return {"hooks": events}


def mcp() -> dict[str, Any]:
    """`.mcp.json`: our server, started in the session's folder (its repository)."""
    start = f'exec "{CACHED}/bin/active-memory" mcp'
    return {
        "mcpServers": {
            NAME: {
                "command": "sh",
                "args": ["-c", start],
                "env_vars": ["CODEX_HOME", *MCP_ENV],
                "startup_timeout_sec": MCP_STARTUP_TIMEOUT_SEC,
            }
        }
    }


def manifest() -> dict[str, Any]:
    """`.codex-plugin/plugin.json`."""
    return {
        "name": NAME,
        "version": VERSION,
        "description": DESCRIPTION,
        "author": AUTHOR,
        "license": LICENSE,
        "keywords": KEYWORDS,
        "skills": "./skills/",
        "hooks": "./hooks/hooks.json",
        "mcpServers": "./.mcp.json",
        "interface": {"displayName": "Active Memory", "shortDescription": DESCRIPTION},
    }


def marketplace() -> dict[str, Any]:
    """`.agents/plugins/marketplace.json`: this repository as a Codex marketplace."""
    return {
        "name": MARKETPLACE,
        "interface": {"displayName": "Active Memory"},
        "plugins": [{"name": NAME, "source": {"source": "local", "path": f"./{FOLDER}"}}],
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
        f"{FOLDER}/.codex-plugin/plugin.json": as_json(manifest()),
        f"{FOLDER}/hooks/hooks.json": as_json(hooks()),
        f"{FOLDER}/.mcp.json": as_json(mcp()),
        f"{FOLDER}/skills/{SKILL_NAME}/SKILL.md": text(skill()),
    }
    for relative, script in launchers(LAYOUT).items():
        files[f"{FOLDER}/{relative}"] = text(script, executable=True)
    return files
