"""Installers: merge our hook into a harness's own configuration, and take it out again.

`plan(harness, ...)` computes the whole change first (a `FileChange`: text before and
after) without writing; the caller shows it as a diff (`--dry-run`) or applies it
atomically. Installing twice changes nothing; uninstalling removes only what is ours.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from active_memory.errors import UsageError
from active_memory.hooks.installers import claude, codex, opencode
from active_memory.hooks.installers.files import FileChange as FileChange
from active_memory.hooks.paths import DEFAULT_PORT

Harness = Literal["claude", "codex", "opencode"]
HARNESSES: tuple[Harness, ...] = ("claude", "codex", "opencode")
Where = Literal["project", "user"]


def find_project_root(start: Path) -> Path:
    """The checkout holding `start` (nearest folder with `.git`), else `start` itself."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def target_path(
    harness: Harness, where: Where, cwd: Path, env: Mapping[str, str] | None = None
) -> Path:
    """The file the installer edits for `harness` at project or user level."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    if harness == "claude":
        base = find_project_root(cwd) if where == "project" else home
        return claude.settings_path(base)
    if harness == "codex":
        if where == "project":
            return codex.hooks_path(find_project_root(cwd) / ".codex")
        return codex.hooks_path(
            Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        )
    if where == "project":
        return opencode.plugin_path(find_project_root(cwd) / ".opencode" / "plugins")
    config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return opencode.plugin_path(config / "opencode" / "plugins")


def plan(
    harness: Harness,
    path: Path,
    *,
    install: bool,
    http: bool = False,
    port: int = DEFAULT_PORT,
) -> FileChange:
    """The change to `path` that installs (or uninstalls) our hook; nothing is written."""
    if http and harness != "claude":
        raise UsageError(
            f"--http: {harness} has no HTTP hooks; its command hook already asks the "
            "recall server when one runs (`active-memory serve`)"
        )
    if harness == "claude":
        return claude.plan(path, install, http, port)
    if harness == "codex":
        return codex.plan(path, install)
    return opencode.plan(path, install)
