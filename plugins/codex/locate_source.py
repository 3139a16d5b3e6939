"""Where the Codex plugin's set-up finds the package's source: the marketplace it came from.

    python3 locate_source.py PLUGIN_ROOT

Codex copies the plugin's own folder (plugins/codex of this repository) into
`$CODEX_HOME/plugins/cache/<marketplace>/<plugin>/<version>/` and leaves its links out, so
the source is not in it. The marketplace is: `codex plugin marketplace add` records it in
`$CODEX_HOME/config.toml` as `[marketplaces.<name>]`, a local one by its folder
(`source_type = "local"`, `source = "<folder>"`), a Git one as cloned into
`$CODEX_HOME/.tmp/marketplaces/<name>/` (checked with Codex 0.171). Standard library
only: nothing of ours is installed yet.

Prints that folder (exit 0), or one line of JSON `{"systemMessage": …}` saying why it
cannot, for the person in the session (exit 1).
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

SOURCE_FILES = ("pyproject.toml", "active_memory", "plugins/bootstrap.py")


class NotFound(Exception):
    """The source cannot be found; the message says why and what to do."""


def installed_identity(plugin_root: Path) -> tuple[Path, str]:
    """(CODEX_HOME, marketplace name) of a plugin folder Codex installed."""
    version = plugin_root.resolve()
    marketplace = version.parent.parent
    cache = marketplace.parent
    if cache.name != "cache" or cache.parent.name != "plugins":
        raise NotFound(
            f"{plugin_root} is not a plugin Codex installed; add it with `codex plugin "
            "marketplace add <clone>` and `codex plugin add active-memory@active-memory`"
        )
    return cache.parent.parent, marketplace.name


def marketplace_root(codex_home: Path, name: str) -> Path:
    """The folder of the marketplace `name` as `config.toml` records it."""
    config = codex_home / "config.toml"
    try:
        document = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise NotFound(f"cannot read {config}: {exc}") from None
    marketplaces = document.get("marketplaces")
    entry = marketplaces.get(name) if isinstance(marketplaces, dict) else None
    if not isinstance(entry, dict):
        raise NotFound(
            f"{config} has no [marketplaces.{name}]: add the marketplace again "
            "(codex plugin marketplace add <clone or OWNER/REPO>)"
        )
    kind, source = entry.get("source_type"), entry.get("source")
    if kind == "local" and isinstance(source, str) and source:
        return Path(source)
    if kind == "git":
        return codex_home / ".tmp" / "marketplaces" / name
    raise NotFound(f"[marketplaces.{name}] of {config} has an unknown source ({kind!r})")


def locate(plugin_root: Path) -> Path:
    """The folder holding the package's source for the plugin at `plugin_root`."""
    codex_home, name = installed_identity(plugin_root)
    root = marketplace_root(codex_home, name)
    missing = [part for part in SOURCE_FILES if not (root / part).exists()]
    if missing:
        raise NotFound(
            f"the marketplace {name} ({root}) holds no Active Memory source "
            f"({', '.join(missing)} missing); add it again from a clone of the repository"
        )
    return root


def main(argv: list[str]) -> int:
    """The command line; see the module docstring."""
    if len(argv) != 1:
        print("usage: locate_source.py PLUGIN_ROOT", file=sys.stderr)
        return 2
    try:
        print(locate(Path(argv[0])))
    except NotFound as exc:
        text = f"Active Memory cannot be set up: {exc}."
        print(json.dumps({"systemMessage": text}))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
