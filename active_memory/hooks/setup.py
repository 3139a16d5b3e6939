"""`active-memory setup`: every harness on PATH gets its hooks in one step (docs/loop.md,
"Install").

`find_harnesses` looks each harness's binary up on PATH (`claude`, `codex`, `opencode`,
`pi`, `gemini`, `copilot`, `hermes`). `prepare` plans the hook install of each chosen
harness exactly as `hook install HARNESS` does (`plan_install`, shared with it), writing
nothing; a harness whose configuration cannot be read or merged fails the whole set-up
before anything is written. `apply` then writes every planned file as one change: all
or nothing across the harnesses. Installing twice changes nothing.

A harness whose Active Memory plugin is on gets nothing: the plugin brings the same
hooks (plugin_presence.py). What the loop needs besides the hooks is only reported,
never changed: whether a session end will start the worker and on which lane
(`worker_report`), and whether `active-memory` itself is on PATH (`command_on_path`).
The command (commands/setup.py) then runs `hook doctor` over what is installed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from active_memory.errors import UsageError
from active_memory.hooks import installers
from active_memory.hooks.installers import Harness, Plan, Where

BINARIES: dict[Harness, str] = {
    "claude": "claude",
    "codex": "codex",
    "opencode": "opencode",
    "pi": "pi",
    "gemini": "gemini",
    "copilot": "copilot",
    "hermes": "hermes",
}
"""The executable each harness is started by; `setup` looks for it on PATH."""

NAMES: dict[str, str] = {
    "claude": "Claude Code",
    "codex": "Codex",
    "opencode": "OpenCode",
    "pi": "Pi",
    "gemini": "Gemini CLI",
    "copilot": "Copilot CLI",
    "hermes": "Hermes",
}


@dataclass(slots=True)
class HarnessSetup:
    """One harness's part of the set-up: where its binary is, the file its hooks go
    into, and the planned change (its `notes` say what the user should know)."""

    harness: Harness
    binary: str | None
    path: Path
    plan: Plan
    skipped: str | None = None
    """Why nothing is installed for this harness (our plugin is on: plugin_presence.py)."""

    @property
    def name(self) -> str:
        """The harness's name as its users know it."""
        return NAMES[self.harness]

    def to_json(self, *, dry_run: bool) -> dict[str, Any]:
        """`{"harness", "binary", "path", "changed", "files", "notes"}` (+ `diff` in a dry
        run)."""
        document: dict[str, Any] = {
            "harness": self.harness,
            "binary": self.binary,
            "path": str(self.path),
            "changed": self.plan.changed,
            "files": [str(c.path) for c in self.plan.changes if c.changed],
            "notes": list(self.plan.notes),
            "skipped": self.skipped,
        }
        if dry_run:
            document["diff"] = self.plan.diff()
        return document


@dataclass(slots=True)
class SetupPlan:
    """Every harness's planned install, and the hook command they all run."""

    where: Where
    script: Path
    harnesses: list[HarnessSetup] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """False when applying would leave every file as it is."""
        return any(item.plan.changed for item in self.harnesses)


def find_harnesses(env: Mapping[str, str] | None = None) -> dict[Harness, str | None]:
    """Each harness's binary on PATH (an absolute path), or None where it is not found."""
    environment = os.environ if env is None else env
    search = environment.get("PATH", os.defpath)
    found: dict[Harness, str | None] = {}
    for harness, binary in BINARIES.items():
        path = shutil.which(binary, path=search)
        found[harness] = os.path.abspath(path) if path else None
    return found


def plan_install(
    harness: Harness,
    where: Where,
    cwd: Path,
    script: Path | None,
    *,
    install: bool = True,
    env: Mapping[str, str] | None = None,
    http: bool = False,
    port: int = 0,
    trust_project: bool = False,
    mcp: bool = False,
) -> tuple[Path, Plan, Path | None]:
    """The file `hook install HARNESS` edits, its planned change (nothing written) and
    the hook command it names.

    A project install of any harness but Claude Code (which has a per-person file) names
    the hook command by `~/…` when it lies in the home folder: files teams commit name
    no one's home.
    """
    from active_memory.hooks.installers.command_path import portable_script
    from active_memory.hooks.paths import DEFAULT_PORT

    notes: list[str] = []
    if script is not None and where == "project" and harness != "claude":
        script, portable_note = portable_script(script, env)
        if portable_note:
            notes.append(portable_note)
    path = installers.target_path(harness, where, cwd, env)
    change = installers.plan(
        harness, path, install=install, http=http, port=port or DEFAULT_PORT, script=script,
        env=env, trust_project=trust_project, where=where, mcp=mcp,
    )  # fmt: skip
    change.notes[:0] = notes
    return path, change, script


def prepare(
    chosen: Sequence[Harness],
    where: Where,
    cwd: Path,
    binaries: Mapping[Harness, str | None],
    *,
    script: Path,
    env: Mapping[str, str] | None = None,
    trust_project: bool = False,
) -> SetupPlan:
    """The install of every harness in `chosen`, planned; nothing is written.

    Raises `UsageError` naming every harness whose configuration cannot take the hooks
    (a file that is not valid JSON, not ours, unreadable), so that nothing is installed
    until each can be.
    """
    from active_memory.errors import ActiveMemoryError
    from active_memory.hooks.plugin_presence import plugin_in_use

    if trust_project and (where != "project" or "codex" not in chosen):
        raise UsageError("--trust-project: only with --project, for Codex")
    setup = SetupPlan(where, script)
    problems: dict[Harness, str] = {}
    for harness in chosen:
        plugin = plugin_in_use(harness, env)
        if plugin is not None:
            path = installers.target_path(harness, where, cwd, env)
            skipped = Plan([], _both_notes(harness, cwd, env))
            setup.harnesses.append(HarnessSetup(harness, binaries.get(harness), path, skipped,
                                                skipped=plugin))  # fmt: skip
            continue
        try:
            path, change, _ = plan_install(
                harness, where, cwd, script, env=env,
                trust_project=trust_project and harness == "codex",
            )  # fmt: skip
        except ActiveMemoryError as exc:
            problems[harness] = f"{NAMES[harness]}: {exc}"
            continue
        setup.harnesses.append(HarnessSetup(harness, binaries.get(harness), path, change))
    if problems:
        others = [item.harness for item in setup.harnesses]
        rest = (f"; or set up the others only: `active-memory setup {' '.join(others)}`"
                if others else "")  # fmt: skip
        listed = "\n  ".join(problems.values())
        raise UsageError(
            f"setup wrote nothing:\n  {listed}\nfix that file (or move it away) and run "
            f"`active-memory setup` again{rest}"
        )
    return setup


def _both_notes(harness: Harness, cwd: Path, env: Mapping[str, str] | None) -> list[str]:
    """Hooks of ours installed beside the harness's plugin: each tool call runs both."""
    from active_memory.errors import ActiveMemoryError

    notes = []
    for level in ("user", "project"):
        try:
            path, removal, _ = plan_install(harness, level, cwd, None, install=False, env=env)
        except ActiveMemoryError:
            continue
        if removal.changed:
            notes.append(f"{path} holds our hooks too, so every tool call runs both: "
                         f"`active-memory hook uninstall {harness} --{level}`")  # fmt: skip
    return notes


def apply(setup: SetupPlan) -> None:
    """Write every harness's files as one change: when one cannot be written, those
    written before it are put back, and the error is raised (`OSError`)."""
    changes = [change for item in setup.harnesses for change in item.plan.changes]
    paths = [change.path for change in changes if change.changed]
    if len(set(paths)) != len(paths):  # two plans of one file: each applied on its own
        for item in setup.harnesses:
            item.plan.apply()
    else:
        Plan(changes).apply()
    if setup.changed:  # the hook's modules run once per tool call: compile them now
        from active_memory.hooks.lean import compile_hook_path

        compile_hook_path()


def next_steps(harness: Harness, binary: str | None, path: Path) -> list[str]:
    """What to do once `setup` installed `harness`'s hooks at `path` (first line: start it)."""
    command = os.path.basename(binary) if binary else BINARIES[harness]
    lines = [f"start `{command}` in a repository as usual (one already running loads the "
             "hooks at its next start): matching tool calls get their cards, and each "
             "session's end is queued for its postmortem"]  # fmt: skip
    if harness == "pi":  # contained mode loads no discovered extension
        lines.append(f"with `pi --no-extensions`, load it explicitly: -e {path}")
    return lines


@dataclass(frozen=True, slots=True)
class CommandOnPath:
    """Whether `active-memory` typed alone runs this installation, and how to make it so."""

    script: str | None
    """This installation's `active-memory` (None: none beside this interpreter)."""
    found: str | None
    """What `active-memory` on PATH is (None: nothing)."""
    hint: str | None
    """What to do when `found` is not `script` (None: nothing to do)."""

    def to_json(self) -> dict[str, Any]:
        """`{"script", "on_path", "found", "hint"}`."""
        return {"script": self.script, "on_path": self.hint is None and self.found is not None,
                "found": self.found, "hint": self.hint}  # fmt: skip


def command_on_path(env: Mapping[str, str] | None = None) -> CommandOnPath:
    """Is this installation's `active-memory` what the user's shell finds? If not, the
    command that links it into a folder of the home that is on PATH (or the advice to
    make `~/.local/bin` one)."""
    environment = os.environ if env is None else env
    beside = Path(sys.executable).parent / "active-memory"
    script = os.path.abspath(beside) if beside.is_file() else None
    search = environment.get("PATH", os.defpath)
    found = shutil.which("active-memory", path=search)
    found = os.path.abspath(found) if found else None
    if script is None:
        return CommandOnPath(None, found, None)
    if found is not None and _same_file(found, script):
        return CommandOnPath(script, found, None)
    home = os.path.abspath(environment.get("HOME") or os.path.expanduser("~"))
    folder = _home_folder_on_path(search, home)
    shown = _tilde(folder, home) if folder else "~/.local/bin"
    link = f"ln -sf {shlex.quote(script)} {shown}/active-memory"
    profile = 'in your shell\'s profile (export PATH="$HOME/.local/bin:$PATH")'
    if folder is None and _same_file(os.path.join(home, ".local", "bin", "active-memory"), script):
        hint = (f"~/.local/bin/active-memory is this installation, but ~/.local/bin is not on "
                f"PATH: a new login shell may have it; if not, add it {profile}")  # fmt: skip
    elif folder is None:
        hint = f"mkdir -p ~/.local/bin && {link}, then add ~/.local/bin to PATH {profile}"
    else:
        hint = link
    if found is not None:
        hint = f"`active-memory` on PATH is {found}, not this installation; {hint}"
    return CommandOnPath(script, found, hint)


def _same_file(first: str, second: str) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def _home_folder_on_path(search: str, home: str) -> str | None:
    """The first folder on PATH inside the home folder that exists and can be written."""
    for entry in search.split(os.pathsep):
        folder = os.path.abspath(os.path.expanduser(entry)) if entry else ""
        if (folder.startswith(home.rstrip(os.sep) + os.sep) and os.path.isdir(folder)
                and os.access(folder, os.W_OK)):  # fmt: skip
            return folder
    return None


def _tilde(folder: str, home: str) -> str:
    return "~/" + shlex.quote(os.path.relpath(folder, home))
