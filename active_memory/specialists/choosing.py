"""Which files a repository task shows, in what order, and how a task is fitted to the
bound on what the model receives.

- `receipt_paths`: the paths the evidence's receipts touched, the most touched first;
- `mentioned_files`: the current files the evidence's texts name (`api/schema.json`,
  `Makefile`): an agent or a reviewer pointing at a file is the best hint there is;
- `manifests`: the root's build files (`MANIFESTS`), whose commands lessons tell agents
  to run;
- `related`: which stored lessons share a touched file, folder or node with the evidence;
- `fit`: a task's views cut, deterministically, until its rendered size is in bounds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from active_memory.checkout import GitFailed
from active_memory.evidence import EvidenceItem
from active_memory.lessons import GraphScope, Lesson
from active_memory.runlog.record import RunRecord
from active_memory.specialists.authority import TaskLimits
from active_memory.specialists.views import CodeCache


def receipt_paths(items: Sequence[EvidenceItem]) -> list[str]:
    """The paths the evidence's receipts touched, the most touched first, then by name."""
    counts: dict[str, int] = {}
    for item in items:
        for receipt in item.receipts:
            for path in receipt.paths:
                counts[path] = counts.get(path, 0) + 1
    return sorted(counts, key=lambda p: (-counts[p], p))


_PATH_TOKEN = re.compile(
    r"(?<![\w/.:-])((?:[\w.-]+/)+[\w.-]+|[\w-]+\.[A-Za-z][A-Za-z0-9]{0,7}|"
    r"Makefile|GNUmakefile|Dockerfile|Justfile|justfile|Rakefile|Gemfile|Procfile)(?![\w/-])"
)
_MENTIONED_MAX = 40
MANIFESTS = (
    "Makefile",
    "GNUmakefile",
    "justfile",
    "Justfile",
    "package.json",
    "pyproject.toml",
    "tox.ini",
    "noxfile.py",
    "Cargo.toml",
    "go.mod",
    "Taskfile.yml",
)
"""Files at the root that say how the repository is built, tested and run: shown to a
repository task after the files the evidence or the lessons name (when current, within
the bound), since its commands are what lessons tell agents to run."""


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
            for match in _PATH_TOKEN.finditer(record.completions.get(ref.execution, "")):
                found.setdefault(match.group(1).rstrip("."), None)
    wanted = list(found)[:_MENTIONED_MAX]
    if not wanted:
        return []
    try:
        verdicts = cache.verdicts(wanted)
    except GitFailed:
        return []
    return [p for p in wanted if verdicts[p].current]


def related(
    lessons: Sequence[Lesson], paths: Sequence[str], nodes: Sequence[str]
) -> dict[str, int]:
    """Rank of each lesson that shares a touched file or folder, or a node, with the
    evidence (0 first); unrelated lessons are not in the map."""
    touched = set(paths)
    folders = {p.rpartition("/")[0] for p in paths}
    rank: dict[str, int] = {}
    for lesson in lessons:
        if isinstance(lesson.scope, GraphScope):
            if lesson.scope.node in nodes:
                rank[lesson.id] = 0
        elif touched & set(lesson.associations.files):
            rank[lesson.id] = 0
        elif folders & {f.strip("/") for f in lesson.associations.folders}:
            rank[lesson.id] = 1
    return rank


_T = TypeVar("_T")
_FIT_ROUNDS = 4


def fit(
    assemble: Callable[[int, int, int], _T],
    size: Callable[[_T], int],
    max_bytes: int | None,
    limits: TaskLimits,
    listed: int,
) -> _T:
    """The task `assemble(completion_budget, file_budget, kept)` makes, cut until its
    rendered size is within `max_bytes`: first the completion and file budgets, then the
    list of lessons it only names (`others`, or discovery's scope lessons: `kept` of
    `listed`). When even the lessons it must show are over the bound, the smallest task.
    Deterministic: the same inputs always give the same budgets."""
    full = assemble(limits.completions_total_bytes, limits.files_total_bytes, listed)
    if max_bytes is None or size(full) <= max_bytes:
        return full
    kept = listed
    bare = assemble(0, 0, kept)
    if size(bare) > max_bytes:
        low, high = 0, listed  # the most names that fit: binary search, a few renders
        while low < high:
            middle = (low + high + 1) // 2
            if size(assemble(0, 0, middle)) <= max_bytes:
                low = middle
            else:
                high = middle - 1
        kept = low
        bare = assemble(0, 0, kept)
    room = max_bytes - size(bare)
    if room <= 0:
        return bare
    completions = min(limits.completions_total_bytes, room // 3)
    files = min(limits.files_total_bytes, room - completions)
    for _ in range(_FIT_ROUNDS):
        task = assemble(completions, files, kept)
        excess = size(task) - max_bytes
        if excess <= 0:
            return task
        # Escapes and per-item metadata make a budget cost a little more than its bytes.
        cut = excess + excess // 4 + 64
        taken = min(files, cut)
        files -= taken
        completions = max(0, completions - (cut - taken))
    return bare
