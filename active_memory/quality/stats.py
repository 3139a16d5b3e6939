"""`lessons stats`: what the store holds and what the last postmortems did with it.

Lessons per scope and status come from the store. Deliveries, refused duplicates and
rejections by kind come from the postmortem journal (`orchestrator/journal.py`), which
keeps, per finished postmortem, the run's deliveries per lesson and every refused
proposal: the store itself keeps lessons and their history, not runs (docs/quality.md).
The journal belongs to the orchestrator, a layer above this one, so the entries are read
through the two small protocols below, which the journal's models satisfy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from active_memory.lessons import GraphScope, Lesson, Tombstone
from active_memory.quality.reasons import REJECTION_KINDS
from active_memory.store import LessonQuery, LessonStore


class RefusedEntry(Protocol):
    """A refused proposal as the journal keeps it (`orchestrator.journal.RefusedProposal`)."""

    @property
    def kinds(self) -> Sequence[str]:
        """Why it was refused: its rejection kinds."""
        ...

    @property
    def duplicate_of(self) -> str | None:
        """The lesson it repeats, when refused as a duplicate."""
        ...


class PostmortemEntry(Protocol):
    """What `summarize` reads of one journal entry (`orchestrator.journal.JournalEntry`)."""

    @property
    def run_id(self) -> str:
        """The run the postmortem was about."""
        ...

    @property
    def state(self) -> str:
        """`running`, `finished`, `failed` or `cancelled`."""
        ...

    @property
    def started_at(self) -> str:
        """When the postmortem started (ISO 8601)."""
        ...

    @property
    def deliveries(self) -> Mapping[str, int]:
        """Lesson ID → how many times the run delivered it."""
        ...

    @property
    def rejected(self) -> Sequence[RefusedEntry]:
        """Every refused proposal of the postmortem."""
        ...


@dataclass(frozen=True, slots=True)
class ScopeCount:
    """How many lessons of one scope have one status."""

    kind: str
    scope: str
    status: str
    count: int


@dataclass(slots=True)
class JournalSummary:
    """Totals over the last finished postmortems of the journal."""

    postmortems: int = 0
    deliveries: Counter[str] = field(default_factory=Counter)
    duplicates: Counter[str] = field(default_factory=Counter)
    rejected: int = 0
    rejected_by_kind: Counter[str] = field(default_factory=Counter)


def scope_text(item: Lesson | Tombstone) -> str:
    """`repo:github.com/acme/api` or `graph 7d5d…/worker` (`@ repo` when qualified)."""
    scope = item.scope
    if isinstance(scope, GraphScope):
        label = f"graph {scope.graph_hash[:12]}…/{scope.node}"
        return f"{label} @ {scope.repository}" if scope.repository else label
    return scope.repository


async def lesson_counts(store: LessonStore) -> list[ScopeCount]:
    """Lessons per scope and status (tombstones as `retired`), sorted by scope."""
    return count_lessons(await store.select(LessonQuery(include_retired=True)))


def count_lessons(items: Sequence[Lesson | Tombstone]) -> list[ScopeCount]:
    """`items` counted per scope and status (tombstones as `retired`), sorted by scope."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for item in items:
        counts[(item.scope.kind, scope_text(item), item.status)] += 1
    order = {"active": 0, "deferred": 1, "retired": 2}
    keys = sorted(counts, key=lambda k: (k[0], k[1], order.get(k[2], 3)))
    return [
        ScopeCount(kind, scope, status, counts[(kind, scope, status)])
        for kind, scope, status in keys
    ]


def summarize(entries: Sequence[PostmortemEntry], last: int) -> JournalSummary:
    """Totals over the `last` finished postmortems (by start time) of `entries`."""
    finished = [entry for entry in entries if entry.state == "finished"]
    finished.sort(key=lambda entry: (entry.started_at, entry.run_id))
    summary = JournalSummary()
    for entry in finished[-last:] if last > 0 else []:
        summary.postmortems += 1
        summary.deliveries.update(entry.deliveries)
        for refused in entry.rejected:
            summary.rejected += 1
            summary.rejected_by_kind.update(refused.kinds)
            if refused.duplicate_of:
                summary.duplicates[refused.duplicate_of] += 1
    return summary


def stats_json(counts: Sequence[ScopeCount], summary: JournalSummary, last: int) -> dict[str, Any]:
    """The `--json` document of `lessons stats`."""
    return {
        "lessons": [
            {"kind": c.kind, "scope": c.scope, "status": c.status, "count": c.count} for c in counts
        ],
        "postmortems": {"last": last, "read": summary.postmortems},
        "deliveries": {
            "total": sum(summary.deliveries.values()),
            "by_lesson": dict(sorted(summary.deliveries.items())),
        },
        "duplicates_refused": {
            "total": sum(summary.duplicates.values()),
            "by_lesson": dict(sorted(summary.duplicates.items())),
        },
        "proposals_rejected": {
            "total": summary.rejected,
            "by_kind": {
                k: summary.rejected_by_kind[k]
                for k in REJECTION_KINDS
                if summary.rejected_by_kind[k]
            },
        },
    }
