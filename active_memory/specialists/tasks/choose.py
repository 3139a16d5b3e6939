"""Choosing what a task shows within its bound: pure functions over what was gathered.

- `evidence_views`: the evidence items with bounded receipts and, under each, the
  completions of its executions within a budget of text; the repeated-failure items
  (episodes) and their calls within a budget of their own (`episodes_within`);
- `failure_views`: maintenance's failures concerning its lessons within that budget;
- `file_views`: the gathered files as numbered lines within a budget of rendered bytes;
- `scope_lessons_within`: discovery's scope lessons within their count and byte bounds;
- `fit`: a task's `Budgets` cut, deterministically, until its rendered size is in bounds.

Nothing here reads a file or asks git: the same gathered material and bound always give
the same task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, TypeVar

from pydantic import BaseModel

from active_memory.evidence import EvidenceItem
from active_memory.evidence.model import FailureResolution
from active_memory.runlog.record import RunRecord
from active_memory.specialists.tasks.bound import TaskLimits, cut_utf8
from active_memory.specialists.tasks.gather_failures import Episode, RunFailure
from active_memory.specialists.tasks.gather_files import FileCandidate
from active_memory.specialists.tasks.gather_run import executions_of
from active_memory.specialists.tasks.model import (
    CompletionView,
    EvidenceView,
    FileAuthority,
    ScopeLesson,
)
from active_memory.specialists.tasks.model_failures import (
    FailedCallView,
    FailureGroupView,
    RunFailureView,
)
from active_memory.specialists.tasks.render import line_cost, numbered_lines

_E = TypeVar("_E")

# Below this many rendered bytes a file is listed as omitted rather than shown as a stub.
_MIN_SHOWN_BYTES = 256


def evidence_views(
    record: RunRecord,
    items: Sequence[EvidenceItem],
    limits: TaskLimits,
    budget: int,
    *,
    episodes: Mapping[str, Episode] | None = None,
    failure_budget: int = 0,
) -> tuple[tuple[EvidenceView, ...], int]:
    """`items` with bounded receipts and, under each, the completions of its executions
    within `budget` bytes of text (and `completions_total_bytes`); the repeated-failure
    items with their calls (`episodes`), chosen within `failure_budget` rendered bytes
    (`episodes_within`). Returns the views, in the items' order, and how many
    repeated-failure items did not fit."""
    chosen = episodes_within(items, episodes or {}, failure_budget)
    left = min(budget, limits.completions_total_bytes)
    seen: set[str] = set()
    views: list[EvidenceView] = []
    omitted = 0
    for item in items:
        episode = (episodes or {}).get(item.id)
        data = item.model_dump()
        if item.kind == "tool_failures":
            if item.id not in chosen:
                omitted += 1
                continue
            data.update(chosen[item.id])
        receipts = item.receipts
        dropped = 0
        if len(receipts) > limits.receipts_max:
            head = (limits.receipts_max + 1) // 2
            kept = receipts[:head] + receipts[len(receipts) - (limits.receipts_max - head) :]
            dropped = len(receipts) - len(kept)
            receipts = kept
        completions: list[CompletionView] = []
        executions = episode.executions if episode is not None else sorted(set(executions_of(item)))
        for execution, node in executions:
            text = record.completions.get(execution)
            if text is None or execution in seen or left <= 0:
                continue
            seen.add(execution)
            kept_text, cut = cut_utf8(text, min(limits.completion_bytes, left))
            left -= len(kept_text.encode("utf-8"))
            completions.append(
                CompletionView(execution=execution, node=node, text=kept_text, truncated=cut)
            )
        data.update(receipts=receipts, receipts_omitted=dropped, completions=tuple(completions))
        views.append(EvidenceView.model_validate(data))
    return tuple(views), omitted


# --- the run's failed calls ---------------------------------------------------------------

GROUPS_SHOWN = 8
"""Groups (normalised errors) of one repeated-failure item a task shows: the most frequent."""
NOT_COUNTED_SHOWN = 8
"""Failures of an item that did not count on their own shown: the first and the latest."""


def _cost(model: BaseModel) -> int:
    """Rendered bytes of one entry of a list in the task's JSON (and its comma)."""
    return len(model.model_dump_json().encode("utf-8")) + 1


def _spent(
    bare: Sequence[int], calls: Sequence[Sequence[int]], order: Sequence[int], budget: int
) -> dict[int, set[int]]:
    """Which units (an episode, a failure) and which of their calls fit `budget`: first
    each unit with its first call only (`bare` costs and `calls[u][0]`: a failure shown
    without the call that failed says nothing of what was run), in priority `order`, as
    many as fit (`floor` is what the cheapest of them needs); then their other calls
    (`calls[u]`: costs in display order), shared out smallest need first, each unit
    given at most an equal share of what is left, its latest and next calls taken in
    turn. Returns each chosen unit's kept call indices."""
    left = budget
    chosen: dict[int, set[int]] = {}
    for unit in order:
        first = calls[unit][0] if calls[unit] else 0
        if bare[unit] + first <= left:
            chosen[unit] = {0} if calls[unit] else set()
            left -= bare[unit] + first
    by_need = sorted(chosen, key=lambda u: (sum(calls[u]), u))
    for position, unit in enumerate(by_need):
        share = left // (len(by_need) - position)
        costs = calls[unit]
        front, back, used = 1, len(costs) - 1, 0
        take_front = False  # the first is in: the latest next
        while front <= back:
            index = front if take_front else back
            if used + costs[index] > share:
                break
            chosen[unit].add(index)
            used += costs[index]
            if take_front:
                front += 1
            else:
                back -= 1
            take_front = not take_front
        left -= used
    return chosen


def floor(bare: Sequence[int], calls: Sequence[Sequence[int]]) -> int:
    """What the cheapest unit needs shown with its first call (`_spent`'s costs): the
    failure budget below which no unit is shown (0 without units)."""
    return min((b + (c[0] if c else 0) for b, c in zip(bare, calls, strict=True)), default=0)


def _first_and_latest(entries: Sequence[_E], shown: int) -> tuple[tuple[_E, ...], int]:
    """At most `shown` of `entries`: the first half and the latest; and how many are out."""
    if len(entries) <= shown:
        return tuple(entries), 0
    head = (shown + 1) // 2
    return (*entries[:head], *entries[len(entries) - (shown - head) :]), len(entries) - shown


class _Units(NamedTuple):
    """The repeated-failure items of a task as `_spent` units: each item, its bare cost,
    its calls in time order (group, index, call) and the groups and fields it shows."""

    items: list[EvidenceItem]
    bare: list[int]
    calls: list[list[tuple[int, int, FailedCallView]]]
    parts: list[tuple[list[int], dict[str, object]]]

    def costs(self) -> list[list[int]]:
        """Each unit's call costs, in display order."""
        return [[_cost(c) for _, _, c in cs] for cs in self.calls]


def _episode_units(items: Sequence[EvidenceItem], episodes: Mapping[str, Episode]) -> _Units:
    units = _Units([item for item in items if item.kind == "tool_failures"], [], [], [])
    for item in units.items:
        episode = episodes.get(item.id)
        grouped: tuple[tuple[FailedCallView, ...], ...] = episode.calls if episode else ()
        ranked = sorted(range(len(item.failures)), key=lambda g: (-item.failures[g].count, g))
        kept = sorted(ranked[:GROUPS_SHOWN])
        not_counted, not_counted_omitted = _first_and_latest(item.not_counted, NOT_COUNTED_SHOWN)
        fields: dict[str, object] = {
            "groups_omitted": len(item.failures) - len(kept),
            "not_counted": not_counted,
            "not_counted_omitted": not_counted_omitted,
            "edited_before_resolution": episode.edited if episode is not None else (),
        }
        of_unit = [(g, i, c) for g in kept if g < len(grouped) for i, c in enumerate(grouped[g])]
        units.calls.append(sorted(of_unit, key=lambda gic: (gic[2].at, gic[0], gic[1])))
        units.parts.append((kept, fields))
        own = _own_resolutions(item, episode)
        groups = tuple(
            FailureGroupView(
                **item.failures[g].model_dump(),
                calls_omitted=len(grouped[g]) if g < len(grouped) else 0,
                resolution=own[g],
            )
            for g in kept
        )
        data = {**item.model_dump(), **fields, "failures": groups}
        units.bare.append(_cost(EvidenceView.model_validate(data)))
    return units


def episodes_floor(items: Sequence[EvidenceItem], episodes: Mapping[str, Episode]) -> int:
    """The failure budget below which `episodes_within` shows no repeated-failure item
    (the cheapest with its first call)."""
    units = _episode_units(items, episodes)
    return floor(units.bare, units.costs())


def episodes_within(
    items: Sequence[EvidenceItem], episodes: Mapping[str, Episode], budget: int
) -> dict[str, dict[str, object]]:
    """The repeated-failure items of `items` that fit `budget` rendered bytes, each with
    the fields its view shows (`failures` as `FailureGroupView`s with the calls that fit,
    `groups_omitted`, `not_counted` and `not_counted_omitted`): the items first with
    their first call only, the costliest episodes first (most failures, then the longest
    to resolve), then their other calls (`_spent`). Returns the chosen items' fields by
    item ID."""
    units = _episode_units(items, episodes)
    order = sorted(
        range(len(units.items)),
        key=lambda u: (-units.items[u].count, -(units.items[u].seconds_to_resolution or 0.0), u),
    )
    chosen = _spent(units.bare, units.costs(), order, budget)
    found: dict[str, dict[str, object]] = {}
    for unit, kept_calls in chosen.items():
        item, (kept, fields) = units.items[unit], units.parts[unit]
        shown = {units.calls[unit][i][:2] for i in kept_calls}
        episode = episodes.get(item.id)
        views: list[FailureGroupView] = []
        for g in kept:
            of_group = episode.calls[g] if episode is not None and g < len(episode.calls) else ()
            visible = tuple(c for i, c in enumerate(of_group) if (g, i) in shown)
            views.append(
                FailureGroupView(
                    **item.failures[g].model_dump(),
                    calls=visible,
                    calls_omitted=len(of_group) - len(visible),
                    resolution=_own_resolutions(item, episode)[g],
                )
            )
        found[item.id] = {**fields, "failures": tuple(views)}
    return found


def _own_resolutions(item: EvidenceItem, episode: Episode | None) -> list[FailureResolution | None]:
    """Per group of `item`, what resolved it when that is not the item's resolution."""
    found: list[FailureResolution | None] = []
    for g in range(len(item.failures)):
        own = (
            episode.resolutions[g] if episode is not None and g < len(episode.resolutions) else None
        )
        found.append(own if own is not None and own != item.resolution else None)
    return found


def failures_floor(failures: Sequence[RunFailure]) -> int:
    """The failure budget below which `failure_views` shows no failure."""
    return floor([_cost(_bare_failure(f)) for f in failures],
                 [[_cost(c) for c in f.calls] for f in failures])  # fmt: skip


def _bare_failure(failure: RunFailure) -> RunFailureView:
    return RunFailureView(
        id=failure.id,
        family=failure.family,
        error=failure.error,
        count=failure.count,
        exit_codes=failure.exit_codes,
        calls_omitted=len(failure.calls),
        resolution=failure.resolution,
        evidence=failure.evidence,
    )


def failure_views(
    failures: Sequence[RunFailure], budget: int
) -> tuple[tuple[RunFailureView, ...], int]:
    """Maintenance's failures concerning its lessons that fit `budget` rendered bytes:
    each first without its calls (the most failed first), then their calls (`_spent`).
    Returns the views in their order (by ID) and how many did not fit."""
    bare = [_bare_failure(f) for f in failures]
    order = sorted(range(len(failures)), key=lambda u: (-failures[u].count, u))
    costs = [[_cost(c) for c in f.calls] for f in failures]
    chosen = _spent([_cost(b) for b in bare], costs, order, budget)
    views = []
    for unit in sorted(chosen):
        calls = tuple(c for i, c in enumerate(failures[unit].calls) if i in chosen[unit])
        update = {"calls": calls, "calls_omitted": len(failures[unit].calls) - len(calls)}
        views.append(bare[unit].model_copy(update=update))
    return tuple(views), len(failures) - len(views)


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


class Budgets(NamedTuple):
    """What a task may spend, in rendered bytes (`completions`, `files`, `failures`) and
    in lessons it only names (`listed`): what `fit` hands a builder's `assemble`."""

    completions: int
    files: int
    failures: int
    listed: int


def fit(
    assemble: Callable[[Budgets], _T],
    size: Callable[[_T], int],
    max_bytes: int | None,
    limits: TaskLimits,
    listed: int,
    failures_floor: int = 0,
) -> _T:
    """The task `assemble(budgets)` makes, cut until its rendered size is within
    `max_bytes`: first the list of lessons it only names (`others`, or discovery's scope
    lessons: `listed` of them) when even the task without views is over; then the room
    left goes to the run's failed calls first (what they need, at most half of it, but at
    least `failures_floor` when the room allows: one failure with its first call), a
    third of the rest to completions and the remainder to files, which are cut first,
    then completions, then failures, until it fits. When even the lessons it must show
    are over the bound, the smallest task. Deterministic: the same inputs always give the
    same budgets."""
    full = assemble(
        Budgets(
            limits.completions_total_bytes,
            limits.files_total_bytes,
            limits.failures_total_bytes,
            listed,
        )
    )
    if max_bytes is None or size(full) <= max_bytes:
        return full
    kept = listed
    bare = assemble(Budgets(0, 0, 0, kept))
    if size(bare) > max_bytes:
        low, high = 0, listed  # the most names that fit: binary search, a few renders
        while low < high:
            middle = (low + high + 1) // 2
            if size(assemble(Budgets(0, 0, 0, middle))) <= max_bytes:
                low = middle
            else:
                high = middle - 1
        kept = low
        bare = assemble(Budgets(0, 0, 0, kept))
    room = max_bytes - size(bare)
    if room <= 0:
        return bare
    needed = size(assemble(Budgets(0, 0, limits.failures_total_bytes, kept))) - size(bare)
    # A failure budget is spent by the entries' own JSON (`_cost`), which can be a little
    # more than what they add to the rendered task: when all of them fit, that slack is
    # theirs too (the rounds below measure the task as rendered).
    failures = min(max(needed, 0), room // 2)
    if failures == needed > 0:
        failures += needed // 4 + 64
    elif failures < failures_floor <= room:
        failures = failures_floor
    rest = room - failures
    completions = min(limits.completions_total_bytes, rest // 3)
    files = min(limits.files_total_bytes, rest - completions)
    for _ in range(_FIT_ROUNDS):
        task = assemble(Budgets(completions, files, failures, kept))
        excess = size(task) - max_bytes
        if excess <= 0:
            return task
        # Escapes and per-item metadata make a budget cost a little more than its bytes.
        cut = excess + excess // 4 + 64
        for_files = min(files, cut)
        files -= for_files
        for_completions = min(completions, cut - for_files)
        completions -= for_completions
        failures = max(0, failures - (cut - for_files - for_completions))
    return bare
