"""`hook install … --mcp`: register `active-memory mcp` in the client's MCP configuration.

- Claude Code, project: `<root>/.mcp.json` (`mcpServers`), and the server approved in
  the project's `.claude/settings.json` (`enabledMcpjsonServers`), since Claude Code does
  not start a project's servers until they are approved. User: `~/.claude.json`
  (`mcpServers` at the top level).
- Codex, project: `<root>/.codex/config.toml` (read once the project is trusted, like
  its hooks); user: `$CODEX_HOME/config.toml`. A `[mcp_servers.active-memory]` table.

The command is the absolute path of the `active-memory` console script next to the
installing interpreter, so the server starts whatever PATH the client has. Uninstalling
removes only our entry; every other server and setting is kept byte for byte where the
format allows.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from active_memory.errors import InvalidRecord, UsageError
from active_memory.hooks.installers.files import (
    FileChange,
    dump_json,
    json_indent,
    parse_json_object,
    read_text,
)

SERVER = "active-memory"
"""Our server's name in every client's configuration."""
APPROVALS = "enabledMcpjsonServers"


def server_command(hook_script: Path) -> Path:
    """The `active-memory` console script: next to the installing interpreter (where pip
    put its scripts), else next to `hook_script` (a `--hook-command` in a venv's `bin/`),
    else on PATH. The hook command itself may be the lean entry in the state dir, which
    has no `active-memory` beside it."""
    import shutil
    import sys

    name = "active-memory.exe" if sys.platform == "win32" else "active-memory"
    for folder in (Path(sys.executable).parent, hook_script.parent):
        command = folder / name
        if command.is_file() and os.access(command, os.X_OK):
            return Path(os.path.abspath(command))
    found = shutil.which(name)
    if found:
        return Path(os.path.abspath(found))
    from active_memory.install_source import extra_command

    raise UsageError(
        f"--mcp: no {name} next to {sys.executable} or {hook_script}, nor on PATH; "
        f"reinstall active-memory with the `mcp` extra ({extra_command('mcp')}); "
        "nothing was written"
    )


def config_path(harness: str, where: str, root: Path, env: Mapping[str, str]) -> Path:
    """The file that lists the client's MCP servers, at project or user level."""
    home = Path(env.get("HOME") or Path.home())
    if harness == "claude":
        return root / ".mcp.json" if where == "project" else home / ".claude.json"
    if harness == "codex":
        if where == "project":
            return root / ".codex" / "config.toml"
        codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        return codex_home / "config.toml"
    raise UsageError(f"--mcp: {harness} is not supported (claude, codex)")


def plan_json(path: Path, install: bool, command: Path | None, base: str | None) -> FileChange:
    """Claude Code's `.mcp.json` / `~/.claude.json`: our `mcpServers` entry."""
    before = read_text(path) if base is None else base
    document = parse_json_object(path, before)
    servers = document.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise InvalidRecord(str(path), "mcpServers must be an object; nothing was changed")
    servers = dict(servers or {})
    if install:
        assert command is not None
        servers[SERVER] = {"type": "stdio", "command": str(command), "args": ["mcp"]}
    else:
        servers.pop(SERVER, None)
    if servers == (document.get("mcpServers") or {}) and (servers or "mcpServers" not in document):
        return FileChange(path, before, before)
    updated = {**document, "mcpServers": servers}
    if not servers:
        updated.pop("mcpServers")
    after = (
        None
        if not updated and path.name == ".mcp.json"
        else dump_json(updated, json_indent(before))
    )
    return FileChange(path, before, after)


def approve(change: FileChange, install: bool) -> FileChange:
    """Claude Code's project settings change with our server approved (or not)."""
    text = change.after
    document = parse_json_object(change.path, text)
    approved = document.get(APPROVALS)
    listed = (
        [item for item in approved if isinstance(item, str)] if isinstance(approved, list) else []
    )
    wanted = [*listed, SERVER] if install and SERVER not in listed else listed
    if not install:
        wanted = [item for item in listed if item != SERVER]
    if wanted == listed and (approved is not None or not install):
        return change
    updated = dict(document)
    if wanted:
        updated[APPROVALS] = wanted
    else:
        updated.pop(APPROVALS, None)
    after = dump_json(updated, json_indent(text)) if updated or text else None
    return FileChange(change.path, change.before, after)


PINNED_ENV = ("ZEROSHOT_STATE_DIR", "XDG_STATE_HOME", "ACTIVE_MEMORY_STORE")
"""Where the server finds the store and state. Codex starts MCP servers with a minimal
environment (HOME, PATH, LANG; seen with 0.171), so the values set when installing are
written into the table's `env`; Claude Code passes its whole environment."""


# Codex gives an MCP server 10 s to start by default and then runs the turn without its
# tools. A cold start of ours (a new interpreter importing the `mcp` library) can pass that
# on a loaded machine (seen in CI: the first model request came without our tools).
CODEX_STARTUP_TIMEOUT_SEC = 30


def plan_toml(
    path: Path,
    install: bool,
    command: Path | None,
    base: str | None,
    env: Mapping[str, str] | None = None,
) -> FileChange:
    """Codex's `config.toml`: our `[mcp_servers.active-memory]` table."""
    before = read_text(path)
    text = before if base is None else base
    try:
        document = tomlkit.parse(text or "")
    except tomlkit.exceptions.TOMLKitError as exc:
        raise InvalidRecord(str(path), f"not valid TOML ({exc}); nothing was changed") from None
    servers: Any = document.get("mcp_servers")
    if install:
        assert command is not None
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            document["mcp_servers"] = servers
        pinned = {name: env[name] for name in PINNED_ENV if env and env.get(name)}
        wanted: dict[str, Any] = {
            "command": str(command),
            "args": ["mcp"],
            "startup_timeout_sec": CODEX_STARTUP_TIMEOUT_SEC,
        }
        if pinned:
            wanted["env"] = pinned
        current = servers.get(SERVER)
        if current is not None and _plain(current) == wanted:
            return FileChange(path, before, text)
        entry = tomlkit.table()
        entry["command"] = str(command)
        entry["args"] = ["mcp"]
        entry["startup_timeout_sec"] = CODEX_STARTUP_TIMEOUT_SEC
        if pinned:
            inline = tomlkit.inline_table()
            inline.update(pinned)
            entry["env"] = inline
        servers[SERVER] = entry
    else:
        if servers is None or SERVER not in servers:
            return FileChange(path, before, text)
        del servers[SERVER]
        if not servers:
            del document["mcp_servers"]
        # tomlkit keeps the blank line that stood before our table.
        dumped = tomlkit.dumps(document)
        return FileChange(path, before, dumped.rstrip() + "\n" if dumped.strip() else "")
    return FileChange(path, before, tomlkit.dumps(document))


def _plain(value: Any) -> dict[str, Any] | None:
    unwrapped = value.unwrap() if hasattr(value, "unwrap") else value
    return unwrapped if isinstance(unwrapped, dict) else None


def plan_changes(
    harness: str,
    where: str,
    root: Path,
    install: bool,
    command: Path | None,
    pending: list[FileChange],
    env: Mapping[str, str] | None = None,
) -> list[FileChange]:
    """`pending` (the hooks' own changes) with the MCP registration folded in: a file
    both touch gets one change holding both edits."""
    environment = os.environ if env is None else env
    path = config_path(harness, where, root, environment)
    changes = list(pending)
    same = next((i for i, c in enumerate(changes) if c.path == path), None)
    base = changes[same].after if same is not None else None
    if harness == "claude":
        change = plan_json(path, install, command, base)
    else:
        change = plan_toml(path, install, command, base, environment)
    if same is not None:
        changes[same] = FileChange(path, changes[same].before, change.after)
    else:
        changes.append(change)
    if harness == "claude" and where == "project":
        # The hooks' settings file is changes[0]; the approval goes into the same file.
        changes[0] = approve(changes[0], install)
    return changes
