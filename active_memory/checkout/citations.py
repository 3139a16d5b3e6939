"""Is a cited path a current file of the checkout, and does an association match it?

SPEC §5: a repository discovery must cite a *current file* (tracked, or untracked and
not ignored; through a symlink only if the canonical target is inside the root and
current too) and carry an association that matches it (the file, a containing folder,
or an identifier that occurs in it as a whole word).

`Checkout.check_paths` answers for many paths at once with a bounded number of git
calls (two `ls-files` per 64 KiB of paths and one `check-ignore`), whatever
their count. Every answer is a typed verdict that says why, never a bare bool.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO

from active_memory.checkout import git
from active_memory.checkout.identifiers import scan_identifiers
from active_memory.checkout.paths import (
    PathProblem,
    folder_contains,
    normalize_association,
    relative_to_root,
)

MAX_COUNTED_BYTES = 64 * 1024 * 1024
"""A cited file larger than this has no line count: its cited lines are not verified."""


class PathStatus(StrEnum):
    """What a cited path is in the checkout. Only `TRACKED` and `UNTRACKED` are current."""

    TRACKED = "tracked"
    UNTRACKED = "untracked"  # untracked and not ignored
    IGNORED = "ignored"
    NOT_LISTED = "not_listed"  # on disk, but git neither lists nor ignores it (nested repo)
    DELETED = "deleted"  # tracked, but gone from the working tree
    MISSING = "missing"
    NOT_A_FILE = "not_a_file"
    OUTSIDE_ROOT = "outside_root"
    ESCAPES_ROOT = "escapes_root"
    SYMLINK_ESCAPES_ROOT = "symlink_escapes_root"
    SYMLINK_NOT_CURRENT = "symlink_not_current"
    INVALID = "invalid"
    EXCLUDED = "excluded"  # the `exclude` setting names it (docs/settings.md)


CURRENT = frozenset({PathStatus.TRACKED, PathStatus.UNTRACKED})


@dataclass(frozen=True, slots=True)
class CitationVerdict:
    """The answer for one cited path.

    `path` is the normalised root-relative spelling (None when there is none); `target`
    is the canonical root-relative file when the path goes through a symlink.
    """

    cited: str
    path: str | None
    status: PathStatus
    reason: str
    target: str | None = None

    @property
    def current(self) -> bool:
        """True when the citation names a current file of the checkout."""
        return self.status in CURRENT

    @property
    def file(self) -> str | None:
        """The root-relative file whose content the citation means (the target of a link)."""
        return (self.target or self.path) if self.current else None


class MatchKind(StrEnum):
    """How an association matched a citation."""

    FILE = "file"
    FOLDER = "folder"
    IDENTIFIER = "identifier"


@dataclass(frozen=True, slots=True)
class AssociationMatch:
    """Whether one of a lesson's associations matches a cited file, and which one."""

    kind: MatchKind | None
    value: str | None
    reason: str

    @property
    def matched(self) -> bool:
        """True when some association matched."""
        return self.kind is not None


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one path needs from git once the file system has been looked at."""

    cited: str
    path: str
    query: str | None = None  # the path itself, when no symlink is on the way
    link: str | None = None  # the first symlink on the way
    target: str | None = None  # canonical root-relative target of that symlink
    missing: bool = False
    verdict: CitationVerdict | None = None  # decided without git


class Checkout:
    """One git working tree; `path` may be any folder inside it."""

    def __init__(self, path: str | Path, exclude: tuple[str, ...] | None = None) -> None:
        self.root = git.worktree_root(path)
        # Excluded paths are never current: no citation, no association, no content
        # in a specialist's task (docs/privacy.md). None: the checkout's own settings.
        self.exclude = _settings_exclude(self.root) if exclude is None else exclude
        # The root as the caller spelled it (e.g. /tmp/x for /private/tmp/x) also counts
        # for absolute citations, but a subfolder the caller named is not the root.
        given = Path(path).absolute()
        self._spellings = (str(self.root),) + (
            (str(given),) if given != self.root and given.resolve() == self.root else ()
        )

    def check_path(self, cited: str) -> CitationVerdict:
        """The verdict for one cited path (see `check_paths`)."""
        return self.check_paths([cited])[cited]

    def check_paths(self, cited: Iterable[str]) -> dict[str, CitationVerdict]:
        """A verdict per distinct cited path, with a bounded number of git calls."""
        plans = [self._plan(c) for c in dict.fromkeys(cited)]
        queries = {q for p in plans for q in (p.query, p.link, p.target) if q}
        tracked = git.list_files(self.root, queries, untracked=False)
        untracked = git.list_files(self.root, queries - tracked, untracked=True)
        on_disk_unlisted = (
            {q for p in plans for q in (p.query, p.link, p.target) if q and not p.missing}
            - tracked
            - untracked
        )
        ignored = git.ignored(self.root, on_disk_unlisted) if on_disk_unlisted else set()

        def status_of(query: str) -> PathStatus:
            if query in tracked:
                return PathStatus.TRACKED
            if query in untracked:
                return PathStatus.UNTRACKED
            if query in ignored:
                return PathStatus.IGNORED
            return PathStatus.NOT_LISTED

        verdicts = {p.cited: _decide(p, status_of) for p in plans}
        if self.exclude:
            verdicts = {cited: self._excluded(v) for cited, v in verdicts.items()}
        return verdicts

    def _excluded(self, verdict: CitationVerdict) -> CitationVerdict:
        from active_memory.exclusion import is_excluded

        hit = next(
            (p for p in (verdict.path, verdict.target) if p and is_excluded(p, self.exclude)),
            None,
        )
        if hit is None:
            return verdict
        reason = f"{hit} is excluded by the exclude setting"
        return CitationVerdict(verdict.cited, verdict.path, PathStatus.EXCLUDED, reason)

    def match_association(
        self,
        verdict: CitationVerdict,
        *,
        files: Sequence[str] = (),
        folders: Sequence[str] = (),
        identifiers: Sequence[str] = (),
    ) -> AssociationMatch:
        """Whether an association matches the cited file: itself, a folder, an identifier.

        Tried in that order (the cheap checks first); an identifier is verified by
        reading the file. A citation that is not a current file matches nothing.
        """
        if not verdict.current or verdict.path is None:
            return AssociationMatch(None, None, f"{verdict.cited}: {verdict.reason}")
        names = [n for n in (verdict.path, verdict.target) if n]
        for value in files:
            if normalize_association(value) in names:
                return AssociationMatch(MatchKind.FILE, value, f"the file {value} is cited")
        for value in folders:
            folder = normalize_association(value)
            if folder and any(folder_contains(folder, n) for n in names):
                return AssociationMatch(
                    MatchKind.FOLDER, value, f"the folder {value} contains {verdict.path}"
                )
        wanted = [i for i in identifiers if i.strip()]
        if wanted:
            scan = scan_identifiers(self.root / (verdict.target or verdict.path), wanted)
            for value in wanted:
                if value.strip() in scan.found:
                    return AssociationMatch(
                        MatchKind.IDENTIFIER, value, f"{value} occurs in {verdict.path}"
                    )
            if scan.unreadable:
                return AssociationMatch(
                    None, None, f"identifiers not verified in {verdict.path}: {scan.unreadable}"
                )
        tried = len(files) + len(folders) + len(wanted)
        if not tried:
            return AssociationMatch(None, None, "the lesson has no file, folder or identifier")
        return AssociationMatch(
            None, None, f"no file, folder or identifier association matches {verdict.path}"
        )

    def line_count(self, verdict: CitationVerdict) -> int | None:
        """How many lines the cited file has now, counted as a fingerprint splits them
        (`\n`, `\r\n`, `\r`); None when it is not a current file or cannot be read
        (a regular file only, at most `MAX_COUNTED_BYTES`)."""
        if verdict.file is None:
            return None
        from active_memory.reader import open_regular

        try:
            with open_regular(self.root / verdict.file) as handle:
                return _count_lines(handle)
        except OSError:
            return None

    # --- file-system side -------------------------------------------------------------

    def _plan(self, cited: str) -> _Plan:
        root = str(self.root)
        try:
            path = relative_to_root(cited, root, *self._spellings)
        except PathProblem as problem:
            status = PathStatus(problem.code)
            return _Plan(cited, "", verdict=CitationVerdict(cited, None, status, problem.reason))
        parts = path.split("/")
        current = self.root
        for index, part in enumerate(parts):
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                return _Plan(cited, path, query=path, missing=True)
            except NotADirectoryError:
                return self._settled(cited, path, PathStatus.MISSING, "a parent is not a folder")
            except OSError as exc:
                return self._settled(cited, path, PathStatus.MISSING, exc.strerror or str(exc))
            if stat.S_ISLNK(mode):
                return self._through_link(cited, path, "/".join(parts[: index + 1]))
            if index < len(parts) - 1 and not stat.S_ISDIR(mode):
                return self._settled(cited, path, PathStatus.MISSING, "a parent is not a folder")
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
            return self._settled(cited, path, PathStatus.NOT_A_FILE, f"{path} is {kind}")
        return _Plan(cited, path, query=path)

    def _through_link(self, cited: str, path: str, link: str) -> _Plan:
        real = Path(os.path.realpath(self.root / path))
        if not real.is_relative_to(self.root):
            return self._settled(
                cited,
                path,
                PathStatus.SYMLINK_ESCAPES_ROOT,
                f"the symlink {link} leads outside the checkout (to {real})",
            )
        if not real.exists():
            return self._settled(
                cited, path, PathStatus.MISSING, f"the symlink {link} points at nothing"
            )
        if not real.is_file():
            return self._settled(cited, path, PathStatus.NOT_A_FILE, f"{path} resolves to a folder")
        target = real.relative_to(self.root).as_posix()
        if ".git" in target.split("/"):
            return self._settled(
                cited, path, PathStatus.INVALID, f"the symlink {link} leads into .git"
            )
        return _Plan(cited, path, link=link, target=target)

    @staticmethod
    def _settled(cited: str, path: str, status: PathStatus, reason: str) -> _Plan:
        return _Plan(cited, path, verdict=CitationVerdict(cited, path, status, reason))


_EXPLAIN = {
    PathStatus.TRACKED: "tracked by git",
    PathStatus.UNTRACKED: "untracked and not ignored",
    PathStatus.IGNORED: "ignored by git",
    PathStatus.NOT_LISTED: "on disk but not part of this working tree (nested repository?)",
}


def _settings_exclude(root: Path) -> tuple[str, ...]:
    from active_memory.errors import UsageError
    from active_memory.settings import SettingsError, effective_settings

    try:
        return effective_settings(str(root), os.environ, use_env=False).exclude
    except SettingsError as exc:
        raise UsageError(f"{exc}; fix the file or move it away") from None


def _decide(plan: _Plan, status_of: Callable[[str], PathStatus]) -> CitationVerdict:
    if plan.verdict is not None:
        return plan.verdict
    if plan.query is not None:
        status = status_of(plan.query)
        if plan.missing:
            if status is PathStatus.TRACKED:
                reason = f"{plan.path} is tracked but deleted from the working tree"
                return CitationVerdict(plan.cited, plan.path, PathStatus.DELETED, reason)
            reason = f"{plan.path} does not exist in the checkout"
            return CitationVerdict(plan.cited, plan.path, PathStatus.MISSING, reason)
        return CitationVerdict(plan.cited, plan.path, status, f"{plan.path} is {_EXPLAIN[status]}")
    assert plan.link is not None and plan.target is not None
    link_status = status_of(plan.link)
    target_status = status_of(plan.target)
    if link_status not in CURRENT:
        reason = f"the symlink {plan.link} is {_EXPLAIN[link_status]}"
    elif target_status not in CURRENT:
        reason = f"its target {plan.target} is {_EXPLAIN[target_status]}"
    else:
        reason = f"{plan.path} leads to {plan.target}, {_EXPLAIN[target_status]}"
        return CitationVerdict(plan.cited, plan.path, target_status, reason, plan.target)
    return CitationVerdict(
        plan.cited, plan.path, PathStatus.SYMLINK_NOT_CURRENT, reason, plan.target
    )


def _count_lines(handle: IO[bytes]) -> int | None:
    """Lines of a stream as `bytes.splitlines` counts them, read in 1 MiB chunks; None
    past `MAX_COUNTED_BYTES`."""
    count, size, last = 0, 0, b""
    while chunk := handle.read(1024 * 1024):
        size += len(chunk)
        if size > MAX_COUNTED_BYTES:
            return None
        # A break is a \n, or a \r not followed by \n (one across chunks counts once).
        count += chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")
        if last == b"\r" and chunk[:1] == b"\n":
            count -= 1
        last = chunk[-1:]
    return count + (1 if last and last not in (b"\n", b"\r") else 0)
