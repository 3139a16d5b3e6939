"""Choosing what a task shows within its bound: pure functions over what was gathered.

- `evidence_views`: the evidence items with bounded receipts and, under each, the
  completions of its executions within a budget of text;
- `file_views`: the gathered files as numbered lines within a budget of rendered bytes;
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
from active_memory.specialists.tasks.files import FileCandidate
from active_memory.specialists.tasks.gather import executions_of
from active_memory.specialists.tasks.model import CompletionView, EvidenceView, FileAuthority
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


def file_views(
    files: Sequence[FileCandidate], limits: TaskLimits, budget: int
) -> tuple[FileAuthority, ...]:
    """Each gathered file's view, in the given order, within `budget` rendered bytes of
    content (and `files_total_bytes`); a current file past the budget is `omitted`."""
    left = min(budget, limits.files_total_bytes)
    found: list[FileAuthority] = []
    for file in files:
        base = FileAuthority(
            path=file.path,
            status=file.status,
            current=file.current,
            reason=file.reason,
            target=file.target,
            size=file.size,
            binary=file.binary,
        )
        if file.data is None:
            found.append(base)
            continue
        if left < _MIN_SHOWN_BYTES:
            reason = f"{file.reason}; not shown: this task's size bound is spent"
            found.append(base.model_copy(update={"reason": reason, "omitted": True}))
            continue
        size = file.size or 0
        lines, shown, cut = numbered_lines(file.data, final=file.final, budget=left)
        if cut:
            lines.append(f"[cut: {size - shown} more bytes of this {size}-byte file are not shown]")
        left -= sum(line_cost(line) for line in lines)
        found.append(base.model_copy(update={"content": tuple(lines), "truncated": cut}))
    return tuple(found)


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
