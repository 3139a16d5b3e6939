"""Rule 3 of SPEC §4: exploration, for repository discovery only.

Two receipts are the same tool receipt when they name the same tool and the same set of
paths (a re-read of one file is not new exploration). The span runs from the earliest to
the latest time among the distinct receipts; receipts without a time cannot be placed
and are not counted.
"""

from __future__ import annotations

from datetime import timedelta

from active_memory.evidence.model import (
    REPOSITORY_DISCOVERY,
    EvidenceItem,
    ReceiptRef,
    evidence_id,
)
from active_memory.runlog.record import Receipt, RunRecord

MIN_DISTINCT_RECEIPTS = 3
MIN_SPAN = timedelta(minutes=5)


def exploration(record: RunRecord) -> list[EvidenceItem]:
    """At most one item: the run's distinct, timed receipts when they qualify."""
    first_seen: dict[tuple[str, tuple[str, ...]], tuple[int, Receipt]] = {}
    for index, receipt in enumerate(record.receipts):
        if receipt.at is None:
            continue
        key = (receipt.tool, tuple(sorted(receipt.paths)))
        known = first_seen.get(key)
        if known is None or _earlier(receipt, known[1]):
            first_seen[key] = (index, receipt)
    if len(first_seen) < MIN_DISTINCT_RECEIPTS:
        return []
    times = [receipt.at for _, receipt in first_seen.values() if receipt.at is not None]
    span = max(times) - min(times)
    if span < MIN_SPAN:
        return []
    chosen = sorted(first_seen.values(), key=lambda pair: pair[0])
    refs = tuple(
        ReceiptRef(
            index=index,
            node=receipt.node,
            tool=receipt.tool,
            at=receipt.at.isoformat() if receipt.at else "",
            paths=receipt.paths,
        )
        for index, receipt in chosen
    )
    nodes = tuple(sorted({r.node for _, r in chosen if r.node is not None}))
    return [
        EvidenceItem(
            id=evidence_id(record.run_id, "exploration"),
            kind="exploration",
            nodes=nodes,
            count=len(chosen),
            specialists=(REPOSITORY_DISCOVERY,),
            receipts=refs,
            span_seconds=span.total_seconds(),
        )
    ]


def _earlier(candidate: Receipt, known: Receipt) -> bool:
    assert candidate.at is not None and known.at is not None
    return (candidate.at, candidate.node or "") < (known.at, known.node or "")
