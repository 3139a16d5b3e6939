"""A selected checkout's identity (what proves the run's repository) and fingerprint.

The fingerprint covers tracked and non-ignored untracked files: each path, whether it
is executable, a symlink's target or the file's content hash. Publication compares it
and the identity with what the first call saw, so answers are never published against
a checkout that changed under them.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from active_memory.checkout.git import GitFailed, run_git
from active_memory.runlog.importers.common import namespace_from_remote


def _text(root: Path, *args: str) -> str:
    return run_git(root, list(args)).stdout.decode("utf-8", "surrogateescape")


def remote_namespaces(root: Path) -> tuple[str, ...]:
    """The `repo:…` namespaces of every remote of the checkout, sorted."""
    found: set[str] = set()
    for name in _text(root, "remote").split():
        url = _text(root, "remote", "get-url", name).strip()
        namespace = namespace_from_remote(url)
        if namespace is not None:
            found.add(namespace)
    return tuple(sorted(found))


def root_commits(root: Path, revision: str = "HEAD") -> tuple[str, ...]:
    """The root commits `revision` descends from (empty when it is not a commit here)."""
    try:
        listed = _text(root, "rev-list", "--max-parents=0", f"{revision}^{{commit}}", "--")
    except GitFailed:
        return ()
    return tuple(sorted(listed.split()))


def identity(root: Path) -> dict[str, list[str]]:
    """What identifies the checkout's repository now: remotes and root commits."""
    return {"remotes": list(remote_namespaces(root)), "roots": list(root_commits(root))}


def fingerprint(root: Path) -> str:
    """SHA-256 over tracked and non-ignored files: path, executable bit, content."""
    listed = run_git(root, ["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    paths = sorted({p for p in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if p})
    digest = hashlib.sha256()
    for path in paths:
        full = root / path
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        try:
            info = full.lstat()
        except FileNotFoundError:
            digest.update(b"missing\0")
            continue
        if stat.S_ISLNK(info.st_mode):
            digest.update(b"link\0" + os.readlink(full).encode("utf-8", "surrogateescape"))
        elif stat.S_ISREG(info.st_mode):
            digest.update(b"x\0" if info.st_mode & 0o111 else b"-\0")
            digest.update(hashlib.sha256(full.read_bytes()).digest())
        else:
            digest.update(b"other\0")
        digest.update(b"\0")
    return digest.hexdigest()
