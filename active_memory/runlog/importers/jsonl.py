"""Reading a session log line by line, and finding the repository a session worked in.

Session logs are read as a stream through the bounded reader: one line in memory at a
time, so a 150 MB transcript costs no more memory than a small one. A line longer than
`MAX_LINE_BYTES` is skipped (reported) without being held whole: it is read past in
chunks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from active_memory.checkout.git import GitFailed, NotACheckout, run_git, worktree_root
from active_memory.errors import InvalidRecord, RecordTooLarge, UsageError
from active_memory.runlog.importers.common import Skipped

MAX_LINE_BYTES = 8 * 1024 * 1024
"""A longer line (a tool result of many megabytes) is skipped and reported."""

MAX_LISTED_LINES = 100
"""Bad lines listed one by one per file; past that they are counted in one entry."""


def read_jsonl(path: str | Path, skipped: list[Skipped]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every JSON object line; bad lines go to `skipped`.

    Lines come from the bounded reader (`active_memory.reader`: a regular file only,
    never blocking on a FIFO; only `\\n` ends a line; strict JSON: depth, integer size,
    lone surrogates). Blank lines are ignored. A line past the reader's limits (an
    integer that does not fit 64 bits, a number out of range, nesting too deep) is a
    `RecordTooLarge` naming the file and line: no harness writes one. A file that cannot
    be read at all is an `InvalidRecord`. At most `MAX_LISTED_LINES` bad lines are
    listed; the rest are counted in one entry.
    """
    from active_memory.reader import LineProblem, iter_lines, parse_json

    overflow = _Overflow()
    try:
        for number, raw in iter_lines(path, "session log", MAX_LINE_BYTES):
            if isinstance(raw, LineProblem):
                _skip(skipped, overflow, f"line longer than {MAX_LINE_BYTES} bytes", number)
                continue
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                _skip(skipped, overflow, "not UTF-8 text", number)
                continue
            try:
                entry = parse_json(text, str(path), number)
            except RecordTooLarge as exc:
                # Not a line cut off by a crash (skipped below) but a value no harness
                # writes: the log is corrupt or crafted, and the session is not imported.
                raise RecordTooLarge(
                    str(path),
                    f"{exc.detail}: a session log line past the reader's limits; the "
                    "session is not imported (remove or fix that line)",
                    number,
                ) from None
            except InvalidRecord as exc:
                _skip(skipped, overflow, exc.detail, number)
                continue
            if not isinstance(entry, dict):
                _skip(skipped, overflow, "not a JSON object", number)
                continue
            yield number, entry
    except InvalidRecord:
        raise
    except UsageError as exc:
        raise InvalidRecord(str(path), str(exc).removeprefix(f"{path}: ")) from None
    except OSError as exc:
        raise InvalidRecord(
            str(path), f"cannot read the session log: {exc.strerror or exc}"
        ) from None
    finally:
        if overflow.count:
            skipped.append(Skipped(f"{overflow.count} more bad lines (not listed)"))


class _Overflow:
    __slots__ = ("count", "listed")

    def __init__(self) -> None:
        self.count = 0
        self.listed = 0


def _skip(skipped: list[Skipped], overflow: _Overflow, reason: str, number: int) -> None:
    if overflow.listed < MAX_LISTED_LINES:
        overflow.listed += 1
        skipped.append(Skipped(reason, line=number))
    else:
        overflow.count += 1


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
