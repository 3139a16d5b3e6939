"""A session's receipts: which workspace paths each tool call names, and the bounded
window of receipts a run record keeps (SPEC §3).

A tool's path argument becomes root-relative; a path under the user's home (`~`,
`$HOME`, …), an absolute path outside the root and a `..` escape are dropped and
counted in the import report. Receipts keep the first `KEPT_FIRST` calls and a window
of the latest, so memory stays bounded while a log streams through.
"""

from __future__ import annotations

import posixpath
import shlex
from collections import deque
from typing import Any

from active_memory.runlog.importers.report import ImportReport
from active_memory.runlog.receipts import KEPT_FIRST, MAX_RECEIPTS, relative_path

MAX_PATHS_PER_TOOL = 8

_HOME_PREFIXES = ("~", "$HOME", "${HOME}", "%USERPROFILE%", "$env:USERPROFILE")


def glob_prefix(pattern: str) -> str | None:
    """The literal path a glob pattern starts from (`src/**/*.ts` → `src`), if any."""
    parts: list[str] = []
    for part in pattern.split("/"):
        if any(ch in part for ch in "*?[{"):
            break
        parts.append(part)
    else:
        return pattern or None  # no wildcard: the pattern names a path
    return "/".join(parts) or None


def cd_targets(command: str) -> list[str]:
    """Folders a shell command changes into (`cd web && npm test` → `web`)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        tokens = list(lexer)
    except ValueError:
        return []
    targets: list[str] = []
    at_start = True
    for index, token in enumerate(tokens):
        if at_start and token == "cd" and index + 1 < len(tokens):
            target = tokens[index + 1]
            # `cd ~/x` is kept: the receipt then drops (and counts) the home path.
            if target not in ("&&", "||", ";", "|", "-"):
                targets.append(target)
        at_start = token in ("&&", "||", ";", "|", "(")
    return targets


def workspace_path(
    raw: str, folder: str | None, root: str | None, report: ImportReport
) -> str | None:
    """A tool's path argument read from `folder`, relative to the workspace `root`; None
    (and counted in `report`) when outside the workspace.

    `~`, `$HOME` and the like name the user's home, never the workspace: such paths
    are dropped, as are absolute paths outside the root and `..` escapes.
    """
    if not isinstance(raw, str) or not raw.strip():
        return None
    path = raw.strip()
    if path.startswith(_HOME_PREFIXES) or (
        not path.startswith("/") and folder and folder.startswith(_HOME_PREFIXES)
    ):
        report.paths_dropped["home"] += 1
        return None
    if not path.startswith("/") and folder:
        path = posixpath.join(folder, path)
    relative = relative_path(path, root if path.startswith("/") else None)
    if relative is None and not (root and posixpath.normpath(path) == posixpath.normpath(root)):
        report.paths_dropped["outside"] += 1  # the root itself names no file: not counted
    return relative


class Receipts:
    """The receipts kept: the first `KEPT_FIRST` and a window of the latest; the calls
    dropped between them are counted in `report.receipts_dropped`."""

    __slots__ = ("_first", "_latest", "report")

    def __init__(self, report: ImportReport) -> None:
        self.report = report
        self._first: list[dict[str, Any]] = []
        self._latest: deque[dict[str, Any]] = deque(maxlen=MAX_RECEIPTS - KEPT_FIRST)

    def add(self, receipt: dict[str, Any]) -> None:
        """Keep one call's receipt (the oldest of the window leaves when it is full)."""
        if len(self._first) < KEPT_FIRST:
            self._first.append(receipt)
        else:
            if len(self._latest) == self._latest.maxlen:
                self.report.receipts_dropped += 1
            self._latest.append(receipt)

    def kept(self) -> list[dict[str, Any]]:
        """The receipts a record keeps, in call order."""
        return [*self._first, *self._latest]
