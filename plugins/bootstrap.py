"""Set up Active Memory for a harness plugin: the package, from the plugin's own folder,
into the plugin's data folder. Standard library only: nothing of ours is installed yet.

    python3 bootstrap.py --source SOURCE --data PLUGIN_DATA [--message]
        [--after-build MODULE [--after-build-arg ARG]…]

A harness that installs plugins (Claude Code, Codex, Copilot CLI; Gemini CLI extensions)
copies or points at this repository and gives the plugin a data folder of its own (the
plugin's launchers say which: docs/plugins.md). SOURCE is a folder holding
`pyproject.toml`, `README.md` and the `active_memory` package (the repository, or a
plugin folder whose links point there). At a session's start this script checks that the
data folder holds a virtual environment built from exactly this source (a fingerprint of
`pyproject.toml` and every file of the package); when it does, it returns at once.
Otherwise it builds a new environment (`pip install SOURCE[mcp]`, using whatever index,
mirror or `--find-links` pip is configured with), writes the lean hook entry, and only
then switches to it:

    DATA/venv-<fingerprint>/     the environment (its scripts name its own python)
    DATA/bin/active-memory-hook  the lean hook entry (hooks/lean.py) of that environment
    DATA/bin/active-memory       a link to that environment's `active-memory`
    DATA/current                 a link to the environment in use
    DATA/bootstrap.log           what each set-up did (kept short; what pip and a last
                                 step printed passes the source's credential screen)

A half-built environment is never used: the links change only after pip and the entry
succeeded, each with an atomic rename. Two sessions starting at once wait on one lock, so
one builds and the other finds it done. The build runs in a process of its own session,
which this one waits for: a harness that stops the hook or the MCP server that started it
(Codex stops its MCP servers when `codex exec` ends) does not stop the build, and the next
session finds it done. A failure leaves the last good environment in
place and says why; the hooks then keep running the old one (or, before the first
success, answer nothing: a hook never fails a tool call).

Exit status: 0 (also on failure: a session must start regardless), 2 for usage errors.
With `--message`, one line of JSON `{"systemMessage": …}` on stdout tells the person in
the session what happened, when something did (Claude Code shows it; a SessionStart
hook's plain stdout would reach the model instead).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

PACKAGE = "active_memory"
EXTRAS = "mcp"
LOCK_WAIT_SECONDS = 900.0
PIP_TIMEOUT_SECONDS = 840.0
LOG_KEEP_BYTES = 64 * 1024
MIN_PYTHON = (3, 11)


def fingerprint(source: Path) -> str:
    """What identifies a build: the project file and every file of the package (path,
    size, modification time). Cheap enough for every session start (a few ms)."""
    digest = hashlib.sha256()
    files = [source / "pyproject.toml"]
    package = source / PACKAGE
    for folder, dirs, names in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files.extend(Path(folder) / n for n in sorted(names) if not n.endswith(".pyc"))
    for path in files:
        stat = path.stat()
        relative = path.relative_to(source).as_posix()
        digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def current_fingerprint(data: Path) -> str | None:
    """The fingerprint of the environment in use, if it is whole."""
    try:
        target = os.readlink(data / "current")
    except OSError:
        return None
    name = Path(target).name
    if not name.startswith("venv-"):
        return None
    if not (data / name / "bin" / "active-memory").exists():
        return None
    if not (data / "bin" / "active-memory-hook").exists():
        return None
    return name.removeprefix("venv-")


@contextlib.contextmanager
def locked(path: Path, wait: float) -> Iterator[bool]:
    """Hold an exclusive lock on `path` (waiting up to `wait` s); yields whether held."""
    with open(path, "a+b") as handle:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.2)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_SCREEN: list[Callable[[str], str]] = []
"""The source's credential masking function, once `use_screen` loaded it."""


def use_screen(source: Path) -> None:
    """Load the credential screen of `source` (`active_memory.credential_gate`, standard
    library only like this script), for what a step printed (`screened`)."""
    sys.path.insert(0, str(source))
    sys.dont_write_bytecode = True  # the plugin's folder is the harness's, not ours
    try:
        from active_memory.credential_gate import mask
    except Exception:  # a broken or partial source: `screened` keeps nothing it printed
        return
    finally:
        sys.path.remove(str(source))
    _SCREEN[:] = [mask]


def screened(output: str) -> str:
    """What pip or a step printed, with every credential masked (an index URL's token,
    a key a build printed): nothing we write keeps one (docs/security.md). Without the
    source's screen, nothing of it is kept."""
    if not _SCREEN:
        return "(its output is not kept: the source's credential screen did not load)"
    return _SCREEN[0](output)


def log(data: Path, line: str) -> None:
    """Append one dated line to the log, keeping only its end."""
    path = data / "bootstrap.log"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    try:
        old = path.read_bytes()[-LOG_KEEP_BYTES:] if path.exists() else b""
        text = old + f"{stamp} {line}\n".encode("utf-8", "replace")
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_bytes(text)
        os.replace(temporary, path)
    except OSError:
        pass


def replace_link(link: Path, target: str) -> None:
    """Point `link` at `target` with one atomic rename."""
    temporary = link.with_name(f".{link.name}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    os.symlink(target, temporary)
    os.replace(temporary, link)


_PIP_BOILERPLATE = ("note: This error originates", "See above for output", "[end of output]")


def _telling_lines(output: str) -> list[str]:
    """The lines of pip's output that say what went wrong: not the blank ones, the box
    drawing around a subprocess's output, or pip's standard notes."""
    lines = [line.strip(" │╰─>╭") for line in output.splitlines()]
    return [line for line in lines if line and not any(b in line for b in _PIP_BOILERPLATE)]


def build(source: Path, data: Path, print_id: str) -> tuple[bool, str]:
    """Build `venv-<print_id>` and switch to it; (succeeded, what to tell the user)."""
    venv = data / f"venv-{print_id}"
    shutil.rmtree(venv, ignore_errors=True)  # a build killed midway is started again
    python = venv / "bin" / "python"
    steps: list[list[str]] = [
        [sys.executable, "-m", "venv", str(venv)],
        [
            str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--no-input", f"{source}[{EXTRAS}]",
        ],
        [
            str(python), "-c",
            "import sys; from pathlib import Path; from active_memory.hooks.lean import "
            "write_entry, compile_hook_path; compile_hook_path(); "
            "print(write_entry(Path(sys.argv[1])))",
            str(data / "bin"),
        ],
    ]  # fmt: skip
    for step in steps:
        try:
            done = subprocess.run(
                step, capture_output=True, text=True, timeout=PIP_TIMEOUT_SECONDS, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(venv, ignore_errors=True)
            return False, f"{Path(step[0]).name} {step[1]} …: {exc}"
        if done.returncode != 0:
            said = screened(done.stderr or done.stdout)
            tail = _telling_lines(said)[-3:]
            log(data, f"failed: {' '.join(step[:4])} …\n" + said[-4000:])
            shutil.rmtree(venv, ignore_errors=True)
            return False, " / ".join(tail) or f"exit {done.returncode}"
    replace_link(data / "bin" / "active-memory", str(venv / "bin" / "active-memory"))
    replace_link(data / "current", venv.name)
    for old in data.glob("venv-*"):
        if old.name != venv.name:
            shutil.rmtree(old, ignore_errors=True)
    queue_early_ends(data)
    return True, str(venv)


def queue_early_ends(data: Path) -> int:
    """Queue the session ends the hook launcher kept while nothing was set up (each file a
    SessionEnd payload, named `<time>.<pid>.<harness>.json`); the number queued. A payload
    the hook cannot queue stays for the next set-up; one it refuses as bad input goes."""
    folder = data / "early-session-ends"
    entry = data / "bin" / "active-memory-hook"
    queued = 0
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        harness = path.name.split(".")[-2]
        try:
            with open(path, "rb") as payload:
                done = subprocess.run(
                    [str(entry), "session-end", harness], stdin=payload,
                    capture_output=True, timeout=60, check=False,
                )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            log(data, f"early session end {path.name} not queued: {exc}")
            continue
        if done.returncode in (0, 2):
            path.unlink(missing_ok=True)
            queued += done.returncode == 0
    if queued:
        log(data, f"queued {queued} session end(s) kept before the set-up")
    return queued


def bootstrap(source: Path, data: Path) -> tuple[str, str]:
    """Make `data` hold an environment built from `source`: (status, detail), status one
    of `ready` (nothing to do), `built`, `failed`."""
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    wanted = fingerprint(source)
    if current_fingerprint(data) == wanted:
        return "ready", ""
    with locked(data / "bootstrap.lock", LOCK_WAIT_SECONDS) as held:
        if not held:
            return "failed", "another set-up has held the lock for 15 minutes"
        if current_fingerprint(data) == wanted:  # built by the session we waited for
            return "ready", ""
        started = time.monotonic()
        log(data, f"building from {source} ({wanted}) with {sys.executable}")
        ok, detail = build(source, data, wanted)
        seconds = time.monotonic() - started
        log(data, f"{'built' if ok else 'failed'} in {seconds:.0f} s: {detail}")
        return ("built", f"{seconds:.0f} s") if ok else ("failed", detail)


def after_build(data: Path, step: list[str]) -> None:
    """Run `python -m MODULE ARG…` of the new environment (a harness's own last step, e.g.
    the Codex plugin's hook trust); what it did goes to the log, a failure never undoes
    the build."""
    python = data / "current" / "bin" / "python"
    try:
        done = subprocess.run(
            [str(python), "-m", *step], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log(data, f"after the build, {step[0]} did not run: {exc}")
        return
    said = screened(done.stderr or done.stdout).strip()[-2000:]
    log(data, f"after the build, {step[0]}: exit {done.returncode}" + (f": {said}" if said else ""))


def setup(source: Path, data: Path, then: list[str] | None = None) -> tuple[str, str]:
    """`bootstrap`, with the build in a worker process of its own session that this one
    waits for (module docstring), then `then` (`after_build`): (status, detail)."""
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    if current_fingerprint(data) == fingerprint(source):
        return "ready", ""
    command = [
        sys.executable, str(Path(__file__).resolve()), "--worker",
        "--source", str(source), "--data", str(data),
    ]  # fmt: skip
    if then:
        command += ["--after-build", then[0], *(f"--after-build-arg={arg}" for arg in then[1:])]
    try:
        worker = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, start_new_session=True,
        )  # fmt: skip
        output, _ = worker.communicate()
    except OSError as exc:
        return "failed", f"could not start the set-up process: {exc}"
    try:
        status, detail = json.loads(output.strip().splitlines()[-1])
    except (ValueError, IndexError, TypeError):
        return "failed", f"the set-up process ended without a result (exit {worker.returncode})"
    return str(status), str(detail)


def _work(source: Path, data: Path, then: list[str] | None) -> int:
    """The worker: build (and `then`), then one JSON line `[status, detail]` for the
    process waiting for it."""
    try:
        status, detail = bootstrap(source, data)
    except OSError as exc:
        status, detail = "failed", f"{exc.filename or data}: {exc.strerror or exc}"
    if status == "built" and then:
        after_build(data, then)
    print(json.dumps([status, detail]))
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line; see the module docstring."""
    parser = argparse.ArgumentParser(prog="bootstrap.py", description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="the folder holding our source")
    parser.add_argument("--data", required=True, help="the plugin's data folder")
    parser.add_argument("--message", action="store_true", help="print a systemMessage JSON")
    parser.add_argument(
        "--after-build", metavar="MODULE",
        help="a module of the new environment to run after a build (python -m MODULE ARG…)",
    )  # fmt: skip
    parser.add_argument(
        "--after-build-arg", metavar="ARG", action="append", default=[],
        help="an argument for --after-build (repeatable)",
    )  # fmt: skip
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    source, data = Path(args.source).resolve(), Path(args.data)
    if not (source / "pyproject.toml").is_file() or not (source / PACKAGE).is_dir():
        print(f"bootstrap.py: {source} holds no Active Memory source", file=sys.stderr)
        return 2
    then = [args.after_build, *args.after_build_arg] if args.after_build else None
    if args.worker:
        use_screen(source)
        return _work(source, data, then)
    if sys.version_info < MIN_PYTHON:
        status, detail = (
            "failed",
            (
                f"Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer is needed; "
                f"{sys.executable} is {sys.version.split()[0]}"
            ),
        )
    else:
        try:
            status, detail = setup(source, data, then)
        except OSError as exc:
            status, detail = "failed", f"{exc.filename or data}: {exc.strerror or exc}"
    if status == "ready":
        return 0
    command = data / "bin" / "active-memory"
    if status == "built":
        text = f"Active Memory is set up ({detail}); its command is {command}"
    else:
        text = (
            f"Active Memory could not be set up: {detail}. Lessons are not delivered until "
            f"it is; the log is {data / 'bootstrap.log'}, and the next session tries again."
        )
    print(text, file=sys.stderr)
    if args.message:
        print(json.dumps({"systemMessage": text}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
