"""Root-relative path arithmetic: lexical normalisation and component-aware containment."""

from __future__ import annotations

import posixpath
from pathlib import PurePosixPath


class PathProblem(ValueError):
    """A cited path that cannot name a file of the checkout; `code` says why."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def relative_to_root(cited: str, root: str, *aliases: str) -> str:
    """`cited` as a normalised POSIX path relative to `root`, or `PathProblem`.

    Relative paths are taken from the root; `..` is resolved lexically and may not leave
    the root. An absolute path must lie under `root` or one of its `aliases` (the same
    folder spelled through a symlink, e.g. `/tmp` and `/private/tmp`).
    """
    text = cited.strip()
    if not text:
        raise PathProblem("invalid", "empty path")
    if "\0" in text:
        raise PathProblem("invalid", "path contains a NUL byte")
    if text.startswith("/"):
        normal = posixpath.normpath(text)
        for base in (root, *aliases):
            base_normal = posixpath.normpath(base)
            if normal == base_normal:
                raise PathProblem("not_a_file", "the repository root is a folder, not a file")
            if normal.startswith(base_normal.rstrip("/") + "/"):
                return normal[len(base_normal.rstrip("/")) + 1 :]
        raise PathProblem("outside_root", f"absolute path outside the checkout {root}")
    normal = posixpath.normpath(text)
    if normal == "..":
        raise PathProblem("escapes_root", "`..` leaves the checkout")
    if normal.startswith("../"):
        raise PathProblem("escapes_root", "`..` leaves the checkout")
    if normal == ".":
        raise PathProblem("not_a_file", "the repository root is a folder, not a file")
    if ".git" in PurePosixPath(normal).parts:
        raise PathProblem("invalid", "a path inside .git is git's data, not a file of the checkout")
    return normal


def normalize_association(value: str) -> str | None:
    """A file or folder association as a normalised root-relative path; None if it is not one."""
    text = value.strip().rstrip("/")
    if not text or text.startswith("/") or "\0" in text:
        return None
    normal = posixpath.normpath(text)
    if normal in (".", "..") or normal.startswith("../"):
        return None
    return normal


def folder_contains(folder: str, path: str) -> bool:
    """True when root-relative `folder` contains `path`, component by component.

    `src/api` contains `src/api/x.py` and `src/api/v1/x.py`, never `src/apis/x.py` or
    `src/api` itself.
    """
    folder_parts = PurePosixPath(folder).parts
    path_parts = PurePosixPath(path).parts
    return len(path_parts) > len(folder_parts) and path_parts[: len(folder_parts)] == folder_parts
