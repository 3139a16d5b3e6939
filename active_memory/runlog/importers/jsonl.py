"""Reading a session log line by line, and finding the repository a session worked in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from active_memory.checkout.git import GitFailed, NotACheckout, run_git, worktree_root
from active_memory.errors import InvalidRecord, UsageError
from active_memory.runlog.importers.common import Skipped


def read_jsonl(path: str | Path, skipped: list[Skipped]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every JSON object line; bad lines go to `skipped`.

    Read through `active_memory.reader`: streamed, only `\\n` ends a line, bounded per
    line, strict JSON. Blank lines are ignored. A path that is not a readable regular
    file (missing, a folder, a FIFO) is an `InvalidRecord`.
    """
    from active_memory.reader import LineProblem, iter_json_lines

    try:
        for number, entry in iter_json_lines(path, "session log"):
            if isinstance(entry, LineProblem):
                skipped.append(Skipped(str(entry), line=number))
            elif not isinstance(entry, dict):
                skipped.append(Skipped("not a JSON object", line=number))
            else:
                yield number, entry
    except UsageError as exc:
        raise InvalidRecord(str(path), str(exc).removeprefix(f"{path}: ")) from None
    except OSError as exc:
        raise InvalidRecord(
            str(path), f"cannot read the session log: {exc.strerror or exc}"
        ) from None


def repository_of(cwd: str) -> tuple[str, str | None]:
    """(workspace root, remote URL) for a session's working folder.

    When the folder still exists and is inside a git working tree, the root is that
    tree's top folder and the remote is `origin` (else the first remote). Otherwise the
    recorded folder is the root and the remote is unknown.
    """
    folder = Path(cwd)
    if not folder.is_dir():
        return cwd, None
    try:
        root = worktree_root(folder)
    except (NotACheckout, GitFailed):
        return cwd, None
    try:
        remotes = run_git(root, ["remote"]).stdout.decode("utf-8", "replace").split()
        if not remotes:
            return str(root), None
        name = "origin" if "origin" in remotes else remotes[0]
        url = run_git(root, ["remote", "get-url", name]).stdout.decode("utf-8", "replace")
    except GitFailed:
        return str(root), None
    return str(root), url.strip() or None
