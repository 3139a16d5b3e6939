"""A real git checkout for tests that hash cited code (staleness, stale cards, offers)."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path


def git_checkout(root: Path, files: Mapping[str, str]) -> Path:
    """`root` made a git work tree holding `files` (path → text), every file added to the
    index so that it counts as a current file; `root` may already exist."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    return root
