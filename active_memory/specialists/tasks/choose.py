"""Choosing what a task shows within its bound: pure functions over what was gathered.

- `evidence_views`: the evidence items with bounded receipts and, under each, the
  completions of its executions within a budget of text;
- `file_views`: the gathered files as numbered lines within a budget of rendered bytes;
- `scope_lessons_within`: discovery's scope lessons within their count and byte bounds;
- `fit`: a task's budgets cut, deterministically, until its rendered size is in bounds.

Nothing here reads a file or asks git: the same gathered material and bound always give
the same task.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from active_memory.evidence import EvidenceItem
from active_memory.runlog.record import RunRecord
from active_memory.specialists.tasks.bound import TaskLimits, cut_utf8
from active_memory.specialists.tasks.gather_files import FileCandidate
from active_memory.specialists.tasks.gather_run import executions_of
from active_memory.specialists.tasks.model import (
    CompletionView,
    EvidenceView,
    FileAuthority,
    ScopeLesson,
)
from active_memory.specialists.tasks.render import line_cost, numbered_lines

# Below this many rendered bytes a file is listed as omitted rather than shown as a stub.
_MIN_SHOWN_BYTES = 256


def evidence_views(
    record: RunRecord, items: Sequence[EvidenceItem], limits: TaskLimits, budget: int
) -> tuple[EvidenceView, ...]:
    """`items` with bounded receipts and, under each, the completions of its executions
    within `budget` bytes of text (and `completions_total_bytes`)."""
    left = min(budget, limits.completions_total_bytes)
    seen: set[str] = set()
    views: list[EvidenceView] = []
    for item in items:
        receipts = item.receipts
        omitted = 0
        if len(receipts) > limits.receipts_max:
            head = (limits.receipts_max + 1) // 2
            kept = receipts[:head] + receipts[len(receipts) - (limits.receipts_max - head) :]
            omitted = len(receipts) - len(kept)
            receipts = kept
        completions: list[CompletionView] = []
        for execution, node in sorted(set(executions_of(item))):
            text = record.completions.get(execution)
            if text is None or execution in seen or left <= 0:
                continue
            seen.add(execution)
            kept_text, cut = cut_utf8(text, min(limits.completion_bytes, left))
            left -= len(kept_text.encode("utf-8"))
            completions.append(
                CompletionView(execution=execution, node=node, text=kept_text, truncated=cut)
            )
        data = item.model_dump()
        data.update(receipts=receipts, receipts_omitted=omitted, completions=tuple(completions))
        views.append(EvidenceView.model_validate(data))
    return tuple(views)


def file_costs(files: Sequence[FileCandidate]) -> tuple[int, ...]:
    """What each file costs shown whole (0 for one without content): its first
    `file_bytes` bytes as numbered lines, and the cut line when that is not all of it."""
    return tuple(_whole_cost(file) if file.data is not None else 0 for file in files)


def file_views(
    files: Sequence[FileCandidate],
    limits: TaskLimits,
    budget: int,
    costs: Sequence[int] | None = None,
) -> tuple[FileAuthority, ...]:
    """Each gathered file's view, in the given order, within `budget` rendered bytes of
    content (and `files_total_bytes`); `costs`: `file_costs(files)`, when the caller
    keeps them for several budgets.

    The groups (`FileCandidate.group`) are served in turn, each from what the ones before
    it left. Within a group, small files go before large ones: the files are taken from
    the smallest up, each given at most an equal share of what is left for the group's
    files not served yet, so every file that fits its share is shown whole and the large
    ones share the rest equally (cut, the cut marked). Each file is also capped by its
    first `file_bytes` bytes. When a share would be too small to show anything
    (`_MIN_SHOWN_BYTES`), the group's remaining files are served in their own order
    instead, each as much as is left, until nothing is: a current file left without
    content is `omitted`, with the reason said."""
    costs = file_costs(files) if costs is None else costs
    left = min(budget, limits.files_total_bytes)
    shown: dict[int, FileAuthority] = {}
    for group in sorted({file.group for file in files}):
        members = [i for i, file in enumerate(files) if file.group == group]
        readable = [i for i in members if files[i].data is not None]
        for i in members:
            if files[i].data is None:
                shown[i] = _bare(files[i])
        by_size = sorted(readable, key=lambda i: (costs[i], i))
        for position, i in enumerate(by_size):
            share = left // (len(by_size) - position)
            if share < _MIN_SHOWN_BYTES:
                for j in sorted(by_size[position:]):  # as many as fit, in their order
                    shown[j], left = _shown(files[j], min(left, costs[j]), left, costs[j])
                break
            shown[i], left = _shown(files[i], min(share, costs[i]), left, costs[i])
    return tuple(shown[i] for i in range(len(files)))


def _bare(file: FileCandidate) -> FileAuthority:
    return FileAuthority(
        path=file.path,
        status=file.status,
        current=file.current,
        reason=file.reason,
        target=file.target,
        size=file.size,
        binary=file.binary,
    )


def _cut_marker(size: int, shown: int) -> str:
    return f"[cut: {size - shown} more bytes of this {size}-byte file are not shown]"


def _whole_cost(file: FileCandidate) -> int:
    assert file.data is not None
    _, shown, cut, used = numbered_lines(file.data, final=file.final, budget=1 << 62)
    return used + (line_cost(_cut_marker(file.size or 0, shown)) if cut else 0)


def _shown(file: FileCandidate, allowed: int, left: int, whole: int) -> tuple[FileAuthority, int]:
    """`file` within `allowed` rendered bytes (its cut line included; `whole`: what all
    of it costs), and what is left of `left` after it."""
    base = _bare(file)
    if allowed < min(whole, _MIN_SHOWN_BYTES):
        reason = f"{file.reason}; not shown: this task's size bound is spent"
        return base.model_copy(update={"reason": reason, "omitted": True}), left
    assert file.data is not None
    size = file.size or 0
    # All of it fits: its lines (and the cut line of a file past `file_bytes`); else
    # the lines that fit beside the longest cut line this file can have.
    room = whole if allowed >= whole else max(0, allowed - line_cost(_cut_marker(size, 0)))
    lines, shown, cut, used = numbered_lines(file.data, final=file.final, budget=room)
    if cut:
        lines.append(_cut_marker(size, shown))
        used += line_cost(lines[-1])
    return base.model_copy(update={"content": tuple(lines), "truncated": cut}), left - used


def scope_lessons_within(
    lessons: Sequence[ScopeLesson], limits: TaskLimits
) -> tuple[tuple[ScopeLesson, ...], int]:
    """The first of `lessons` (in their order) that fit `scope_lessons_max` and
    `scope_lessons_bytes` (rendered), and how many are left out."""
    left = limits.scope_lessons_bytes
    kept: list[ScopeLesson] = []
    for lesson in lessons[: limits.scope_lessons_max]:
        cost = len(lesson.model_dump_json().encode("utf-8")) + 1  # and its comma
        if cost > left:
            break
        kept.append(lesson)
        left -= cost
    return tuple(kept), len(lessons) - len(kept)


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
