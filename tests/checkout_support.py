"""A real git checkout for tests that hash cited code (staleness, stale cards, offers)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path


def git_checkout(root: Path, files: Mapping[str, str], namespace: str | None = None) -> Path:
    """`root` made a git work tree holding `files` (path → text), every file added to the
    index so that it counts as a current file; `root` may already exist. With
    `namespace` (`repo:HOST/OWNER/NAME`), its `origin` remote names that repository, so
    that the checkout holds the namespace (a lesson of it is judged against it)."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    if namespace is not None:
        with_remote(root, namespace)
    return root


def with_remote(root: Path, namespace: str) -> Path:
    """Give the checkout at `root` an `origin` remote for `namespace`."""
    url = "https://" + namespace.removeprefix("repo:") + ".git"
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", url], check=True)
    return root
