"""The changed code of stale lessons, added to a built maintenance task (docs/staleness.md).

`with_changed_code(task, checkout, max_bytes, offered=...)` asks the checkout which of the
batch's citations changed since publish, shows each as a diff from the recorded text to
the lines now (or the lines now, "recorded text unknown"), and shortens those views until
the task is back within its bound. Which code changed is never cut, only how much of it
is shown.
"""

from __future__ import annotations

from collections.abc import Collection

from active_memory.checkout import Checkout
from active_memory.lessons import Citation
from active_memory.specialists.tasks.model import ChangedCodeView, MaintenanceTask
from active_memory.specialists.tasks.render import rendered_size

CHANGED_LINES_SHOWN = 20
"""Lines now of a changed citation a maintenance task shows."""


CHANGED_SHOWN = 3
"""Changed citations of one lesson a maintenance task shows (the next ones come back
after a keep or an adapt has cited these again)."""


def with_changed_code(
    task: MaintenanceTask,
    checkout: Checkout,
    max_bytes: int | None = None,
    *,
    offered: Collection[str] = (),
) -> MaintenanceTask:
    """`task` with each stale lesson's changed citations: a diff from the text recorded
    at publish to the lines now, else the lines now and "recorded text unknown"
    (docs/staleness.md): maintenance judges whether the lesson still holds. Within
    `max_bytes` rendered bytes when the task was: views are shortened, and marked cut.
    A lesson of `offered` the run did not deliver is marked `offered` (it is supplied
    because its cited code changed). One pass over the batch's citations."""
    from active_memory.checkout.staleness import changed_by_key

    found = changed_by_key(checkout, {x.id: x.evidence.citations for x in task.lessons})
    lessons = []
    for lesson in task.lessons:
        changed = found.get(lesson.id, [])
        update: dict[str, object] = {}
        if changed:
            # The task shows citations without their recorded text; the store has it.
            update["cited_code_changed"] = tuple(
                _changed_view(checkout, c.citation, c.why) for c in changed[:CHANGED_SHOWN]
            )
        if lesson.id in offered and not lesson.deliveries and lesson.status == "active":
            update["offered"] = "cited code changed"
        if update:
            lesson = lesson.model_copy(update=update)
        lessons.append(lesson)
    out = task.model_copy(update={"lessons": tuple(lessons)})
    return _within(out, task, max_bytes) if max_bytes is not None else out


def _changed_view(checkout: Checkout, citation: Citation, why: str) -> ChangedCodeView:
    from active_memory.checkout.staleness import lines_now, recorded_diff

    now = lines_now(checkout, citation.path, citation.lines) if why != "file gone" else []
    if citation.excerpt is None:
        shown = tuple(now[:CHANGED_LINES_SHOWN])
        return ChangedCodeView(path=citation.path, lines=citation.lines, why=why, now=shown,
                               note="recorded text unknown")  # fmt: skip
    diff, cut = recorded_diff(citation, now)
    return ChangedCodeView(path=citation.path, lines=citation.lines, why=why, diff=tuple(diff),
                           note="diff cut" if cut else "")  # fmt: skip


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
                        "note": "recorded text unknown; cut" if view.now else "diff cut",
                    })  # fmt: skip
                views.append(view)
            lessons.append(lesson.model_copy(update={"cited_code_changed": tuple(views)}))
        task = task.model_copy(update={"lessons": tuple(lessons)})
        if not shrunk:
            break
    return task
