"""The hook command an installer writes: one that runs from the harness, whatever its PATH.

A harness runs hook commands through its own shell with its own PATH, which rarely holds a
virtual environment's `bin/`. So installers write an absolute path. By default it is the
lean hook entry (hooks/lean.py), written at every install to
`<state dir>/active-memory/bin/active-memory-hook` for the interpreter running the
installer: pip's console script imports `re` before our code, which costs each tool call
about 10 ms (bench/README.md). When that file cannot be written, the installer falls back
to pip's console script next to the interpreter (a `.venv/bin/active-memory hook install`
writes `.venv/bin/active-memory-hook`), else the one on PATH, and says so in a note; when
neither exists, installing would write a command that fails on every tool call, silently,
so it is a `UsageError` (exit 2) saying what to do instead.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from active_memory.errors import UsageError

SCRIPT = "active-memory-hook"


def find_hook_script(override: str | None = None) -> Path:
    """The absolute path of the `active-memory-hook` console script to write.

    `override` (`--hook-command PATH`) must name an executable file. Otherwise: the
    script next to `sys.executable` (not resolved: a venv's `python` is a symlink to the
    base interpreter, whose folder has no script of ours), then `active-memory-hook` on
    PATH. Raises `UsageError` when none is found.
    """
    if override:
        path = Path(override).expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise UsageError(
                f"--hook-command {override}: not an executable file; "
                f"give the path of the {SCRIPT} console script"
            )
        return path
    names = [SCRIPT + ".exe", SCRIPT] if sys.platform == "win32" else [SCRIPT]
    folder = Path(sys.executable).parent
    for name in names:
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return Path(os.path.abspath(candidate))
    found = shutil.which(SCRIPT)
    if found:
        return Path(os.path.abspath(found))
    from active_memory.install_source import install_command

    raise UsageError(
        f"cannot find the {SCRIPT} console script next to {sys.executable} or on PATH, so "
        "the hook would not run from the harness; nothing was written. Reinstall "
        f"active-memory into this environment ({install_command()}) or pass "
        f"--hook-command /absolute/path/to/{SCRIPT}"
    )


ENTRY_FOLDER = "bin"
"""Under `<state dir>/active-memory/`: the lean entry's folder."""


def lean_entry_path(env: Mapping[str, str] | None = None) -> Path:
    """Where `hook install` writes the lean entry: `<state dir>/active-memory/bin/…`."""
    from active_memory.hooks.lean import ENTRY_NAME
    from active_memory.store.location import state_dir

    return Path(os.path.abspath(state_dir(env))) / ENTRY_FOLDER / ENTRY_NAME


def install_hook_entry(
    override: str | None, *, write: bool, env: Mapping[str, str] | None = None
) -> tuple[Path, str | None]:
    """The hook executable to write into the harness's config, and a note (or None).

    `override` (`--hook-command`) wins as is. Otherwise the lean entry, (re)written now
    when `write` (a dry run only names it); if it cannot be written, pip's console script
    with a note saying why.
    """
    if override:
        return find_hook_script(override), None
    entry = lean_entry_path(env)
    if not write:
        return entry, None
    from active_memory.hooks.lean import write_entry

    if not (os.path.isfile(sys.executable) and os.access(sys.executable, os.X_OK)):
        reason = f"this interpreter {sys.executable} is not an executable file"
    else:
        try:
            return write_entry(entry.parent), None
        except OSError as exc:
            reason = exc.strerror or str(exc)
    console = find_hook_script(None)
    return console, (
        f"could not write the lean hook entry {entry} ({reason}); the hooks run pip's "
        f"console script {console} instead, which starts slower (docs/harnesses.md)"
    )


def shell_command(script: Path, *arguments: str) -> str:
    """`script arguments…` as a shell command line (the path quoted only when needed; a
    `~/…` path keeps its tilde unquoted, so each user's shell expands it)."""
    if sys.platform == "win32":  # pragma: no cover - cmd.exe quoting
        text = str(script)
        quoted = f'"{text}"' if " " in text else text
        return " ".join([quoted, *arguments])
    text = str(script)
    first = "~/" + shlex.quote(text[2:]) if text.startswith("~/") else shlex.quote(text)
    return " ".join([first, *(shlex.quote(a) for a in arguments)])


def portable_script(script: Path, env: Mapping[str, str] | None = None) -> tuple[Path, str | None]:
    """The command a project install writes: `~/…` when `script` lies in the home folder,
    so a file the team commits names no one's home (each teammate's own `hook install`
    writes their lean entry at the same place); else `script` and a note saying so."""
    environment = os.environ if env is None else env
    home = os.path.abspath(environment.get("HOME") or os.path.expanduser("~"))
    text = os.path.abspath(str(script))
    if text.startswith(home.rstrip(os.sep) + os.sep):
        return Path("~") / os.path.relpath(text, home), None
    return script, (
        f"the project's hook files name {script}, a path of this machine outside your home "
        "folder: teammates need the same path, or install with --user"
    )


def command_executable(command: str) -> str | None:
    """The executable a hook command line runs (its first word), or None if unreadable."""
    try:
        words = shlex.split(command, posix=sys.platform != "win32")
    except ValueError:
        return None
    return words[0] if words else None


def resolves(command: str, path_env: str | None = None) -> bool:
    """True when the command's executable exists: an absolute path that is an executable
    file, or a bare name found on `path_env` (default: this process's PATH)."""
    executable = command_executable(command)
    if not executable:
        return False
    expanded = os.path.expanduser(executable)
    if os.path.isabs(expanded) or os.sep in expanded:
        return os.path.isfile(expanded) and os.access(expanded, os.X_OK)
    return shutil.which(expanded, path=path_env) is not None
