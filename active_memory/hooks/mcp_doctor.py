"""`hook doctor` for each installed MCP registration (`hook install … --mcp`, docs/mcp.md).

For Claude Code (`.mcp.json`, `~/.claude.json`) and Codex (`.codex/config.toml`,
`$CODEX_HOME/config.toml`), where our `active-memory` server is registered:

- `present`: the entry runs `<command> mcp`;
- `resolvable`: its command is an executable file (or a name on PATH);
- `approved` (Claude Code, project): the server is in `enabledMcpjsonServers` of the
  project's `.claude/settings.json` or `settings.local.json` (or every project server
  is enabled) and not in `disabledMcpjsonServers`, and the folder's trust dialog was
  accepted (`~/.claude.json`): Claude Code starts a project's servers only then;
- `trusted` (Codex, project): the project is trusted (Codex reads `.codex/` only then);
- `same store` (Codex): the store and state folders written into the entry's `env` are this
  shell's (Codex starts servers with a minimal environment, so the entry decides);
- `starts`: the server, started as the client would (its command, arguments and
  environment, in the checkout), answers `initialize` and lists `search_lessons` and
  `get_lesson` within `START_SECONDS`.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from active_memory.hooks.doctor_checks import Check, Installed
from active_memory.hooks.installers import find_project_root
from active_memory.hooks.installers import mcp as registration
from active_memory.hooks.installers.command_path import resolves
from active_memory.hooks.installers.files import read_text

START_SECONDS = 30
TOOLS = ("search_lessons", "get_lesson")


def inspect_mcp(harness: str, where: str, cwd: Path, env: Mapping[str, str]) -> Installed | None:
    """The checks of our MCP registration for `harness` at `where` (None: none there)."""
    root = find_project_root(cwd)
    path = registration.config_path(harness, where, root, env)
    entry = _entry(harness, path)
    if entry is None:
        return None
    item = Installed(harness, where, path, kind="mcp")
    command, args = entry.get("command"), entry.get("args")
    fix = f"run `active-memory hook install {harness}{' --user' if where == 'user' else ''} --mcp`"
    if not isinstance(command, str) or args != ["mcp"]:
        item.checks.append(Check("present", False, f"not `<command> mcp`: {entry}", fix))
        return item
    item.checks.append(Check("present", True, f"{command} mcp"))
    if not resolves(command, env.get("PATH")):
        item.checks.append(Check("resolvable", False, f"{command} not found", fix))
        return item
    item.checks.append(Check("resolvable", True, command))
    launch = dict(env)
    if harness == "claude" and where == "project":
        item.checks.append(_approved(root, env))
    if harness == "codex":
        if where == "project":
            item.checks.append(_codex_trusted(root, env))
        found = entry.get("env")
        pinned = {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}
        item.checks.append(_same_store(pinned, env, where))
        launch = {k: env[k] for k in ("HOME", "PATH", "LANG") if k in env} | pinned
    item.checks.append(_starts(command, launch, root if where == "project" else cwd))
    return item


def _entry(harness: str, path: Path) -> dict[str, Any] | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        if harness == "claude":
            document: Any = json.loads(text)
            servers = document.get("mcpServers") if isinstance(document, dict) else None
        else:
            import tomllib

            servers = tomllib.loads(text).get("mcp_servers")
    except (ValueError, AttributeError):
        return None  # the hooks' own check reports an unreadable file
    found = servers.get(registration.SERVER) if isinstance(servers, dict) else None
    return found if isinstance(found, dict) else None


def _approved(root: Path, env: Mapping[str, str]) -> Check:
    enabled: list[Any] = []
    disabled: list[Any] = []
    every = False
    for name in ("settings.json", "settings.local.json"):
        try:
            document = json.loads(read_text(root / ".claude" / name) or "{}")
        except ValueError:
            continue
        if isinstance(document, dict):
            enabled += document.get(registration.APPROVALS) or []
            disabled += document.get("disabledMcpjsonServers") or []
            every = every or document.get("enableAllProjectMcpServers") is True
    fix = "run `active-memory hook install claude --mcp` again (it approves the server)"
    if registration.SERVER in disabled:
        return Check("approved", False, "disabled in disabledMcpjsonServers", fix)
    if registration.SERVER not in enabled and not every:
        return Check("approved", False, f"not in {registration.APPROVALS}", fix)
    home = Path(env.get("HOME") or Path.home())
    config = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home
    try:
        projects = json.loads(read_text(config / ".claude.json") or "{}").get("projects") or {}
    except (ValueError, AttributeError):
        projects = {}
    project = projects.get(str(root)) if isinstance(projects, dict) else None
    if not (isinstance(project, dict) and project.get("hasTrustDialogAccepted")):
        return Check(
            "approved",
            False,
            f"approved, but {root} is not trusted yet (Claude Code starts no project server "
            "before its trust dialog is accepted)",
            f"start `claude` in {root} once and accept the trust dialog",
        )
    return Check("approved", True, f"approved, and {root} is trusted")


def _codex_trusted(root: Path, env: Mapping[str, str]) -> Check:
    from active_memory.hooks.installers import codex_trust

    config = codex_trust.config_path(env)
    try:
        _, settings = codex_trust.read_config(config)
    except Exception as exc:  # an unreadable config is this check's finding
        return Check("trusted", False, str(exc), f"fix {config}")
    if codex_trust.project_trusted(settings, root):
        return Check("trusted", True, f"{root} is trusted in {config}")
    return Check(
        "trusted",
        False,
        f"{root} is not trusted (Codex ignores its .codex/config.toml)",
        "`active-memory hook install codex --mcp --trust-project`, or start `codex` there "
        "once and trust it",
    )


def _same_store(pinned: Mapping[str, Any], env: Mapping[str, str], where: str) -> Check:
    differ = [
        name for name in registration.PINNED_ENV if (pinned.get(name) or "") != env.get(name, "")
    ]
    if not differ:
        return Check("same store", True, "the server's store and state folders are this shell's")
    user = " --user" if where == "user" else ""
    return Check(
        "same store",
        False,
        "the server reads other store or state folders than this shell: "
        + ", ".join(f"{name} is {pinned.get(name) or '(unset)'}" for name in differ),
        f"run `active-memory hook install codex{user} --mcp` again from this shell",
    )


def _starts(command: str, env: Mapping[str, str], cwd: Path) -> Check:
    """Start the server as the client would and ask it for its tools."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "active-memory-doctor", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]  # fmt: skip
    text = "".join(json.dumps(m) + "\n" for m in messages)
    fix = "run `active-memory mcp` there to see why (the `mcp` extra must be installed)"
    # Its log goes to a file: a full stderr pipe would stall the server.
    with tempfile.TemporaryFile() as log:
        try:
            process = subprocess.Popen(
                [os.path.expanduser(command), "mcp"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, cwd=cwd, env=dict(env),
            )  # fmt: skip
        except OSError as exc:
            return Check("starts", False, f"cannot start it: {exc}", fix)
        with process:  # closes its pipes
            # Stdin stays open until the tool list is in: a server may stop at end of
            # input before it answers.
            lines, timed_out = _replies(process, text)
        log.seek(0)
        stderr = log.read(1 << 20).decode("utf-8", errors="replace")
    returncode = process.returncode
    if timed_out and not lines:
        return Check("starts", False, f"no answer within {START_SECONDS} s", fix)
    tools: list[str] = []
    version = ""
    for line in lines:
        try:
            reply = json.loads(line)
        except ValueError:
            continue
        result = reply.get("result") if isinstance(reply, dict) else None
        if not isinstance(result, dict):
            continue
        version = str((result.get("serverInfo") or {}).get("version") or version)
        tools += [str(t.get("name")) for t in result.get("tools") or [] if isinstance(t, dict)]
    if all(name in tools for name in TOOLS):
        return Check("starts", True, f"answers with {', '.join(TOOLS)} (version {version})")
    last = (stderr.strip().splitlines() or ["no output"])[-1]
    return Check("starts", False, f"exit {returncode}, no tool list: {last[:300]}", fix)


def _replies(process: subprocess.Popen[bytes], text: str) -> tuple[list[str], bool]:
    """Send `text`, read reply lines until the tool list (id 2) arrives, the server
    exits or `START_SECONDS` pass; then close it. The lines, and whether time ran out."""
    import selectors
    import time

    assert process.stdin is not None and process.stdout is not None
    received = b""
    timed_out = True
    try:
        process.stdin.write(text.encode("utf-8"))
        process.stdin.flush()
        deadline = time.monotonic() + START_SECONDS
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while (left := deadline - time.monotonic()) > 0:
                if not selector.select(left):
                    continue
                chunk = os.read(process.stdout.fileno(), 65536)  # unbuffered: no line hides
                received += chunk
                if not chunk or b'"id":2' in received.replace(b" ", b""):
                    timed_out = False
                    break
    except OSError:
        timed_out = False  # it exited before reading: its stderr says why
    finally:
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return received.decode("utf-8", errors="replace").splitlines(), timed_out
