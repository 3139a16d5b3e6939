"""The Claude Code plugin in this repository, rendered from the installers' own rules.

`claude plugin marketplace add <this repository or a clone>` then `claude plugin install
active-memory` installs what `hook install claude --mcp` and `skill install claude` would
write, as one plugin (docs/plugins.md): the same hook events, matchers and timeouts
(claude.py), the MCP server, and the init skill. The files are committed (a marketplace
is read from a checkout, not built); `tests/test_claude_plugin_files.py` fails when they
drift from what this module renders, and

    python -m active_memory.harness_plugins.claude [ROOT]

writes them again. Commands run through the plugin's launchers in
`plugins/claude-code/bin/`, which set the package up in the plugin's data folder on
first use (plugins/bootstrap.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from active_memory import __version__
from active_memory.harness_plugins.identity import DESCRIPTION, MARKETPLACE, SETUP_TIMEOUT_SECONDS
from active_memory.harness_plugins.identity import NAME as PLUGIN
from active_memory.hooks.installers import claude

ROOT_VARIABLE = "${CLAUDE_PLUGIN_ROOT}"
DATA_VARIABLE = "${CLAUDE_PLUGIN_DATA}"
LAUNCHERS = "plugins/claude-code/bin"
HOOK_LAUNCHER = f"{ROOT_VARIABLE}/{LAUNCHERS}/active-memory-hook"
SETUP_LAUNCHER = f"{ROOT_VARIABLE}/{LAUNCHERS}/active-memory-setup"
COMMAND_LAUNCHER = f"{ROOT_VARIABLE}/{LAUNCHERS}/active-memory"
SETUP_TIMEOUT = SETUP_TIMEOUT_SECONDS
"""Seconds Claude Code waits for the first set-up."""

HOOKS_FILE = "plugins/claude-code/hooks.json"
SKILLS_FOLDER = "plugins/claude-code/skills"


def _handler(arguments: list[str], timeout: int) -> dict[str, Any]:
    # Exec form: Claude Code substitutes the variables per argument and runs no shell, so
    # a plugin folder with a space or a quote in its path still works.
    return {"type": "command", "command": HOOK_LAUNCHER, "args": arguments, "timeout": timeout}


def hooks() -> dict[str, Any]:
    """`hooks.json`: the events `hook install claude` registers, plus the set-up."""
    events: dict[str, list[dict[str, Any]]] = {}

    def add(event: str, matcher: str | None, handler: dict[str, Any]) -> None:
        group: dict[str, Any] = {"hooks": [handler]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        events.setdefault(event, []).append(group)

    setup = {"type": "command", "command": SETUP_LAUNCHER, "args": [], "timeout": SETUP_TIMEOUT}
    add("SessionStart", None, setup)
    add("PreToolUse", claude.MATCHER, _handler(["claude"], claude.COMMAND_TIMEOUT))
    for event, matcher in claude.CONTEXT_EVENTS:
        add(event, matcher, _handler(["context", "claude"], claude.CONTEXT_TIMEOUT))
    add(
        claude.SESSION_END,
        None,
        _handler(["session-end", "claude"], claude.SESSION_END_TIMEOUT),
    )
    return {"description": "Active Memory: set-up, cards, contexts, session end", "hooks": events}


def plugin_manifest() -> dict[str, Any]:
    """`.claude-plugin/plugin.json`."""
    return {
        "name": PLUGIN,
        "version": __version__,
        "description": DESCRIPTION,
        "author": {"name": "Active Memory maintainers"},
        "license": "MIT",
        "keywords": ["memory", "lessons", "hooks", "postmortem"],
        "hooks": f"./{HOOKS_FILE}",
        "skills": f"./{SKILLS_FOLDER}/",
        "mcpServers": {PLUGIN: {"command": COMMAND_LAUNCHER, "args": ["mcp"]}},
    }


def marketplace_manifest() -> dict[str, Any]:
    """`.claude-plugin/marketplace.json`: this repository is its own marketplace."""
    return {
        "name": MARKETPLACE,
        "owner": {"name": "Active Memory maintainers"},
        "metadata": {"description": "Active Memory for Claude Code"},
        "plugins": [
            {
                "name": PLUGIN,
                "source": "./",
                "description": DESCRIPTION,
                "version": __version__,
            }
        ],
    }


def skill() -> str:
    """The init skill's `SKILL.md`, naming the command in the plugin's data folder
    (Claude Code substitutes the variable when it loads a plugin's skill)."""
    from active_memory.skills import render_skill

    return render_skill(f"{DATA_VARIABLE}/bin/active-memory")


def files() -> dict[str, str]:
    """Every file of the plugin, by its path from the repository root."""

    def as_json(value: Any) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False) + "\n"

    from active_memory.skills import SKILL_NAME

    return {
        ".claude-plugin/plugin.json": as_json(plugin_manifest()),
        ".claude-plugin/marketplace.json": as_json(marketplace_manifest()),
        HOOKS_FILE: as_json(hooks()),
        f"{SKILLS_FOLDER}/{SKILL_NAME}/SKILL.md": skill(),
    }


def write(root: Path) -> list[Path]:
    """Write every file under `root` (the repository); the paths that changed."""
    changed = []
    for relative, text in files().items():
        path = root / relative
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        changed.append(path)
    return changed


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    for written in write(target):
        print(written)
