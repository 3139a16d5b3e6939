"""`active-memory setup [HARNESS …] [--project|--user] [--dry-run] [--json]`: the hooks of
every harness on PATH, the worker's readiness and `hook doctor`, in one step (docs/loop.md,
"Install"; the plan and its all-or-nothing write are hooks/setup.py)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import print_json

if TYPE_CHECKING:
    from active_memory.hooks.doctor_checks import Installed
    from active_memory.hooks.setup import CommandOnPath, HarnessSetup, SetupPlan

HARNESSES = ("claude", "codex", "opencode", "pi", "gemini", "copilot", "hermes")
"""hooks/setup.py's BINARIES keys (repeated: the parser imports nothing heavy)."""


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `setup`."""
    parser = subcommands.add_parser(
        "setup",
        help="install the hooks of every harness on PATH, check the worker, run hook doctor",
        description="Find the harnesses on PATH (claude, codex, opencode, pi, gemini, copilot, "
        "hermes), install each one's hooks for your user (every repository; --project: this "
        "checkout only), say whether a session end will start the worker and on which lane, "
        "and run `hook doctor`. Running it again changes nothing. Exit 0 when everything is "
        "in place (or no harness was found), 1 when the doctor finds a problem, 2 when a "
        "harness's configuration cannot take the hooks (then nothing is written).",
    )
    parser.add_argument(
        "harnesses",
        nargs="*",
        metavar="HARNESS",
        type=str.lower,
        help=f"set up only these ({', '.join(HARNESSES)}), even when not on PATH; default: "
        "every harness on PATH",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--user",
        dest="where",
        action="store_const",
        const="user",
        help="your user configuration: every repository (default)",
    )
    where.add_argument(
        "--project",
        dest="where",
        action="store_const",
        const="project",
        help="the current checkout's configuration only",
    )
    parser.set_defaults(where="user", handler=_run)
    parser.add_argument(
        "--trust-project",
        action="store_true",
        help="with --project: also trust the project in Codex's config.toml",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="say what would change; write nothing"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def _run(args: argparse.Namespace) -> int:
    from active_memory.errors import UsageError
    from active_memory.hooks import setup
    from active_memory.hooks.installers.command_path import install_hook_entry

    unknown = [name for name in args.harnesses if name not in HARNESSES]
    if unknown:  # not argparse's `choices`: with nargs="*" it rejects an empty list
        raise UsageError(f"setup: no harness named {unknown[0]!r}; choose from "
                         f"{', '.join(HARNESSES)}")  # fmt: skip
    env = os.environ
    cwd = Path.cwd()
    binaries = setup.find_harnesses(env)
    named = list(dict.fromkeys(args.harnesses))
    chosen = named or [h for h in setup.BINARIES if binaries[h] is not None]
    command = setup.command_on_path(env)
    if not chosen:
        return _nothing_found(command, args.json)
    # Planned with the entry's path first: a configuration that cannot take the hooks
    # stops the set-up before anything (the lean entry included) is written.
    planned, _ = install_hook_entry(None, write=False, env=env)
    plan = setup.prepare(chosen, args.where, cwd, binaries, script=planned, env=env,
                         trust_project=args.trust_project)  # fmt: skip
    if not args.dry_run:
        script, entry_note = install_hook_entry(None, write=True, env=env)
        if script != planned:  # the lean entry could not be written: pip's script instead
            plan = setup.prepare(chosen, args.where, cwd, binaries, script=script, env=env,
                                 trust_project=args.trust_project)  # fmt: skip
        if entry_note:
            plan.notes.append(entry_note)
        _write(plan)
    worker = _worker(env)
    found = None if args.dry_run else _doctor(cwd, env)
    # Nothing of ours to check is fine only when every harness was left to its plugin.
    plugins_only = all(item.skipped for item in plan.harnesses)
    doctor_ok = found is None or (all(item.ok for item in found) and (bool(found) or plugins_only))
    ok = doctor_ok and not worker["problem"]
    if args.json:
        print_json(_document(plan, binaries, worker, command, found, args.dry_run, ok))
    else:
        _show(plan, binaries, worker, command, found, args.dry_run)
    return 0 if ok else 1


def _write(plan: SetupPlan) -> None:
    from active_memory.errors import InvalidRecord
    from active_memory.hooks import setup

    try:
        setup.apply(plan)
    except OSError as exc:
        raise InvalidRecord(
            str(exc.filename or plan.harnesses[0].path),
            f"cannot write ({exc.strerror or exc}); setup changed nothing",
        ) from None


def _nothing_found(command: CommandOnPath, as_json: bool) -> int:
    from active_memory.hooks.setup import BINARIES

    looked = ", ".join(BINARIES.values())
    if as_json:
        print_json({"harnesses": [], "not_found": list(BINARIES), "worker": None,
                    "command": command.to_json(), "doctor": None, "ok": True})  # fmt: skip
        return 0
    print(f"no harness found on PATH (looked for {looked}): nothing to set up.")
    print("Install one (Claude Code: npm install -g @anthropic-ai/claude-code; the others: "
          "docs/harnesses.md), then run `active-memory setup` again; or set one up before "
          "it is on PATH: `active-memory setup claude`.")  # fmt: skip
    if command.hint:
        print(f"command: to type `active-memory` alone: {command.hint}")
    return 0


def _worker(env: Any) -> dict[str, Any]:
    """What the worker will do, as one line and, when the loop would not close, a fix."""
    from active_memory.store.location import resolve_store_location
    from active_memory.worker_settings import AUTO_WORKER_ENV
    from active_memory.worker_state import worker_report

    report = worker_report(resolve_store_location(None, env), env)
    status, lane = report["status"], str(report["lane"])
    off = report.get("auto_start_off")
    problem: str | None = None
    if status.get("running"):
        line = f"running (pid {status.get('pid')} on {status.get('host')}); lane {lane}"
    elif off:
        line = f"no session end starts it ({off})"
        if off.startswith("invalid settings"):
            problem = "fix the settings file, then run `active-memory setup` again"
        elif off.startswith(AUTO_WORKER_ENV):
            line += (f"; unset {AUTO_WORKER_ENV}, or run `active-memory worker --once` after "
                     "sessions")  # fmt: skip
        else:
            line += "; run `active-memory worker --once` after sessions, or remove that line"
    elif lane.startswith("none"):
        line = "a session end starts it, but it has no lane to run postmortems on"
        problem = lane.removeprefix("none (").removesuffix(")")
    else:
        line = ("a session end starts it (one per machine and store; it exits when idle); "
                f"lane {lane}")  # fmt: skip
    if report.get("cap_reached"):
        line += f"; {report['cap_reached']}"
    return {"line": line, "problem": problem, "auto_start": report["auto_start"],
            "lane": lane, "running": bool(status.get("running"))}  # fmt: skip


def _doctor(cwd: Path, env: Any) -> list[Installed]:
    from active_memory.hooks import doctor

    return doctor.diagnose(cwd, env)


def _document(
    plan: SetupPlan,
    binaries: dict[Any, str | None],
    worker: dict[str, Any],
    command: CommandOnPath,
    found: list[Installed] | None,
    dry_run: bool,
    ok: bool,
) -> dict[str, Any]:
    done = {item.harness for item in plan.harnesses}
    return {
        "where": plan.where,
        "dry_run": dry_run,
        "hook_command": str(plan.script),
        "harnesses": [item.to_json(dry_run=dry_run) for item in plan.harnesses],
        "not_found": [h for h, path in binaries.items() if path is None and h not in done],
        "notes": plan.notes,
        "worker": worker,
        "command": command.to_json(),
        "doctor": None if found is None else {
            "ok": all(item.ok for item in found),
            "installed": [item.to_json() for item in found],
        },
        "ok": ok,
    }  # fmt: skip


def _show(
    plan: SetupPlan,
    binaries: dict[Any, str | None],
    worker: dict[str, Any],
    command: CommandOnPath,
    found: list[Installed] | None,
    dry_run: bool,
) -> None:
    from active_memory.hooks.setup import NAMES

    scope = "your user (every repository)" if plan.where == "user" else "this checkout"
    print(f"Active Memory set-up for {scope}; the hooks run {plan.script}")
    for item in plan.harnesses:
        _show_harness(item, dry_run)
    done = {item.harness for item in plan.harnesses}
    missing = [NAMES[h] for h, path in binaries.items() if path is None and h not in done]
    if missing:
        print(f"not on PATH: {', '.join(missing)} (run `active-memory setup` again once one is)")
    for note in plan.notes:
        print(f"note: {note}")
    mark = "✗" if worker["problem"] else "✓"
    print(f"{mark} worker: {worker['line']}")
    if worker["problem"]:
        print(f"    → {worker['problem']}")
    if command.hint:
        print(f"command: to type `active-memory` alone: {command.hint}")
    if dry_run:
        print("dry run: nothing was written; `active-memory hook install HARNESS "
              f"--{plan.where} --dry-run` shows one harness's diff")  # fmt: skip
        return
    _show_doctor(found or [])


def _show_harness(item: HarnessSetup, dry_run: bool) -> None:
    from active_memory.hooks.setup import next_steps

    where = item.binary or "not on PATH"
    if item.skipped:
        what = f"nothing to install: {item.skipped}"
    elif not item.plan.changed:
        what = (
            f"already installed in {item.path}; nothing {'would change' if dry_run else 'changed'}"
        )
    else:
        what = f"{'would install' if dry_run else 'installed'} the hooks in {item.path}"
    print(f"{item.name} ({where}): {what}")
    for other in item.plan.changes[1:]:
        if other.changed:
            print(f"  and {'would update' if dry_run else 'updated'} {other.path}")
    for note in item.plan.notes:
        print(f"  note: {note}")
    steps = next_steps(item.harness, item.binary, item.path)
    print(f"  next: {steps[0]}")
    for line in steps[1:]:
        print(f"        {line}")


def _show_doctor(found: list[Installed]) -> None:
    from active_memory.hooks.setup import NAMES

    def label(item: Installed) -> str:
        what = " MCP server" if item.kind == "mcp" else ""
        return f"{NAMES.get(item.harness, item.harness)}{what} ({item.where})"

    # The worker's check was shown above; settings and store are shared by every item.
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    for item in found:
        for check in item.checks:
            if check.ok or check.name == "worker" or (check.name, check.detail) in seen:
                continue
            seen.add((check.name, check.detail))
            problems.append(f"  {label(item)} {check.name}: {check.detail}")
            if check.fix:
                problems.append(f"    → {check.fix}")
    which = ", ".join(label(item) for item in found)
    if not found:
        print("hook doctor: no hook of ours is installed (each harness has our plugin)")
        return
    if not problems:
        print(f"✓ hook doctor: the hooks are ok for {which}")
        return
    print("✗ hook doctor found a problem (the whole report: `active-memory hook doctor`):")
    print("\n".join(problems))
