"""The changed code of stale lessons, added to a built maintenance task (docs/staleness.md).

`with_changed_code(task, checkout, max_bytes, offered=...)` asks the checkout where the
batch's cited texts are now (`checkout/staleness.py: cited_now`): a changed one is shown
as a diff from the recorded text to the lines now that best match it (or the lines now,
"recorded text unknown"), a moved one by where it is now; the views are shortened until
the task is back within its bound. Which code changed is never cut, only how much of it
is shown. `recited(lesson)` is what a keep or an adapt of a supplied lesson cites again
from what its task showed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from active_memory.checkout import Checkout
from active_memory.checkout.staleness import ChangedCitation, MovedCitation
from active_memory.cited_text import NO_TEXT
from active_memory.lessons import Citation
from active_memory.specialists.tasks.model import (
    ChangedCodeView,
    MaintenanceTask,
    MovedCodeView,
    SuppliedLesson,
)
from active_memory.specialists.tasks.render import rendered_size

CHANGED_SHOWN = 3
"""Changed citations of one lesson a maintenance task shows (the next ones come back
after a keep or an adapt has cited these again)."""
MOVED_SHOWN = 16
"""Moved citations of one lesson a maintenance task shows (a keep re-pins these)."""


def with_changed_code(
    task: MaintenanceTask,
    checkout: Checkout,
    max_bytes: int | None = None,
    *,
    offered: Collection[str] = (),
) -> MaintenanceTask:
    """`task` with each lesson's changed citations (a diff from the text recorded at
    publish to the lines now that best match it, else the lines now and "recorded text
    unknown", docs/staleness.md): maintenance judges whether the lesson still holds; and
    its moved ones (where the text is now). Within `max_bytes` rendered bytes when the
    task was: views are shortened, and marked cut. A lesson of `offered` the run did not
    deliver is marked `offered` (it is supplied because its cited code changed). One
    pass over the batch's citations."""
    from active_memory.checkout.staleness import cited_now

    found = cited_now(checkout, {x.id: x.evidence.citations for x in task.lessons})
    lessons = []
    for lesson in task.lessons:
        now = found.get(lesson.id)
        update: dict[str, object] = {}
        if now is not None and now.changed:
            # The task shows citations without their recorded text; the store has it.
            update["cited_code_changed"] = tuple(
                _changed_view(checkout, c) for c in now.changed[:CHANGED_SHOWN]
            )
        if now is not None and now.moved:
            update["cited_code_moved"] = tuple(_moved_view(m) for m in now.moved[:MOVED_SHOWN])
        if lesson.id in offered and not lesson.deliveries and lesson.status == "active":
            update["offered"] = "cited code changed"
        if update:
            lesson = lesson.model_copy(update=update)
        lessons.append(lesson)
    out = task.model_copy(update={"lessons": tuple(lessons)})
    return _within(out, task, max_bytes) if max_bytes is not None else out


def _changed_view(checkout: Checkout, changed: ChangedCitation) -> ChangedCodeView:
    from active_memory.checkout.staleness import shown

    view = shown(checkout, changed)
    c = changed.citation
    lines_now = changed.region
    if changed.places and c.lines is not None:
        nearest = changed.places[0]
        lines_now = (nearest, nearest + c.lines[1] - c.lines[0])
    if c.lines is None or lines_now == c.lines:
        lines_now = None  # compared at its recorded lines
    return ChangedCodeView(
        path=c.path,
        lines=c.lines,
        why=changed.why,
        path_now=changed.path_now,
        lines_now=lines_now,
        now=view.now,
        diff=view.diff,
        note=view.note,
    )


def _moved_view(moved: MovedCitation) -> MovedCodeView:
    c, now = moved.citation, moved.now
    return MovedCodeView(
        path=c.path,
        lines=c.lines,
        path_now=now.path if now.path != c.path else None,
        lines_now=now.lines,
    )


@dataclass(frozen=True, slots=True)
class Recited:
    """What a keep or an adapt of one lesson cites again, from what its task showed:
    `exact` (moved texts at their new place, and each old place let go: `NO_TEXT`; a
    changed text compared at its own lines, cited there again) and `guessed` (the lines
    now that best match a changed text, or the nearest of several places), which a
    decision that cites the same file replaces with its own citations."""

    exact: tuple[Citation, ...] = ()
    guessed: tuple[Citation, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.exact or self.guessed)

    def with_decision(self, cited: list[Citation]) -> list[Citation]:
        """These citations and a decision's own (`cited`), the guessed ones of a file the
        decision cites left out: the specialist said where the lesson stands."""
        paths = {c.path for c in cited}
        return [*self.exact, *(c for c in self.guessed if c.path not in paths), *cited]


def recited(lesson: SuppliedLesson) -> Recited:
    """What a keep or an adapt of `lesson` cites again (`Recited`): its changed and
    moved citations as its task showed them. The publish fingerprints each anew."""
    return recited_views(lesson.cited_code_changed, lesson.cited_code_moved)


def recited_now(checkout: Checkout, citations: Sequence[Citation]) -> Recited:
    """What a keep of a lesson citing `citations` cites again, judged against `checkout`
    as it is now: the views a maintenance task would show (all of them: the person saw
    every changed citation), through the same `recited_views`."""
    from active_memory.checkout.staleness import cited_now

    now = cited_now(checkout, {"": citations}).get("")
    if now is None:
        return Recited()
    changed = [_changed_view(checkout, c) for c in now.changed]
    return recited_views(changed, [_moved_view(m) for m in now.moved])


def recited_views(
    changed_views: Sequence[ChangedCodeView], moved_views: Sequence[MovedCodeView]
) -> Recited:
    """What a keep or an adapt cites again given the changed and moved citations shown."""
    exact: list[Citation] = []
    guessed: list[Citation] = []
    for view in moved_views:
        exact.append(_let_go(view.path, view.lines))
        exact.append(Citation(path=view.path_now or view.path, lines=view.lines_now))
    for changed in changed_views:
        path_now = changed.path_now or changed.path
        in_place = changed.why == "lines changed" and changed.lines_now is None
        if not in_place or path_now != changed.path:
            exact.append(_let_go(changed.path, changed.lines))
        if in_place:
            # Compared at its recorded lines (or nothing recorded to look for: the lines
            # there, which the task showed): the lesson was judged against them.
            exact.append(Citation(path=path_now, lines=changed.lines))
        elif changed.lines_now is not None:
            guessed.append(Citation(path=path_now, lines=changed.lines_now))
    return Recited(tuple(exact), tuple(guessed))


def _let_go(path: str, lines: tuple[int, int] | None) -> Citation:
    """The citation of a place the lesson no longer stands on (`NO_TEXT`)."""
    return Citation(path=path, lines=lines, sha256=NO_TEXT)


def _within(task: MaintenanceTask, bare: MaintenanceTask, max_bytes: int) -> MaintenanceTask:
    """`task` with its changed-code views' lines halved until it fits `max_bytes` (or
    `bare`'s size, the task without them, which was fitted already). Each view keeps
    its path, lines, why and note: which code changed is never cut, only how."""
    limit = max(max_bytes, rendered_size(bare))
    while rendered_size(task) > limit:
        lessons, shrunk = [], False
        for lesson in task.lessons:
            views = []
            for view in lesson.cited_code_changed:
                if view.diff or view.now:
                    shrunk = True
                    view = view.model_copy(update={
                        "diff": view.diff[: len(view.diff) // 2],
                        "now": view.now[: len(view.now) // 2],
                        "note": _cut_note(view.note),
                    })  # fmt: skip
                views.append(view)
            lessons.append(lesson.model_copy(update={"cited_code_changed": tuple(views)}))
        task = task.model_copy(update={"lessons": tuple(lessons)})
        if not shrunk:
            return _fewer_moved(task, limit)
    return task


def _fewer_moved(task: MaintenanceTask, limit: int) -> MaintenanceTask:
    """`task` with its moved-code views halved until it fits `limit` (the diffs are
    as short as they get): a moved citation left out is re-pinned by a later keep."""
    while rendered_size(task) > limit and any(x.cited_code_moved for x in task.lessons):
        lessons = tuple(
            x.model_copy(
                update={"cited_code_moved": x.cited_code_moved[: len(x.cited_code_moved) // 2]}
            )
            for x in task.lessons
        )
        task = task.model_copy(update={"lessons": lessons})
    return task


def _cut_note(note: str) -> str:
    """A view's note once its lines were shortened: what it said, and that it was cut."""
    parts = [p for p in note.split("; ") if p and p not in ("diff cut", "cut")]
    return "; ".join([*parts, "cut" if "recorded text unknown" in parts else "diff cut"])
