"""Installers: merge our hooks into a harness's own configuration, and take them out again.

`plan(harness, ...)` computes the whole change first (a `Plan`: one `FileChange`, text
before and after, per file) without writing; the caller shows it as a diff (`--dry-run`)
or applies it, file by file, atomically. Installing twice changes nothing; uninstalling
removes only what is ours. Codex's plan also holds its `config.toml` trust change.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from active_memory.errors import UsageError
from active_memory.hooks.installers import claude, codex, copilot, gemini, hermes, opencode, pi
from active_memory.hooks.installers.files import FileChange as FileChange
from active_memory.hooks.paths import DEFAULT_PORT

Harness = Literal["claude", "codex", "opencode", "pi", "gemini", "copilot", "hermes"]
HARNESSES: tuple[Harness, ...] = (
    "claude", "codex", "opencode", "pi", "gemini", "copilot", "hermes"
)  # fmt: skip
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
        if where == "project":
            return claude.local_settings_path(find_project_root(cwd))
        return claude.settings_path(home)
    if harness == "codex":
        if where == "project":
            return codex.hooks_path(find_project_root(cwd) / ".codex")
        return codex.hooks_path(
            Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        )
    if harness == "gemini":
        base = find_project_root(cwd) if where == "project" else home
        return gemini.settings_path(base)
    if harness == "copilot":
        if where == "project":
            return copilot.hooks_path(find_project_root(cwd) / ".github" / "hooks")
        copilot_home = Path(env["COPILOT_HOME"]) if env.get("COPILOT_HOME") else home / ".copilot"
        return copilot.hooks_path(copilot_home / "hooks")
    if harness == "hermes":
        if where == "project":
            return hermes.plugin_path(find_project_root(cwd) / ".hermes" / "plugins")
        return hermes.plugin_path(hermes.hermes_home(env) / "plugins")
    if harness == "pi":
        if where == "project":
            return pi.extension_path(find_project_root(cwd) / ".pi" / "extensions")
        agent = env.get("PI_CODING_AGENT_DIR")
        return pi.extension_path((Path(agent) if agent else home / ".pi" / "agent") / "extensions")
    if where == "project":
        return opencode.plugin_path(find_project_root(cwd) / ".opencode" / "plugins")
    config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return opencode.plugin_path(config / "opencode" / "plugins")


@dataclass(slots=True)
class Plan:
    """Every file one install or uninstall changes, and what the user should know."""

    changes: list[FileChange]
    notes: list[str] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)
    """Folders of ours that an uninstall leaves empty: removed after the files (with the
    bytecode the harness wrote there), never while anything else is in them."""

    @property
    def changed(self) -> bool:
        """False when applying would leave every file exactly as it is."""
        return any(change.changed for change in self.changes)

    def diff(self) -> str:
        """The unified diffs of every change ("" when nothing changes)."""
        return "".join(change.diff() for change in self.changes)

    def apply(self) -> None:
        """Write each change in order (the hooks file first, then its trust).

        All or nothing: when a later file cannot be written, the files already written
        are put back as they were, so a Codex hook never ends up installed without its
        trust entries (or a user's hook moved without its entry), then the error is raised.
        """
        done: list[FileChange] = []
        current: FileChange | None = None
        try:
            for current in self.changes:
                current.apply()
                done.append(current)
        except BaseException as exc:
            for change in reversed(done):
                FileChange(change.path, change.after, change.before).apply()
            if isinstance(exc, OSError) and exc.filename is None and current is not None:
                raise OSError(exc.errno, exc.strerror, str(current.path)) from exc
            raise
        for folder in self.folders:
            _remove_if_empty(folder)


def _remove_if_empty(folder: Path) -> None:
    # Hermes compiles our plugin into its own __pycache__: that goes with it, nothing else.
    import contextlib

    cache = folder / "__pycache__"
    with contextlib.suppress(OSError):
        for item in cache.glob("__init__.*.pyc"):
            item.unlink()
        cache.rmdir()
    with contextlib.suppress(OSError):
        folder.rmdir()


def plan(
    harness: Harness,
    path: Path,
    *,
    install: bool,
    http: bool = False,
    port: int = DEFAULT_PORT,
    script: Path | None = None,
    env: Mapping[str, str] | None = None,
    trust_project: bool = False,
    where: Where = "project",
    mcp: bool = False,
) -> Plan:
    """The changes that install (or uninstall) our hooks at `path`; nothing is written.

    `script` is the absolute `active-memory-hook` path the commands run (None: the bare
    name, for uninstalling). For Codex, `trust_project` also trusts the project.
    """
    if http and harness != "claude":
        raise UsageError(
            f"--http: {harness} has no HTTP hooks; its command hook already asks the "
            "recall server when one runs (`active-memory serve`)"
        )
    built = _plan_hooks(harness, path, install, http, port, script, env, trust_project, where)
    if not mcp:
        return built
    from active_memory.hooks.installers import mcp as mcp_config

    if harness not in ("claude", "codex"):
        raise UsageError(f"--mcp: {harness} is not supported (claude, codex)")
    command = mcp_config.server_command(script) if install and script is not None else None
    root = find_project_root(path.parent.parent) if where == "project" else path.parent
    built.changes = mcp_config.plan_changes(
        harness, where, root, install, command, built.changes, env
    )
    return built


def _plan_hooks(
    harness: Harness,
    path: Path,
    install: bool,
    http: bool,
    port: int,
    script: Path | None,
    env: Mapping[str, str] | None,
    trust_project: bool,
    where: Where,
) -> Plan:
    if harness == "claude":
        changes = [claude.plan(path, install, http, port, script)]
        if where == "project":
            checkout = path.parent.parent
            # Ours in the committed file (written there by earlier versions) go away.
            legacy = claude.plan(claude.settings_path(checkout), False, http, port, None)
            if legacy.changed:
                changes.append(legacy)
            exclude = claude.git_exclude_change(checkout, path) if install else None
            if exclude is not None:
                changes.append(exclude)
        return Plan(changes)
    if harness == "opencode":
        return Plan([opencode.plan(path, install, script)])
    if harness == "pi":
        return Plan([pi.plan(path, install, script)])
    if harness == "hermes":
        return _hermes_plan(path, install, script, env, where)
    if harness == "gemini":
        return Plan([gemini.plan(path, install, script)])
    if harness == "copilot":
        notes = _copilot_notes(path, install, where, env)
        return Plan([copilot.plan(path, install, script)], notes)
    environment = os.environ if env is None else env
    root = path.parent.parent if where == "project" else None
    hooks, trust = codex.plan_with_trust(
        path,
        install,
        script,
        environment,
        trust_project=root if (install and trust_project and root is not None) else None,
    )
    notes = []
    if install and root is not None and not trust_project:
        from active_memory.hooks.installers import codex_trust

        config = codex_trust.config_path(environment)
        _, document = codex_trust.read_config(config)
        if not codex_trust.project_trusted(document, root):
            notes.append(
                f"Codex reads {root}/.codex/ only once the project is trusted, and it is "
                f"not: start `codex` in {root} once and trust it, or rerun with "
                f"--trust-project, or add to {config}:\n" + codex_trust.project_entry_text(root)
            )
    return Plan([hooks, trust], notes)


def _hermes_plan(
    path: Path, install: bool, script: Path | None, env: Mapping[str, str] | None, where: Where
) -> Plan:
    environment = os.environ if env is None else env
    other = target_path("hermes", "user" if where == "project" else "project", Path.cwd(),
                        environment)  # fmt: skip
    built = Plan(hermes.plan(path, install, script, environment, other if other != path else None))
    if not install:
        built.folders.append(path.parent)
    elif where == "project" and not hermes.project_plugins_enabled(environment):
        built.notes.append(
            f"Hermes loads {path.parent.parent}/ only with {hermes.PROJECT_PLUGINS_ENV}=1 "
            f"in its environment (or in {hermes.hermes_home(environment)}/.env); set it, or "
            "install with --user"
        )
    return built


def _copilot_notes(
    path: Path, install: bool, where: Where, env: Mapping[str, str] | None
) -> list[str]:
    repository = path.parent.parent.parent
    if not install or where != "project" or copilot_trusted(repository, env or os.environ):
        return []
    return [
        f"Copilot CLI runs {repository}/.github/hooks/ only in a trusted folder, and "
        f"{repository} is not in `trustedFolders` of {copilot_config_path(env)}: start "
        "`copilot` there once and trust the folder, or install with --user"
    ]


def copilot_config_path(env: Mapping[str, str] | None = None) -> Path:
    """`$COPILOT_HOME/config.json` (default `~/.copilot/config.json`)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    return (Path(env["COPILOT_HOME"]) if env.get("COPILOT_HOME") else home / ".copilot") / (
        "config.json"
    )


def copilot_trusted(root: Path, env: Mapping[str, str]) -> bool:
    """True when Copilot CLI's config lists `root` (or a folder above it) as trusted.

    The file is Copilot's own (JSON after `//` comment lines); it is only read here.
    """
    import json

    try:
        text = copilot_config_path(env).read_text(encoding="utf-8")
    except OSError:
        return False
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    try:
        document = json.loads(body or "{}")
    except ValueError:
        return False
    folders = document.get("trustedFolders") if isinstance(document, dict) else None
    if not isinstance(folders, list):
        return False
    target = root.resolve()
    for folder in folders:
        if isinstance(folder, str):
            trusted = Path(folder).expanduser().resolve()
            if target == trusted or trusted in target.parents:
                return True
    return False
