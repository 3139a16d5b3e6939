"""Gathering a repository task's code: which files, in what order, their first bytes,
and the `git ls-files` excerpt around them. Everything git or the file system says is
asked here, once per task (git's answers once per postmortem, through `CodeCache`);
choosing what fits the bound (`choose.py`) then reads nothing.

- `receipt_paths`: the paths the evidence's receipts touched, the most touched first;
- `mentioned_files`: the current files the evidence's texts name (`api/schema.json`,
  `Makefile`): an agent or a reviewer pointing at a file is the best hint there is;
- `manifests`: the root's build files (`MANIFESTS`), whose commands lessons tell agents
  to run;
- `failure_files`: the files the run's failed tool calls and their resolutions touched;
- `read_files`: each path's verdict and first `file_bytes` bytes (`FileCandidate`), in
  groups, and the listing of their folders.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from active_memory.checkout import Checkout, CitationVerdict, GitFailed, PathStatus
from active_memory.checkout.git import ignore_sources
from active_memory.checkout.listing import list_folders
from active_memory.evidence import EvidenceItem
from active_memory.runlog.receipts import relative_path
from active_memory.runlog.record import RunRecord
from active_memory.specialists.tasks.bound import TaskLimits
from active_memory.specialists.tasks.gather_run import PATH_TOKEN, command_paths, failed_calls
from active_memory.specialists.tasks.model import FolderAuthority, FolderListing

_BINARY_SNIFF_BYTES = 8 * 1024


class CodeCache:
    """Git's answers about one checkout (citation verdicts, folder listings), kept for one
    postmortem: its batches show the same files again and again, and each answer costs a
    git process. The checkout is not expected to change while the postmortem runs."""

    def __init__(self, checkout: Checkout) -> None:
        self.checkout = checkout
        self._verdicts: dict[str, CitationVerdict] = {}
        self._listings: dict[tuple[str, int], FolderListing] = {}
        self._ignores: dict[str, tuple[str, int] | None] = {}

    def verdicts(self, paths: Sequence[str]) -> dict[str, CitationVerdict]:
        """The verdict of each path; only the ones not asked before go to git."""
        missing = [p for p in dict.fromkeys(paths) if p not in self._verdicts]
        if missing:
            self._verdicts.update(self.checkout.check_paths(missing))
        return {p: self._verdicts[p] for p in paths}

    def ignore_sources(self, paths: Sequence[str]) -> dict[str, tuple[str, int]]:
        """The ignore rule (file, line) of each of `paths` that git ignores."""
        missing = [p for p in dict.fromkeys(paths) if p not in self._ignores]
        if missing:
            found = ignore_sources(self.checkout.root, missing)
            self._ignores.update({p: found.get(p) for p in missing})
        return {p: rule for p in paths if (rule := self._ignores[p]) is not None}

    def listings(self, folders: Sequence[str], per_folder: int) -> list[FolderListing]:
        """Each folder's listing (sorted by folder); only new folders go to git."""
        wanted = list(dict.fromkeys(f.strip("/") for f in folders))
        missing = [f for f in wanted if (f, per_folder) not in self._listings]
        if missing:
            for found in list_folders(self.checkout.root, missing, per_folder=per_folder):
                self._listings[(found.folder, per_folder)] = FolderListing(
                    folder=found.folder, entries=found.entries, omitted=found.omitted
                )
        return sorted((self._listings[(f, per_folder)] for f in wanted), key=lambda x: x.folder)


def code_cache(checkout: Checkout | None, cache: CodeCache | None = None) -> CodeCache | None:
    """`cache` when it is for `checkout`, else a new one (None without a checkout)."""
    if checkout is None:
        return None
    if cache is not None and cache.checkout is checkout:
        return cache
    return CodeCache(checkout)


# --- which files -----------------------------------------------------------------------


def receipt_paths(items: Sequence[EvidenceItem]) -> list[str]:
    """The paths the evidence's receipts touched, the most touched first, then by name."""
    counts: dict[str, int] = {}
    for item in items:
        for receipt in item.receipts:
            for path in receipt.paths:
                counts[path] = counts.get(path, 0) + 1
    return sorted(counts, key=lambda p: (-counts[p], p))


_MENTIONED_MAX = 40
MANIFESTS = (
    # How the repository is built and its tasks are run.
    "Makefile",
    "GNUmakefile",
    "justfile",
    "Justfile",
    "Taskfile.yml",
    # Checks that refuse a commit before any test runs.
    ".pre-commit-config.yaml",
    "lefthook.yml",
    # JavaScript and TypeScript.
    "package.json",
    "tsconfig.json",
    "deno.json",
    "biome.json",
    # Python.
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "pytest.ini",
    "noxfile.py",
    # Rust, Go.
    "Cargo.toml",
    "go.mod",
    ".golangci.yml",
    # Elixir.
    "mix.exs",
    ".formatter.exs",
    ".credo.exs",
    # Ruby.
    "Gemfile",
    "Rakefile",
    ".rubocop.yml",
    # JVM, PHP, C and C++.
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "composer.json",
    "CMakeLists.txt",
    # The services tests need.
    "docker-compose.yml",
    "compose.yaml",
)
"""Files at the root that say how the repository is built, tested, checked and run, for
the ecosystems agents meet: shown to a repository task after the files its lessons and
the run's failures name (when current, within the bound), since their commands and
rules are what lessons tell agents to run and respect. Lock files (`mix.lock`,
`package-lock.json`, `Cargo.lock`, ...) are never among them: they say nothing an agent
acts on, and they are large."""


def manifests(cache: CodeCache | None, shown: Sequence[str]) -> list[str]:
    """The root build files of `MANIFESTS` that are current files and not in `shown`."""
    if cache is None:
        return []
    root = cache.checkout.root
    present = [m for m in MANIFESTS if m not in shown and (root / m).is_file()]
    if not present:
        return []
    try:
        verdicts = cache.verdicts(present)
    except GitFailed:
        return []
    return [m for m in present if verdicts[m].current]


def mentioned_files(
    record: RunRecord, items: Sequence[EvidenceItem], cache: CodeCache | None
) -> list[str]:
    """Current files of the checkout that the evidence's completions name (`api/x.json`,
    `Makefile.am`), in order of first mention: the agents and reviewers point at them."""
    if cache is None:
        return []
    found: dict[str, None] = {}
    for item in items:
        refs = [
            *item.executions,
            *(r for rnd in item.rounds for r in (*rnd.prefix, *rnd.verifiers)),
        ]
        for ref in refs:
            for match in PATH_TOKEN.finditer(record.completions.get(ref.execution, "")):
                found.setdefault(match.group(1).rstrip("."), None)
    wanted = list(found)[:_MENTIONED_MAX]
    if not wanted:
        return []
    try:
        verdicts = cache.verdicts(wanted)
    except GitFailed:
        return []
    return [p for p in wanted if verdicts[p].current]


_FAILURE_TOKENS_MAX = 64


def failure_files(
    record: RunRecord,
    cache: CodeCache | None,
    *,
    touching: Callable[[Sequence[str]], bool] | None = None,
) -> list[str]:
    """The files the run's failed tool calls and the calls that resolved them touched, in
    this order: the paths the failures recorded (the most failed on first, then by first
    failure), the current files their command lines name, then the same of the calls
    that resolved them. A recorded path is kept whatever its state (an ignored path is
    worth seeing as ignored); a path only a command line names, only when it is a
    current file. `touching(paths)`: keep only the failures it accepts (maintenance:
    those touching a supplied lesson's files or folders)."""
    calls = failed_calls(record)
    if not calls:
        return []
    checkout = record.repository.checkout if record.repository else None

    def recorded(paths: Sequence[str]) -> list[str]:
        return [p for p in (relative_path(x, checkout) for x in paths) if p]

    counts: dict[str, int] = {}
    named: dict[str, None] = {}
    resolved: dict[str, None] = {}
    resolved_named: dict[str, None] = {}
    for call in calls:
        own = recorded(call.paths)
        words = command_paths(call.command, call.cwd, checkout)
        if touching is not None and not touching([*own, *words]):
            continue
        for path in dict.fromkeys(own):
            counts[path] = counts.get(path, 0) + 1
        named.update(dict.fromkeys(words))
        resolved.update(dict.fromkeys(recorded(call.resolved_paths)))
        resolved_named.update(
            dict.fromkeys(command_paths(call.resolved_command, call.cwd, checkout))
        )
    words = list(dict.fromkeys([*named, *resolved_named]))[:_FAILURE_TOKENS_MAX]
    current: set[str] = set()
    if cache is not None and words:
        try:
            current = {p for p, v in cache.verdicts(words).items() if v.current}
        except GitFailed:
            current = set()
    ordered = [
        *sorted(counts, key=lambda p: -counts[p]),  # stable: the first failure first on ties
        *(p for p in named if p in current),
        *resolved,
        *(p for p in resolved_named if p in current),
    ]
    return list(dict.fromkeys(ordered))


def folders_of(checkout: Checkout | None, folders: Iterable[str]) -> tuple[FolderAuthority, ...]:
    """Whether each associated folder exists in the checkout (sorted, distinct)."""
    wanted = sorted(set(folders))
    if checkout is None:
        return tuple(FolderAuthority(path=f, exists=False) for f in wanted)
    return tuple(FolderAuthority(path=f, exists=(checkout.root / f).is_dir()) for f in wanted)


# --- reading them ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileCandidate:
    """One path a task may show, as gathered: the citation checker's verdict and, for a
    readable text file, its size and first `file_bytes` bytes (`data`; `final` when they
    are the whole file). `binary`: a NUL in the first 8 KiB."""

    path: str
    status: str
    current: bool
    reason: str
    target: str | None = None
    size: int | None = None
    data: bytes | None = None
    final: bool = False
    binary: bool = False
    group: int = 0
    """Which group of the task's files it is in (0 first): a group's files share what
    the groups before them left of the budget (`choose.file_views`)."""


@dataclass(frozen=True, slots=True)
class GatheredFiles:
    """A task's files, most relevant first, and the listing of their folders."""

    files: tuple[FileCandidate, ...] = ()
    listing: tuple[FolderListing, ...] = ()


def _candidate(
    checkout: Checkout, path: str, verdict: CitationVerdict, limit: int, group: int
) -> FileCandidate:
    base = FileCandidate(
        path=path,
        status=str(verdict.status),
        current=verdict.current,
        reason=verdict.reason,
        target=verdict.target,
        group=group,
    )
    if verdict.file is None:
        return base
    full = checkout.root / verdict.file
    try:
        size = os.stat(full).st_size
        with open(full, "rb") as handle:
            data = handle.read(max(limit, _BINARY_SNIFF_BYTES))
    except OSError as exc:
        reason = f"{path} cannot be read: {exc.strerror or exc}"
        return replace(base, current=False, reason=reason)
    if b"\0" in data[:_BINARY_SNIFF_BYTES]:
        return replace(base, size=size, binary=True)
    data = data[:limit]
    return replace(base, size=size, data=data, final=size <= len(data))


def read_files(
    checkout: Checkout | None,
    groups: Sequence[Sequence[str]],
    limits: TaskLimits,
    cache: CodeCache | None = None,
) -> GatheredFiles:
    """The files of `groups` (each the most relevant first; a path in two groups is in
    the first), each with its verdict and first bytes, and the listing of the root, the
    current ones' folders and the folders among the paths (`no_checkout` for every path
    without a checkout)."""
    group_of: dict[str, int] = {}
    for index, paths in enumerate(groups):
        for path in paths:
            group_of.setdefault(path, index)
    wanted = list(group_of)
    if checkout is None:
        reason = "no checkout to read"
        return GatheredFiles(
            tuple(FileCandidate(p, "no_checkout", False, reason, group=group_of[p]) for p in wanted)
        )
    cache = code_cache(checkout, cache)
    assert cache is not None
    verdicts = cache.verdicts(wanted) if wanted else {}
    # A folder the run touched (`ls lib`, a search's folder) is no file to show: its
    # listing is what the task shows of it.
    folders = [
        p
        for p in wanted
        if verdicts[p].status == PathStatus.NOT_A_FILE and (checkout.root / p).is_dir()
    ]
    files = tuple(
        _candidate(checkout, p, verdicts[p], limits.file_bytes, group_of[p])
        for p in wanted
        if p not in folders
    )
    current = [p for p in wanted if verdicts[p].current]
    return GatheredFiles(files, listings(cache, current, limits, folders))


def listings(
    cache: CodeCache | None,
    paths: Sequence[str],
    limits: TaskLimits,
    folders: Sequence[str] = (),
) -> tuple[FolderListing, ...]:
    """The folders of `paths`, then `folders` themselves (first ones first, at most
    `listing_folders_max` in all), listed; the root's own entries always among them
    (where the build and test files are), even when no path is given: a failure that
    touched no file still shows what the checkout holds."""
    if cache is None:
        return ()
    parents = [p.rpartition("/")[0] for p in paths]
    ordered = [f for f in dict.fromkeys([*parents, *folders]) if f]
    wanted = ["", *ordered[: max(0, limits.listing_folders_max - 1)]]
    try:
        return tuple(cache.listings(wanted, limits.listing_per_folder))
    except GitFailed:  # the files themselves are still shown; a listing is a convenience
        return ()
