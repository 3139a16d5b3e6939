"""Reading a session log line by line, and finding the repository a session worked in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from active_memory.checkout.git import GitFailed, NotACheckout, run_git, worktree_root
from active_memory.errors import InvalidRecord
from active_memory.runlog.importers.common import Skipped


def read_jsonl(path: str | Path, skipped: list[Skipped]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every JSON object line; bad lines go to `skipped`.

    Blank lines are ignored. A file that cannot be read at all is an `InvalidRecord`.
    """
    try:
        with Path(path).open("rb") as handle:
            yield from _entries(handle, skipped)
    except OSError as exc:
        raise InvalidRecord(
            str(path), f"cannot read the session log: {exc.strerror or exc}"
        ) from None


def _entries(handle: BinaryIO, skipped: list[Skipped]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, raw in enumerate(handle, start=1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            skipped.append(Skipped("not UTF-8 text", line=number))
            continue
        except json.JSONDecodeError as exc:
            skipped.append(Skipped(f"not JSON: {exc.msg} at column {exc.colno}", line=number))
            continue
        except RecursionError:
            skipped.append(Skipped("JSON nested too deeply", line=number))
            continue
        if not isinstance(entry, dict):
            skipped.append(Skipped("not a JSON object", line=number))
            continue
        yield number, entry


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
