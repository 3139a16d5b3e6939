"""The few git queries the checkout checks need, batched and bounded in time.

Every call runs `git` as a subprocess with a timeout, without a shell, with pathspec
magic turned off (`--literal-pathspecs`, so a cited `*.py` or `:x` is a file name, never
a pattern), and with the caller's `GIT_DIR`/`GIT_WORK_TREE`/`GIT_INDEX_FILE` removed so
that a hook environment cannot point the query at another repository.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from active_memory.errors import ActiveMemoryError, UsageError

GIT_TIMEOUT_SECONDS = 20.0
"""Wall-clock bound of one git call."""

# Pathspecs go on the command line; stay far below every platform's argument limit.
_MAX_ARGUMENT_BYTES = 64 * 1024

_UNSAFE_ENVIRONMENT = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
)


class NotACheckout(UsageError):
    """The folder is not inside a git working tree (or git cannot read it)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: not a git checkout: {reason}")
        self.path = path
        self.reason = reason


class GitFailed(ActiveMemoryError):
    """A git query failed or ran past its timeout; `command` names the git subcommand."""

    def __init__(self, command: str, reason: str) -> None:
        super().__init__(f"git {command}: {reason}")
        self.command = command
        self.reason = reason


@dataclass(frozen=True, slots=True)
class GitResult:
    """Exit code and raw output of one git call."""

    returncode: int
    stdout: bytes
    stderr: str


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _UNSAFE_ENVIRONMENT}
    # Read-only queries must not take the index lock another git process may hold.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    return env


def run_git(
    cwd: Path,
    args: Sequence[str],
    *,
    timeout: float = GIT_TIMEOUT_SECONDS,
    ok_codes: tuple[int, ...] = (0,),
    stdin: bytes | None = None,
    literal: bool = True,
) -> GitResult:
    """Run `git ARGS` in `cwd`; raise `GitFailed` on a timeout or an exit not in `ok_codes`.

    `literal` (the default) turns pathspec magic off; commands that take plain path
    names rather than pathspecs (`check-ignore`) refuse that flag and pass False.
    """
    command = ["git", *(["--literal-pathspecs"] if literal else []), *args]
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=_environment(),
            input=stdin if stdin is not None else b"",
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitFailed(args[0], f"no answer within {timeout:g} s") from None
    except FileNotFoundError:
        raise GitFailed(args[0], "git is not installed or not on PATH") from None
    except OSError as exc:
        raise GitFailed(args[0], f"cannot run git: {exc.strerror or exc}") from None
    stderr = done.stderr.decode("utf-8", "replace").strip()
    if done.returncode not in ok_codes:
        raise GitFailed(args[0], stderr or f"exit code {done.returncode}")
    return GitResult(done.returncode, done.stdout, stderr)


def worktree_root(path: str | Path) -> Path:
    """The top folder of the git working tree that contains `path` (symlinks resolved)."""
    folder = Path(path)
    if not folder.is_dir():
        raise NotACheckout(str(path), "no such folder")
    try:
        result = run_git(folder, ["rev-parse", "--show-toplevel"])
    except GitFailed as exc:
        raise NotACheckout(str(path), exc.reason) from None
    top = result.stdout.decode("utf-8", "surrogateescape").strip()
    if not top:
        # A bare repository or a `.git` folder has no working tree to cite files from.
        raise NotACheckout(str(path), "no working tree (bare repository or .git folder)")
    return Path(top).resolve()


def _batches(paths: Sequence[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for path in paths:
        cost = len(path.encode("utf-8", "surrogateescape")) + 1
        if batch and size + cost > _MAX_ARGUMENT_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(path)
        size += cost
    if batch:
        yield batch


def _split_nul(output: bytes) -> set[str]:
    return {p.decode("utf-8", "surrogateescape") for p in output.split(b"\0") if p}


def list_files(root: Path, paths: Iterable[str], *, untracked: bool) -> set[str]:
    """Which of the root-relative `paths` git lists: tracked ones, or untracked non-ignored ones.

    One call per batch of at most 64 KiB of pathspecs, so the number of git processes
    grows with the total length of the paths, not with how many there are. A tracked
    file deleted from the working tree is still listed (it is in the index): callers
    check the file system too.
    """
    unique = sorted(set(paths))
    mode = ["--others", "--exclude-standard"] if untracked else ["--cached"]
    found: set[str] = set()
    for batch in _batches(unique):
        result = run_git(root, ["ls-files", "-z", *mode, "--", *batch])
        found |= _split_nul(result.stdout)
    return found & set(unique)


def ignored(root: Path, paths: Iterable[str]) -> set[str]:
    """Which of the root-relative `paths` git's ignore rules exclude."""
    unique = sorted(set(paths))
    if not unique:
        return set()
    names = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in unique)
    # One call whatever the count: the paths go through stdin. Exit code 1 only means
    # "none of these is ignored".
    result = run_git(
        root, ["check-ignore", "-z", "--stdin"], ok_codes=(0, 1), stdin=names, literal=False
    )
    return _split_nul(result.stdout) & set(unique)


def ignore_sources(root: Path, paths: Iterable[str]) -> dict[str, tuple[str, int]]:
    """For each of the root-relative `paths` that git's ignore rules exclude, the rule's
    file (root-relative, or as git names one outside the tree: `.git/info/exclude`, the
    user's excludes file) and its line number: what a person edits to change it."""
    unique = sorted(set(paths))
    if not unique:
        return {}
    # Each path also as a folder: a folder rule (`assets/`) matches a folder that is gone
    # only when it is asked as one.
    asked = [name for p in unique for name in (p, p.rstrip("/") + "/")]
    names = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in asked)
    # `--no-index`: a tracked path is matched too (the rule is what the agent met).
    result = run_git(
        root,
        ["check-ignore", "-v", "-z", "--no-index", "--stdin"],
        ok_codes=(0, 1),
        stdin=names,
        literal=False,
    )
    fields = [f.decode("utf-8", "surrogateescape") for f in result.stdout.split(b"\0")]
    found: dict[str, tuple[str, int]] = {}
    for index in range(0, len(fields) - 3, 4):
        source, line, pattern, path = fields[index : index + 4]
        path = path if path in unique else path.rstrip("/")
        # A negated rule (`!keep.me`) is the last that matched, but it un-ignores.
        if path in unique and source and line.isdigit() and not pattern.startswith("!"):
            found.setdefault(path, (source, int(line)))
    return found


RENAME_COMMITS = 500
"""Commits of HEAD's history whose renames `renames` follows (newest first)."""


def renames(root: Path, paths: Iterable[str]) -> dict[str, str]:
    """Where git says each of the root-relative `paths` went: followed through the
    renames of the last `RENAME_COMMITS` commits of HEAD, oldest first, then through the
    renames staged in the index. A path git knows no rename of is left out; so is
    everything when HEAD has no commits (the staged renames still count)."""
    wanted = set(paths)
    if not wanted:
        return {}
    log = run_git(
        root,
        ["log", "-M", "--name-status", "-z", "--format=", f"--max-count={RENAME_COMMITS}",
         "HEAD", "--"],
        ok_codes=(0, 128),  # 128: no commit yet
    )  # fmt: skip
    staged = run_git(root, ["diff", "--cached", "-M", "--name-status", "-z"])
    moves = [*reversed(_renamed_pairs(log.stdout if log.returncode == 0 else b"")),
             *_renamed_pairs(staged.stdout)]  # fmt: skip
    found: dict[str, str] = {}
    for path in wanted:
        name = path
        for old, new in moves:
            if old == name:
                name = new
        if name != path:
            found[path] = name
    return found


def _renamed_pairs(output: bytes) -> list[tuple[str, str]]:
    """The `(old, new)` renames of `--name-status -z` output, in output order."""
    tokens = [t.decode("utf-8", "surrogateescape") for t in output.split(b"\0")]
    pairs: list[tuple[str, str]] = []
    index = 0
    while index < len(tokens):
        status = tokens[index].lstrip("\n")
        if status[:1] in ("R", "C") and status[1:].isdigit():
            if status[0] == "R" and index + 2 < len(tokens):
                pairs.append((tokens[index + 1], tokens[index + 2]))
            index += 3
        elif status[:1] in ("A", "M", "D", "T", "U", "X") and len(status) == 1:
            index += 2
        else:
            index += 1  # the separator between commits
    return pairs
