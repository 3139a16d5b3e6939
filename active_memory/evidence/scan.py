"""The scanner's entry point: a run record in, evidence and skips out (SPEC §4)."""

from __future__ import annotations

from collections.abc import Collection

from active_memory.evidence.exploration import exploration
from active_memory.evidence.failures import timeouts_and_crashes
from active_memory.evidence.model import EvidenceItem, ScanResult, Skip
from active_memory.evidence.repeated_failures import repeated_failures
from active_memory.evidence.rounds import rejected_rounds
from active_memory.evidence.signatures import FailureSignature
from active_memory.runlog.record import RunRecord

_KIND_ORDER = {"timeout_crash": 0, "rejected_rounds": 1, "exploration": 2, "tool_failures": 3}


def scan(
    record: RunRecord, earlier_signatures: Collection[FailureSignature] = frozenset()
) -> ScanResult:
    """Every evidence item of one run, and every loop, map or failing family skipped with
    its reason. `earlier_signatures` are the repository's failure signatures from earlier
    runs (the store's; none by default), for rule 4's "seen in an earlier run".

    Pure and deterministic: the same record gives the same result, whatever the order of
    events and receipts in its file.
    """
    visits = record.visits()
    items: list[EvidenceItem] = [*timeouts_and_crashes(record, visits)]
    found, skipped = rejected_rounds(record, visits)
    items.extend(found)
    items.extend(exploration(record))
    failures, unqualified = repeated_failures(record, earlier_signatures)
    items.extend(failures)
    skipped = [*skipped, *unqualified]
    items.sort(key=_item_key)
    return ScanResult(
        run_id=record.run_id,
        evidence=tuple(items),
        skipped=tuple(sorted(set(skipped), key=_skip_key)),
    )


def _item_key(item: EvidenceItem) -> tuple[int, str, tuple[int, ...], str]:
    where = item.family or item.loop or ",".join(item.nodes)
    return (_KIND_ORDER[item.kind], where, item.map_item or (), item.id)


def _skip_key(skip: Skip) -> tuple[str, str, str, tuple[int, ...], int, str]:
    return (
        skip.loop or "",
        skip.map or "",
        skip.family or "",
        skip.map_item or (),
        skip.round or 0,
        skip.reason,
    )
