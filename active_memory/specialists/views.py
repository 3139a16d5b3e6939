"""The parts of a task that show the run and the code: evidence items with the final texts
of their executions underneath, bounded views of current files with a `git ls-files`
excerpt around them, the lessons of a scope, and a deferred lesson's deferral.

Everything here is bounded (`TaskLimits`) and deterministic: it is part of a task and so
of its digest. Which evidence concerns a lesson (`concerning`) is decided here too, so
that maintenance sees the run it maintains.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from active_memory.checkout import Checkout, GitFailed
from active_memory.checkout.listing import list_folders
from active_memory.checkout.paths import folder_contains
from active_memory.evidence import EvidenceItem
from active_memory.lessons import Associations, GraphScope, Lesson
from active_memory.runlog.record import RunRecord
from active_memory.specialists.authority import FileAuthority, TaskLimits, cut_utf8, read_files


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CompletionView(_Model):
    """An execution's final text (bounded): what the agent said when it ended."""

    execution: str
    node: str
    text: str
    truncated: bool = False


class EvidenceView(EvidenceItem):
    """An evidence item with the final texts of its executions right under it.

    `receipts_omitted`: receipts left out (`TaskLimits.receipts_max`); `completions`: each
    execution's text once, under the first item that points to it.
    """

    receipts_omitted: int = 0
    completions: tuple[CompletionView, ...] = ()


class FolderListing(_Model):
    """A folder's direct entries among the checkout's current files (`git ls-files`,
    ignored files never listed); subfolders as `name/ (N files)`; `omitted` counted."""

    folder: str
    entries: tuple[str, ...]
    omitted: int = 0


class ScopeLesson(_Model):
    """An active lesson of discovery's scope: what a new proposal must not repeat."""

    id: str
    revision: int
    title: str
    node: str | None = None
    associations: Associations


class DeferralView(_Model):
    """Why and when a lesson was deferred; `age_days` counts to the end of this run."""

    reason: str
    deferred_at: str | None = None
    age_days: int | None = None


def deferral_of(reason: str, at: datetime | None, record: RunRecord) -> DeferralView:
    """A deferral's view; its age is measured against the run's last event (the task must
    not depend on the clock, or its digest would change from one minute to the next)."""
    end = max((s.at for s in record.events if s.at is not None), default=None)
    age = None
    if at is not None and end is not None:
        try:
            age = max(0, (end - at).days)
        except TypeError:  # one naive, one aware: no honest age
            age = None
    return DeferralView(
        reason=reason, deferred_at=at.isoformat() if at is not None else None, age_days=age
    )


# --- evidence --------------------------------------------------------------------------


def executions_of(item: EvidenceItem) -> list[tuple[str, str]]:
    """(execution, node) of every execution an evidence item points to."""
    refs = [*item.executions, *(r for rnd in item.rounds for r in (*rnd.prefix, *rnd.verifiers))]
    return [(ref.execution, ref.node) for ref in refs]


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


def _mentions(text: str, names: Iterable[str]) -> bool:
    return any(
        re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w-])", text) for name in names if name
    )


def concerning(lesson: Lesson, items: Sequence[EvidenceItem], record: RunRecord) -> list[str]:
    """IDs of the evidence items that concern `lesson`: for a graph lesson, those naming
    its node; for a repository lesson, those whose receipts touched its files or folders,
    or whose executions' final texts name one of its files, folders or identifiers, or
    hold every term of one of its keyword groups."""
    if isinstance(lesson.scope, GraphScope):
        node = lesson.scope.node
        return [item.id for item in items if node in item.nodes]
    files = list(lesson.associations.files)
    folders = [f.strip("/") for f in lesson.associations.folders]
    names = [*files, *folders, *lesson.associations.identifiers]
    groups = [[t.casefold() for t in group] for group in lesson.associations.keywords]
    found: list[str] = []
    for item in items:
        touched = {p for receipt in item.receipts for p in receipt.paths}
        if any(p in files or any(folder_contains(f, p) for f in folders) for p in touched):
            found.append(item.id)
            continue
        texts = [record.completions.get(execution, "") for execution, _ in executions_of(item)]
        if any(_mentions(text, names) or _has_group(text, groups) for text in texts):
            found.append(item.id)
    return found


def _has_group(text: str, groups: Sequence[Sequence[str]]) -> bool:
    words = set(re.findall(r"[\w-]+", text.casefold()))
    return any(group and all(term in words for term in group) for group in groups)


# --- code ------------------------------------------------------------------------------


def code_view(
    checkout: Checkout | None, paths: Sequence[str], limits: TaskLimits, budget: int
) -> tuple[tuple[FileAuthority, ...], tuple[FolderListing, ...]]:
    """The files `paths` (most relevant first) within `budget` rendered bytes of content,
    and the `git ls-files` excerpt of the folders that hold them."""
    files = read_files(checkout, paths, limits, budget=budget)
    return files, listings(checkout, [f.path for f in files if f.current], limits)


def listings(
    checkout: Checkout | None, paths: Sequence[str], limits: TaskLimits
) -> tuple[FolderListing, ...]:
    """The folders of `paths` (first ones first, at most `listing_folders_max`), listed;
    the root's own entries always among them (where the build and test files are)."""
    if checkout is None or not paths:
        return ()
    ordered = list(dict.fromkeys([*(p.rpartition("/")[0] for p in paths), ""]))
    wanted = ordered[: limits.listing_folders_max]
    try:
        found = list_folders(checkout.root, wanted, per_folder=limits.listing_per_folder)
    except GitFailed:  # the files themselves are still shown; a listing is a convenience
        return ()
    return tuple(
        FolderListing(folder=f.folder, entries=f.entries, omitted=f.omitted) for f in found
    )


def scope_lessons(
    living: Iterable[Lesson], *, kind: str, relevant: Mapping[str, int], limit: int
) -> tuple[ScopeLesson, ...]:
    """The active lessons of a scope, the most relevant first (`relevant`: ID → rank),
    then by ID, at most `limit`."""
    chosen = [x for x in living if x.scope.kind == kind and x.status == "active"]
    chosen.sort(key=lambda x: (relevant.get(x.id, len(relevant)), x.id))
    return tuple(
        ScopeLesson(
            id=x.id,
            revision=x.revision,
            title=x.title,
            node=x.scope.node if isinstance(x.scope, GraphScope) else None,
            associations=x.associations,
        )
        for x in chosen[:limit]
    )
