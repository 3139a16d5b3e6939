"""`active-memory hook doctor`: is each installed hook present, runnable, trusted, served?
(And each MCP registration: hooks/mcp_doctor.py.)

For every harness and place (project, user) whose configuration holds a hook of ours:

- `present`: our recall hook (PreToolUse; Gemini CLI AfterTool; Copilot CLI preToolUse;
  the OpenCode and Hermes plugins; the Pi extension) and our session-end hook (enqueue
  the session; the plugins and the extension hold both) are in the file;
- `enabled` (Hermes): the plugin is in `plugins.enabled` of Hermes' `config.yaml`, and
  for a project install Hermes loads project plugins (`HERMES_ENABLE_PROJECT_PLUGINS`);
- `resolvable`: every command of ours names an executable that exists (an absolute path
  that is an executable file, or a name on PATH);
- `trusted` (Copilot CLI, project): the repository is in Copilot's `trustedFolders`;
- `trusted` (Codex): each hook of ours has a `[hooks.state]` entry whose hash matches,
  and a project install's project is trusted (codex_trust.py);
- `trusted` (Gemini CLI, project): Gemini CLI's own trust rules would run the folder's
  hooks (hooks/hook_probe.py);
- `runs`: each command of ours, started as its harness starts it (a shell in the
  project folder; the Pi and OpenCode plugins spawn it directly), answers a probe;
- `server` (Claude Code HTTP hook): the recall server answers its health check;
- `settings`: the settings files that apply here are valid (settings.py);
- `store`: the lesson store can be opened and read (a missing SQLite store is fine: the
  first postmortem creates it);
- `worker`: whether and where this machine's worker of the store runs, whether a
  session end starts one, and the lane it would run on (a problem when there is none).

Each failed check says what to do. The command exits 1 when any check fails, or when no
hook of ours is installed anywhere.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from active_memory.hooks import installers
from active_memory.hooks.doctor_checks import Check as Check
from active_memory.hooks.doctor_checks import Installed as Installed
from active_memory.hooks.installers import (
    claude,
    codex,
    codex_trust,
    copilot,
    gemini,
    hermes,
    opencode,
    pi,
)
from active_memory.hooks.installers.command_path import command_executable, resolves
from active_memory.hooks.installers.files import parse_json_object, read_text

NAMES = {
    "claude": "Claude Code",
    "codex": "Codex",
    "opencode": "OpenCode",
    "pi": "Pi",
    "gemini": "Gemini CLI",
    "copilot": "Copilot CLI",
    "hermes": "Hermes",
}


def diagnose(cwd: Path, env: Mapping[str, str] | None = None) -> list[Installed]:
    """Every installed hook configuration and MCP registration reachable from `cwd`,
    checked."""
    from active_memory.hooks.mcp_doctor import inspect_mcp

    environment = os.environ if env is None else env
    found: list[Installed] = []
    for harness in installers.HARNESSES:
        user = installers.target_path(harness, "user", cwd, environment)
        for where in ("project", "user"):
            path = installers.target_path(harness, where, cwd, environment)
            if where == "project" and _same_path(path, user):
                continue  # outside any checkout, in the home folder: the user file itself
            item = inspect(harness, where, path, environment)
            if item is not None:
                found.append(item)
            if harness in ("claude", "codex"):
                registered = inspect_mcp(harness, where, cwd, environment)
                if registered is not None:
                    found.append(registered)
    shared = [_settings_check(cwd, environment), _store_check(environment),
              _worker_check(environment)]  # fmt: skip
    for item in found:
        item.checks.extend(shared)
    return found


def _same_path(first: Path, second: Path) -> bool:
    return os.path.abspath(first) == os.path.abspath(second)


def inspect(
    harness: str, where: str, path: Path, env: Mapping[str, str], *, run: bool = True
) -> Installed | None:
    """The checks of one hooks file (None: no hook of ours in it); settings and store
    are checked by `diagnose` once for all. `run`: also start each command as its harness
    would (`hook install` reads its file back without)."""
    text = read_text(path)
    if text is None:
        return None
    item = Installed(harness, where, path)
    if harness == "opencode":
        if not text.startswith(opencode.MARKER):
            return None
        command = opencode.plugin_command(text) or "active-memory-hook"
        detail = "plugin file (tool.execute.after, session.idle, exit)"
        item.checks.append(Check("present", True, detail))
        item.checks.append(_resolvable([command], env))
        if run:
            local = os.path.expanduser(command)  # the plugin expands a `~/` command itself
            item.checks.append(_runs([[local, "after-tool"]], path, env))
        return item
    if harness == "hermes":
        if not text.startswith(hermes.MARKER):
            return None
        _inspect_hermes(item, text, env)
        if run:  # the plugin spawns the command itself, a `~/` expanded (hermes_plugin.py)
            command = os.path.expanduser(hermes.plugin_command(text) or "active-memory-hook")
            item.checks.append(
                _runs([[command, "after-tool"], [command, "session-end", "hermes"]], path, env)
            )
        return item
    if harness == "pi":
        if not text.startswith(pi.MARKER):
            return None
        command = pi.extension_command(text) or "active-memory-hook"
        item.checks.append(Check("present", True, "extension file (tool_result, session_shutdown)"))
        item.checks.append(_resolvable([command], env))
        if run:
            local = os.path.expanduser(command)  # the extension expands a `~/` command itself
            item.checks.append(_runs([[local, "pi"], [local, "session-end", "pi"]], path, env))
        return item
    document = parse_json_object(path, text)
    found = _ours_by_event(harness, document)
    if not any(found.values()):
        return None
    item.checks.append(_present(harness, found))
    key = "bash" if harness == "copilot" else "command"
    handlers = [h for hs in found.values() for h in hs if h.get("type") == "command"]
    item.checks.append(_resolvable([h[key] for h in handlers], env))
    if run:
        item.checks.append(_runs([h[key] for h in handlers], path, env))
    if harness == "gemini" and item.where == "project":
        item.checks.append(_gemini_trusted(path.parent.parent, env))
    if harness == "codex":
        item.checks.append(_trusted(path, document, where, env))
    if harness == "copilot" and item.where == "project":
        item.checks.append(_copilot_trusted(item.path.parent.parent.parent, env))
    http = [h for h in found.get("PreToolUse", []) if h.get("type") == "http"]
    if http:
        item.checks.append(_server_check(str(http[0].get("url", ""))))
    return item


def expected_hooks(harness: str) -> list[tuple[str, Any]]:
    """(event, is-ours test) of every hook `hook install HARNESS` writes in a hooks file."""
    if harness == "copilot":
        events = (copilot.EVENT, *copilot.CONTEXT_EVENTS, copilot.SESSION_END)
        return [(event, copilot.is_ours) for event in events]
    if harness == "claude":
        entries = claude.entries(False, 0, None)
    else:
        entries = codex.entries(None) if harness == "codex" else gemini.entries(None)
    return [(entry.event, entry.is_ours) for entry in entries]


def _ours_by_event(harness: str, document: Mapping[str, Any]) -> dict[str, list[Any]]:
    hooks = document.get("hooks")
    hooks = hooks if isinstance(hooks, dict) else {}
    found: dict[str, list[Any]] = {}
    for event, test in expected_hooks(harness):
        listed = hooks.get(event) or []
        if harness == "copilot":  # a list of handlers
            handlers = [h for h in listed if isinstance(h, dict)]
        else:  # matcher groups of handlers
            handlers = [
                h for g in listed if isinstance(g, dict) for h in g.get("hooks") or []
                if isinstance(h, dict)
            ]  # fmt: skip
        found[event] = [h for h in handlers if test(h)]
    return found


def _present(harness: str, found: Mapping[str, list[Any]]) -> Check:
    missing = [event for event, handlers in found.items() if not handlers]
    if not missing:
        return Check("present", True, ", ".join(found) + " hooks")
    # A hook added by a later version (a context event) is missing until a reinstall.
    return Check(
        "present",
        False,
        f"missing: {', '.join(missing)}",
        f"run `active-memory hook install {harness}` again",
    )


def _runs(commands: Sequence[str | list[str]], path: Path, env: Mapping[str, str]) -> Check:
    """Each command, started as its harness starts it, answers the probe (hook_probe.py)."""
    from active_memory.hooks.hook_probe import probe
    from active_memory.hooks.installers import find_project_root

    folder = find_project_root(path.parent)
    seen: list[str] = []
    unique = {json.dumps(c): c for c in commands}.values()  # one run per distinct command
    for command in unique:
        ok, said = probe(command, folder, env)
        if not ok:
            return Check("runs", False, said, "run `active-memory hook install …` again with "
                         "the active-memory you use, or fix what the error says")  # fmt: skip
        seen.append(said)
    return Check("runs", True, f"{len(seen)} command(s) answer as the harness runs them")


def _gemini_trusted(root: Path, env: Mapping[str, str]) -> Check:
    from active_memory.hooks.hook_probe import gemini_trusted

    trusted, why = gemini_trusted(root, env)
    if trusted:
        return Check("trusted", True, why)
    return Check(
        "trusted", False, f"Gemini CLI blocks this folder's project hooks: {why}",
        f"start `gemini` in {root} and trust the folder, or set GEMINI_CLI_TRUST_WORKSPACE="
        "true where Gemini CLI runs (its --skip-trust does not run hooks), or "
        "`active-memory hook install gemini --user`",
    )  # fmt: skip


def _worker_check(env: Mapping[str, str]) -> Check:
    from active_memory.store.location import resolve_store_location
    from active_memory.worker_state import worker_report

    report = worker_report(resolve_store_location(None, env), env)
    status = report["status"]
    if status["running"]:
        detail = (f"running, pid {status.get('pid')} on {status.get('host')} since "
                  f"{status.get('started_at')}; {status.get('lane')}")  # fmt: skip
    elif report["auto_start"]:
        detail = f"not running; the next session end starts one on lane {report['lane']}"
    else:
        detail = f"not running, and session ends start none ({report['auto_start_off']})"
    lane = str(report["lane"])
    if lane.startswith("none") and not status["running"] and report["auto_start"]:
        return Check("worker", False, f"{detail}", "set the worker's lane in the settings "
                     "file (docs/queue.md, \"The automatic worker\")")  # fmt: skip
    if report.get("cap_reached"):
        return Check("worker", True, f"{detail}; {report['cap_reached']}")
    return Check("worker", True, detail)


def _inspect_hermes(item: Installed, text: str, env: Mapping[str, str]) -> Installed:
    manifest = read_text(item.path.parent / hermes.MANIFEST_FILE)
    present = manifest is not None and manifest.startswith(hermes.MARKER)
    item.checks.append(
        Check(
            "present",
            present,
            "plugin (transform_tool_result, on_session_end, on_session_finalize)"
            if present
            else f"{hermes.MANIFEST_FILE} is missing next to {item.path.name}",
            None if present else "run `active-memory hook install hermes` again",
        )
    )
    item.checks.append(_resolvable([hermes.plugin_command(text) or "active-memory-hook"], env))
    config = hermes.config_path(env)
    problems, fixes = [], []
    if not hermes.is_enabled(env):
        problems.append(f"not in plugins.enabled of {config} (Hermes loads no plugin that is not)")
        fixes.append("run `active-memory hook install hermes` again")
    if item.where == "project" and not hermes.project_plugins_enabled(env):
        problems.append(f"{hermes.PROJECT_PLUGINS_ENV} is not set (Hermes ignores "
                        f"{item.path.parent.parent}/)")  # fmt: skip
        fixes.append(f"export {hermes.PROJECT_PLUGINS_ENV}=1 (or put it in "
                     f"{hermes.hermes_home(env)}/.env), or install with --user")  # fmt: skip
    detail = "; ".join(problems) or f"enabled in {config}"
    item.checks.append(Check("enabled", not problems, detail, "; ".join(fixes) or None))
    return item


def _copilot_trusted(root: Path, env: Mapping[str, str]) -> Check:
    if installers.copilot_trusted(root, env):
        return Check("trusted", True, f"{root} is a trusted folder")
    return Check(
        "trusted",
        False,
        f"{root} is not in trustedFolders of {installers.copilot_config_path(env)}"
        " (Copilot CLI ignores its .github/hooks/)",
        "start `copilot` there once and trust the folder, or "
        "`active-memory hook install copilot --user`",
    )


def _resolvable(commands: list[str], env: Mapping[str, str]) -> Check:
    broken = [c for c in commands if not resolves(c, env.get("PATH"))]
    if not broken:
        for command in commands:
            interpreter = lean_entry_interpreter(_exe(command))
            if interpreter is not None and not (
                os.path.isfile(interpreter) and os.access(interpreter, os.X_OK)
            ):
                return Check(
                    "resolvable",
                    False,
                    f"the lean hook entry {_exe(command)} runs {interpreter}, which is gone",
                    "run `active-memory hook install …` again with the active-memory you "
                    "use (it rewrites the entry for its own interpreter)",
                )
        return Check("resolvable", True, ", ".join(sorted({_exe(c) for c in commands})))
    return Check(
        "resolvable",
        False,
        f"does not run: {_exe(broken[0])} not found",
        "reinstall with the active-memory you use (`<venv>/bin/active-memory hook install "
        "…` writes its own absolute path), or pass --hook-command PATH",
    )


def lean_entry_interpreter(executable: str) -> str | None:
    """The interpreter a lean hook entry (hooks/lean.py) runs; None if not such an entry."""
    from active_memory.hooks.lean import ENTRY_TEMPLATE

    marker = ENTRY_TEMPLATE.splitlines()[1]
    try:
        with open(os.path.expanduser(executable), encoding="utf-8") as handle:
            first, second = handle.readline(), handle.readline()
    except (OSError, UnicodeDecodeError):
        return None
    if not first.startswith("#!") or second.rstrip("\n") != marker:
        return None
    return first[2:].strip()


def _exe(command: str) -> str:
    return command_executable(command) or command


def _trusted(path: Path, document: Mapping[str, Any], where: str, env: Mapping[str, str]) -> Check:
    config = codex_trust.config_path(env)
    try:
        _, settings = codex_trust.read_config(config)
    except Exception as exc:  # an unreadable config is this check's finding
        return Check("trusted", False, str(exc), f"fix {config}")
    statuses = codex_trust.trust_status(
        settings, Path(os.path.abspath(path)), document, codex.is_ours_at
    )
    problems = [f"{event} {status}" for event, _, status in statuses if status != "trusted"]
    root = path.parent.parent
    project_untrusted = where == "project" and not codex_trust.project_trusted(settings, root)
    if project_untrusted:
        problems.append(f"project {root} not trusted (Codex ignores its .codex/)")
    if not problems:
        return Check("trusted", True, f"{len(statuses)} hooks trusted in {config}")
    user = " --user" if where == "user" else ""
    fixes = []
    if len(problems) > int(project_untrusted):
        fixes.append(
            f"run `active-memory hook install codex{user}` again (it writes the hooks' "
            f"trust entries into {config})"
        )
    if project_untrusted:
        fixes.append(
            "trust the project: `active-memory hook install codex --trust-project`, or start "
            f"`codex` in {root} once and trust it"
        )
    return Check("trusted", False, "; ".join(problems), "; ".join(fixes))


def _server_check(url: str) -> Check:
    import urllib.error
    import urllib.request
    from urllib.parse import urlsplit

    from active_memory.hooks.paths import HEALTH_PATH

    parts = urlsplit(url)
    health = f"{parts.scheme}://{parts.netloc}{HEALTH_PATH}"
    try:
        with urllib.request.urlopen(health, timeout=2) as response:
            ok = response.status == 200 and json.loads(response.read() or b"{}").get("ok")
    except (OSError, ValueError, urllib.error.URLError) as exc:
        return Check(
            "server",
            False,
            f"{health}: {getattr(exc, 'reason', exc)}",
            "start `active-memory serve` (HTTP hooks get no lessons without it)",
        )
    return Check("server", bool(ok), health, None if ok else "restart `active-memory serve`")


def _settings_check(cwd: Path, env: Mapping[str, str]) -> Check:
    from active_memory.recall.environment import find_checkout_root
    from active_memory.settings import SettingsError, effective_settings

    try:
        settings = effective_settings(find_checkout_root(str(cwd)), env, use_env=False)
    except SettingsError as exc:
        return Check(
            "settings",
            False,
            str(exc),
            "fix or move that file: until then every hook call here recalls nothing",
        )
    scopes = ", ".join(sorted(settings.scopes)) or "none (Active Memory is off here)"
    return Check("settings", True, f"scopes on: {scopes}")


def _store_check(env: Mapping[str, str]) -> Check:
    import anyio

    from active_memory.errors import ActiveMemoryError, StoreMissing
    from active_memory.store import LessonQuery, open_store
    from active_memory.store.location import mask_url, resolve_store_location

    location = resolve_store_location(None, env)

    async def read() -> int:
        async with open_store(location, create=False) as store:
            return len(await store.select(LessonQuery()))

    try:
        count = anyio.run(read)
    except StoreMissing:
        return Check("store", True, f"{mask_url(location)} not created yet (the first "
                     "postmortem creates it)")  # fmt: skip
    except (ActiveMemoryError, OSError) as exc:
        return Check("store", False, str(exc), "check --store / ACTIVE_MEMORY_STORE")
    return Check("store", True, f"{mask_url(location)}: {count} lessons readable")
