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

from active_memory.checkout import Checkout, CitationVerdict, GitFailed
from active_memory.checkout.listing import list_folders
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


def _tokens(text: str) -> set[str]:
    """The names a text mentions: runs of word characters, `.`, `/` and `-` (a trailing
    full stop dropped), each path also by its leading folders (`a/b/c.py` names `a/b`)."""
    found: set[str] = set()
    for token in re.findall(r"[\w./-]+", text):
        token = token.rstrip(".").strip("/")
        if not token:
            continue
        found.add(token)
        parts = token.split("/")
        found.update("/".join(parts[:n]) for n in range(1, len(parts)))
    return found


class RunTexts:
    """What the final texts of each evidence item's executions mention (names and words),
    computed once per task: every lesson of a batch is matched against them."""

    def __init__(self, record: RunRecord, items: Sequence[EvidenceItem]) -> None:
        self.names: dict[str, set[str]] = {}
        self.words: dict[str, set[str]] = {}
        # The paths each item's receipts touched (every lesson of the batch asks).
        self.touched: dict[str, set[str]] = {
            item.id: {p.strip("/") for receipt in item.receipts for p in receipt.paths}
            for item in items
        }
        for item in items:
            texts = [record.completions.get(execution, "") for execution, _ in executions_of(item)]
            joined = "\n".join(texts)
            self.names[item.id] = _tokens(joined)
            self.words[item.id] = set(re.findall(r"[\w-]+", joined.casefold()))


def _inside(folder: str, path: str) -> bool:
    """`path` is `folder` or under it (both root-relative, as receipts and lessons store
    them; `folder_contains` normalises too, which costs more than a batch can afford)."""
    return not folder or path == folder or path.startswith(folder + "/")


def concerning(
    lesson: Lesson,
    items: Sequence[EvidenceItem],
    record: RunRecord,
    texts: RunTexts | None = None,
) -> list[str]:
    """IDs of the evidence items that concern `lesson`: for a graph lesson, those naming
    its node; for a repository lesson, those whose receipts touched its files or folders,
    or whose executions' final texts name one of its files, folders or identifiers, or
    hold every term of one of its keyword groups. `texts`: `RunTexts(record, items)`."""
    if isinstance(lesson.scope, GraphScope):
        node = lesson.scope.node
        return [item.id for item in items if node in item.nodes]
    texts = texts or RunTexts(record, items)
    files = list(lesson.associations.files)
    folders = [f.strip("/") for f in lesson.associations.folders]
    names = {n.strip("/") for n in (*files, *folders, *lesson.associations.identifiers)}
    groups = [[t.casefold() for t in group] for group in lesson.associations.keywords]
    found: list[str] = []
    for item in items:
        touched = texts.touched.get(item.id)
        if touched is None:  # an item the texts were not built with
            touched = {p.strip("/") for receipt in item.receipts for p in receipt.paths}
        if any(p in files or any(_inside(f, p) for f in folders) for p in touched):
            found.append(item.id)
            continue
        words = texts.words.get(item.id, set())
        if names & texts.names.get(item.id, set()) or any(
            group and all(term in words for term in group) for group in groups
        ):
            found.append(item.id)
    return found


# --- code ------------------------------------------------------------------------------


class CodeCache:
    """Git's answers about one checkout (citation verdicts, folder listings), kept for one
    postmortem: its batches show the same files again and again, and each answer costs a
    git process. The checkout is not expected to change while the postmortem runs."""

    def __init__(self, checkout: Checkout) -> None:
        self.checkout = checkout
        self._verdicts: dict[str, CitationVerdict] = {}
        self._listings: dict[tuple[str, int], FolderListing] = {}

    def verdicts(self, paths: Sequence[str]) -> dict[str, CitationVerdict]:
        """The verdict of each path; only the ones not asked before go to git."""
        missing = [p for p in dict.fromkeys(paths) if p not in self._verdicts]
        if missing:
            self._verdicts.update(self.checkout.check_paths(missing))
        return {p: self._verdicts[p] for p in paths}

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


class CodeSource:
    """The files of one task (`paths`, most relevant first) and the listing of their
    folders, asked from git once (through `cache`); `view(budget)` reads their contents
    within a budget, so fitting a task to its bound costs file reads, not git calls."""

    def __init__(
        self,
        checkout: Checkout | None,
        paths: Sequence[str],
        limits: TaskLimits,
        cache: CodeCache | None = None,
    ):
        self._checkout = checkout
        self._paths = list(dict.fromkeys(paths))
        self._limits = limits
        cache = code_cache(checkout, cache)
        self._verdicts = cache.verdicts(self._paths) if cache is not None and self._paths else None
        current = [p for p in self._paths if self._verdicts and self._verdicts[p].current]
        self.listing = listings(cache, current, limits)
        self._views: dict[int, tuple[FileAuthority, ...]] = {}

    def view(self, budget: int) -> tuple[tuple[FileAuthority, ...], tuple[FolderListing, ...]]:
        """The files within `budget` rendered bytes of content, and the listing."""
        if budget not in self._views:
            self._views[budget] = read_files(
                self._checkout, self._paths, self._limits, budget=budget, verdicts=self._verdicts
            )
        return self._views[budget], self.listing


def listings(
    cache: CodeCache | None, paths: Sequence[str], limits: TaskLimits
) -> tuple[FolderListing, ...]:
    """The folders of `paths` (first ones first, at most `listing_folders_max`), listed;
    the root's own entries always among them (where the build and test files are)."""
    if cache is None or not paths:
        return ()
    ordered = list(dict.fromkeys([*(p.rpartition("/")[0] for p in paths), ""]))
    wanted = ordered[: limits.listing_folders_max]
    try:
        return tuple(cache.listings(wanted, limits.listing_per_folder))
    except GitFailed:  # the files themselves are still shown; a listing is a convenience
        return ()


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
