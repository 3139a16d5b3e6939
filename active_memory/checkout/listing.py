"""An excerpt of `git ls-files` around some folders of a checkout: what a specialist sees
of the files near the ones it is shown, so it can name a neighbour without guessing.

Only current files are listed: tracked ones that still exist, and untracked ones git
does not ignore (SPEC §5's rule for citable files). Ignored files never appear.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from active_memory.checkout import git


@dataclass(frozen=True, slots=True)
class FolderListing:
    """One folder's direct entries: file names, and subfolders as `name/ (N files)`.

    `omitted` counts the entries left out past the bound (the listing says so).
    """

    folder: str
    entries: tuple[str, ...]
    omitted: int = 0


def list_folders(root: Path, folders: Iterable[str], *, per_folder: int) -> list[FolderListing]:
    """The direct entries of each distinct root-relative folder ("" is the root), sorted,
    at most `per_folder` each; one `git ls-files` call per kind (tracked, untracked)."""
    wanted = sorted({f.strip("/") for f in folders})
    if not wanted:
        return []
    specs = [] if "" in wanted else wanted
    listed: set[str] = set()
    for mode in (["--cached"], ["--others", "--exclude-standard"]):
        result = git.run_git(root, ["ls-files", "-z", *mode, "--", *specs])
        listed |= {p.decode("utf-8", "surrogateescape") for p in result.stdout.split(b"\0") if p}
    found: list[FolderListing] = []
    for folder in wanted:
        prefix = f"{folder}/" if folder else ""
        files: list[str] = []
        subfolders: dict[str, int] = {}
        for path in listed:
            if not path.startswith(prefix):
                continue
            rest = path[len(prefix) :]
            name, slash, _ = rest.partition("/")
            if slash:
                subfolders[name] = subfolders.get(name, 0) + 1
            elif os.path.lexists(root / path):  # a tracked file deleted from the tree is gone
                files.append(name)
        entries = sorted(files) + [
            f"{name}/ ({count} file{'s' if count != 1 else ''})"
            for name, count in sorted(subfolders.items())
        ]
        kept = entries[:per_folder]
        found.append(FolderListing(folder, tuple(kept), len(entries) - len(kept)))
    return found
