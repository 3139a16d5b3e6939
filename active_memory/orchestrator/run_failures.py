"""The postmortem's calls to the store about tool failures (SPEC §4 item 4).

Three reads and one write, each for one job: the repository's signatures from earlier
runs (the scanner's `earlier`), the run's own signatures to keep, the `ev-tf-` items the
publish's creations, adaptations and proposals cite (kept with them, schema 9), and the
failures each frozen lesson was written against (effectiveness's recurrence).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from active_memory.evidence import FailureSignature
from active_memory.evidence.model import EvidenceItem
from active_memory.evidence.repeated_failures import run_signatures
from active_memory.lessons import AdaptLesson, CreateLesson, Lesson, utcnow
from active_memory.runlog.record import RunRecord
from active_memory.store import LessonStore
from active_memory.store.failure_signatures import SeenFailures

WrittenAgainst = dict[str, frozenset[tuple[str, str]]]
"""An `ev-tf-` evidence ID's `(family, normalised error)` pairs, as the store kept them."""


def _namespace(record: RunRecord) -> str | None:
    return record.repository.namespace if record.repository else None


async def earlier_signatures(store: LessonStore, record: RunRecord) -> frozenset[FailureSignature]:
    """The failure signatures earlier runs of the record's repository left in the store
    (never this run's own)."""
    namespace = _namespace(record)
    if namespace is None or not record.tool_failures:
        return frozenset()
    pairs = await store.failure_signatures(namespace, excluding=record.run_id)
    return frozenset(FailureSignature(family, error) for family, error in pairs)


def seen_failures(record: RunRecord, *, dry_run: bool) -> SeenFailures | None:
    """The run's failure signatures for the store, or None (a dry run records none)."""
    namespace = _namespace(record)
    if dry_run or namespace is None or not record.tool_failures:
        return None
    pairs = tuple(sorted(run_signatures(record)))
    if not pairs:
        return None
    return SeenFailures(namespace, record.run_id, utcnow().isoformat(), pairs)


def with_cited(
    failures: SeenFailures | None, mutations: Iterable[object], items: Iterable[EvidenceItem]
) -> SeenFailures | None:
    """`failures` with the `ev-tf-` items the creations and adaptations among
    `mutations` (published or proposed) cite: each item's family and normalised errors."""
    if failures is None:
        return None
    cited = {
        evidence_id
        for m in mutations
        if isinstance(m, CreateLesson | AdaptLesson)
        for evidence_id in m.evidence.evidence_ids
    }
    rows = tuple(
        sorted(
            (item.id, item.family, group.signature)
            for item in items
            if item.kind == "tool_failures" and item.id in cited and item.family is not None
            for group in item.failures
        )
    )
    return failures._replace(cited=rows)


async def lessons_written_against(store: LessonStore, lessons: Sequence[Lesson]) -> WrittenAgainst:
    """The kept failures of every `ev-tf-` item the lessons cite (absent: cited before
    schema 9, or never kept)."""
    ids = [i for x in lessons for i in x.evidence.evidence_ids if i.startswith("ev-tf-")]
    if not ids:
        return {}
    return await store.written_against(ids)
