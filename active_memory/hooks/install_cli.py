"""`active-memory hook install|uninstall claude|codex|opencode|pi|gemini|copilot|hermes` and
`hook doctor`
(standard library at import).

`register(hook_subparsers)` adds the subcommands to the `hook` command's subparsers; the
`hook` command module calls it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from active_memory.credential_gate import mask, mask_value

_NAMES = {
    "claude": "Claude Code",
    "codex": "Codex",
    "opencode": "OpenCode",
    "pi": "Pi",
    "gemini": "Gemini CLI",
    "copilot": "Copilot CLI",
    "hermes": "Hermes",
}


def register(hook_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `install` and `uninstall` under `active-memory hook`."""
    from active_memory.hooks.paths import DEFAULT_PORT

    install = hook_subparsers.add_parser(
        "install",
        help="merge our hook into a harness's config (idempotent)",
        description="Merge the Active Memory hook into the harness's own configuration. "
        "Other hooks and settings are kept; running it again changes nothing.",
    )
    _common_options(install)
    install.add_argument(
        "--http",
        action="store_true",
        help="claude only: an HTTP hook to the resident server (`active-memory serve`) "
        "instead of a command hook",
    )
    install.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"with --http: the server's port (default {DEFAULT_PORT})",
    )
    install.add_argument(
        "--hook-command",
        metavar="PATH",
        default=None,
        help="the active-memory-hook executable the hooks run (default: the one next to "
        "this Python, else on PATH; written as an absolute path)",
    )
    install.add_argument(
        "--trust-project",
        action="store_true",
        help="codex --project only: also trust the project in $CODEX_HOME/config.toml "
        "(Codex reads a project's .codex/ only once it is trusted)",
    )
    install.set_defaults(handler=_install)

    uninstall = hook_subparsers.add_parser(
        "uninstall",
        help="remove our hook from a harness's config, keeping everything else",
    )
    _common_options(uninstall)
    uninstall.set_defaults(handler=_uninstall)

    doctor = hook_subparsers.add_parser(
        "doctor",
        help="check each installed hook and MCP registration: present, runnable, trusted, "
        "server, store",
        description="For every harness whose project or user configuration holds our "
        "hooks: are they present, does their command run, are they trusted (Codex), does "
        "the recall server answer (HTTP hooks), are the settings valid, can the store be "
        "read. For each MCP registration (Claude Code, Codex): is it approved or trusted, "
        "does it read this store, does the server start and list its tools. Exit 1 when "
        "something is wrong (each problem says what to do).",
    )
    doctor.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    doctor.set_defaults(handler=_doctor)


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("harness", type=str.lower, choices=tuple(_NAMES), help="which harness")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--project",
        dest="where",
        action="store_const",
        const="project",
        help="the current checkout's config (default)",
    )
    where.add_argument(
        "--user",
        dest="where",
        action="store_const",
        const="user",
        help="your user config (~/.claude, ~/.codex, ~/.config/opencode, ~/.pi/agent, "
        "~/.gemini, ~/.copilot, ~/.hermes)",
    )
    parser.set_defaults(where="project")
    parser.add_argument(
        "--dry-run", action="store_true", help="print the change as a diff; write nothing"
    )
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="claude, codex: also register (or remove) `active-memory mcp` in the client's "
        "MCP servers (.mcp.json / ~/.claude.json, .codex/config.toml; docs/mcp.md)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def _install(args: argparse.Namespace) -> int:
    return _run(args, install=True)


def _uninstall(args: argparse.Namespace) -> int:
    return _run(args, install=False)


def _run(args: argparse.Namespace, *, install: bool) -> int:
    from active_memory.errors import UsageError
    from active_memory.hooks.installers.command_path import install_hook_entry
    from active_memory.hooks.setup import plan_install

    http = bool(getattr(args, "http", False))
    port = int(getattr(args, "port", 0) or 0)
    if install and http and not 0 < port < 65536:
        raise UsageError(f"--port {port}: must be 1..65535")
    trust_project = bool(getattr(args, "trust_project", False))
    if trust_project and (args.harness != "codex" or args.where != "project"):
        raise UsageError("--trust-project: only for `hook install codex` at project level")
    # Installing needs a command that runs from the harness (an absolute path); removing
    # recognises ours however it was spelled.
    script, entry_note = (
        install_hook_entry(getattr(args, "hook_command", None), write=not args.dry_run)
        if install
        else (None, None)
    )
    # Files a team commits name no one's home (setup.plan_install, shared with `setup`).
    path, change, script = plan_install(
        args.harness, args.where, Path.cwd(), script, install=install, http=http, port=port,
        trust_project=trust_project, mcp=bool(getattr(args, "mcp", False)),
    )  # fmt: skip
    if entry_note:
        change.notes.insert(0, entry_note)
    if not args.dry_run:
        try:
            change.apply()
        except OSError as exc:
            from active_memory.errors import InvalidRecord

            where = str(exc.filename or path)
            raise InvalidRecord(
                where, f"cannot write ({exc.strerror or exc}); nothing was changed"
            ) from None
        if install:  # the hook's modules run once per tool call: compile them now
            from active_memory.hooks.lean import compile_hook_path

            compile_hook_path()
    checks = _recheck(args.harness, args.where, path) if install and not args.dry_run else []
    name = _NAMES[args.harness]
    if args.json:
        document: dict[str, object] = {
            "harness": args.harness,
            "action": "install" if install else "uninstall",
            "path": str(path),
            "files": [str(c.path) for c in change.changes if c.changed],
            "changed": change.changed,
            "dry_run": bool(args.dry_run),
        }
        if script is not None:
            document["command"] = str(script)
        if args.dry_run:
            document["diff"] = change.diff()
        if change.notes:
            document["notes"] = change.notes
        if checks:
            document["checks"] = checks
        # A diff shows lines of the harness's own config, which may hold the user's keys.
        sys.stdout.write(json.dumps(mask_value(document), indent=2) + "\n")
        return 0
    if args.dry_run:
        sys.stdout.write(mask(change.diff()) or f"nothing would change in {path}\n")
        print("dry run: nothing was written", file=sys.stderr)
        for note in change.notes:
            print(f"note: {note}", file=sys.stderr)
        return 0
    if not change.changed:
        state = "are already installed in" if install else "are not installed in"
        print(f"the {name} hooks {state} {path}; nothing changed")
    else:
        verb = "installed the" if install else "removed the"
        where = "in" if install else "from"
        print(f"{verb} {name} hooks {where} {path}")
        for other in change.changes[1:]:
            if other.changed:
                print(f"  and updated {other.path}")
    for check in checks:
        if not check["ok"]:
            print(f"warning: {check['name']}: {check['detail']}", file=sys.stderr)
    for note in change.notes:
        print(f"note: {note}", file=sys.stderr)
    if install and change.changed:
        for line in _next_steps(args.harness, http, path):
            print(line)
    return 0


def _recheck(harness: str, where: str, path: Path) -> list[dict[str, object]]:
    # Read back what was written, as the harness will: present, runnable, trusted.
    import os

    from active_memory.hooks import doctor

    item = doctor.inspect(harness, where, path, os.environ, run=False)
    return [check.to_json() for check in item.checks] if item is not None else []


def _doctor(args: argparse.Namespace) -> int:
    from active_memory.hooks import doctor

    found = doctor.diagnose(Path.cwd())
    ok = bool(found) and all(item.ok for item in found)
    if args.json:
        document = {"ok": ok, "installed": [item.to_json() for item in found]}
        sys.stdout.write(json.dumps(mask_value(document), indent=2) + "\n")
        return 0 if ok else 1
    if not found:
        print(
            "no Active Memory hook is installed for this checkout or your user; run "
            "`active-memory setup` (every harness on PATH) or `active-memory hook install "
            "claude|codex|opencode|pi|gemini|copilot|hermes`"
        )
        return 1
    for item in found:
        mark = "ok" if item.ok else "PROBLEM"
        what = " MCP server" if item.kind == "mcp" else ""
        print(f"{_NAMES[item.harness]}{what} ({item.where}) {item.path}: {mark}")
        for check in item.checks:
            print(f"  {'✓' if check.ok else '✗'} {check.name}: {check.detail}")
            if check.fix:
                print(f"    → {check.fix}")
    return 0 if ok else 1


def _next_steps(harness: str, http: bool, path: Path) -> list[str]:
    from active_memory.hooks.paths import TOKEN_ENV

    if harness == "claude" and http:
        return [
            "Claude Code sends the server's token from $" + TOKEN_ENV + "; before starting "
            "Claude Code run:",
            f'  export {TOKEN_ENV}="$(active-memory serve --print-token)"',
            "and keep `active-memory serve` running (without it, tool calls get no lessons).",
        ]
    if harness == "codex":
        return ["Codex trusts the hooks through the entries written in its config.toml; "
                "`active-memory hook doctor` checks them."]  # fmt: skip
    if harness == "opencode":
        return ["OpenCode loads the plugin at its next start: lessons follow each tool's "
                "result, and each session is queued for its postmortem when it goes idle "
                "and when OpenCode exits."]  # fmt: skip
    if harness == "hermes":
        return ["Hermes loads the plugin at its next start (it is enabled in its "
                "config.yaml): lessons follow each tool's result, and each session is "
                "queued for its postmortem."]  # fmt: skip
    if harness == "pi":
        return ["Pi loads the extension at its next start. In contained mode "
                "(`pi --no-extensions`) load it explicitly:",
                f"  pi --no-extensions -e {path}"]  # fmt: skip
    if harness == "gemini":
        return ["Gemini CLI runs the AfterTool hook from its next start; the lessons follow "
                "the tool's result (its BeforeTool context never reaches the model)."]  # fmt: skip
    if harness == "copilot":
        return ["Copilot CLI runs the preToolUse hook from its next start."]
    return []
