"""The Codex plugin's hooks, trusted by its set-up (Codex 0.171 leaves them untrusted).

Codex runs a hook only when `$CODEX_HOME/config.toml` holds its trust entry
(hooks/installers/codex_trust.py); for a plugin's hooks the key is
`<plugin>@<marketplace>:hooks/hooks.json:<event>:<group>:<handler>`. `codex plugin add`
writes none (checked with 0.171: the plugin's hooks are listed, untrusted, and never run),
so `codex plugin add` alone would install a plugin whose hooks never run. The set-up
(plugins/codex/bin/active-memory-setup, first started by our MCP server, which Codex
starts without a trust step) writes the entries for exactly the hooks of the installed
plugin folder, with their current hashes: the same user-level write newer Codex releases
make themselves when a plugin is installed.

Codex binds a plugin hook's trust to the installed plugin's files the first time it sees
it trusted (a fingerprint in `$CODEX_HOME/.hook-trust/`): after an update brings other
files, Codex lists the hooks as modified until the person trusts them again in `/hooks`,
whatever this writes. That check is Codex's; nothing here touches it.

It writes them once per version of our hooks: `DATA/codex-hook-trust.json` keeps what it
trusted, and while the installed hooks are the same, nothing is written again, so a
person who then distrusts or disables them in Codex (`/hooks`) is not overruled. An entry
the person disabled (`enabled = false`) is never touched; entries of ours for hooks that
no longer exist are removed.

    python -m active_memory.harness_plugins.codex_hook_trust PLUGIN_ROOT DATA
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import tomlkit

from active_memory.atomic_files import write_atomically
from active_memory.errors import InvalidRecord
from active_memory.hooks.installers import codex_trust
from active_memory.hooks.installers.files import parse_json_object, read_text

HOOKS_FILE = "hooks/hooks.json"
RECORD = "codex-hook-trust.json"


def plugin_identity(plugin_root: Path) -> tuple[Path, str]:
    """(CODEX_HOME, `<plugin>@<marketplace>`) of a plugin folder Codex installed
    (`$CODEX_HOME/plugins/cache/<marketplace>/<plugin>/<version>`)."""
    version = plugin_root.resolve()
    plugin, marketplace = version.parent, version.parent.parent
    cache = marketplace.parent
    if cache.name != "cache" or cache.parent.name != "plugins":
        raise InvalidRecord(str(plugin_root), "not a plugin folder Codex installed")
    return cache.parent.parent, f"{plugin.name}@{marketplace.name}"


def wanted(plugin_root: Path) -> dict[str, str]:
    """{trust key: hash} for every hook of the installed plugin."""
    path = plugin_root / HOOKS_FILE
    document = parse_json_object(path, read_text(path))
    _, plugin_id = plugin_identity(plugin_root)
    return codex_trust.handler_hashes(document, f"{plugin_id}:{HOOKS_FILE}")


def _recorded(data: Path) -> dict[str, str]:
    try:
        value = json.loads((data / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def trust(plugin_root: Path, data: Path) -> int:
    """Trust the plugin's hooks unless they were trusted as they are now; how many trust
    entries were written or removed."""
    codex_home, _ = plugin_identity(plugin_root)
    hooks = wanted(plugin_root)
    before = _recorded(data)
    if hooks == before:
        (data / RECORD).touch()  # the launchers compare its time with the hooks file's
        return 0
    config = codex_home / "config.toml"
    _, document = codex_trust.read_config(config)
    forget = [key for key, value in before.items() if key not in hooks]
    changes = codex_trust.set_trusted(document, hooks, forget)
    if changes:
        write_atomically(config, tomlkit.dumps(document))
    write_atomically(data / RECORD, json.dumps(hooks, indent=2, sort_keys=True) + "\n")
    return len(hooks) + len(forget) if changes else 0


def main(argv: list[str] | None = None) -> int:
    """The command line; see the module docstring. Exit 0, 1 when it could not (said on
    stderr and in the set-up's log), 2 for usage errors."""
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 2:
        print("usage: python -m active_memory.harness_plugins.codex_hook_trust PLUGIN_ROOT DATA",
              file=sys.stderr)  # fmt: skip
        return 2
    plugin_root, data = Path(arguments[0]), Path(arguments[1])
    try:
        written = trust(plugin_root, data)
    except (InvalidRecord, OSError) as exc:
        print(f"codex hook trust: {exc}", file=sys.stderr)
        return 1
    if written:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        line = f"{stamp} trusted the plugin's hooks in Codex ({written} entries)\n"
        with open(data / "bootstrap.log", "a", encoding="utf-8") as log:
            log.write(line)
        print(line.strip(), file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover - run by the plugin's launchers
    sys.exit(main())
