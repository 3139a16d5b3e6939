"""Rule 1 of SPEC §4: repeated timeouts and crashes of one node."""

from __future__ import annotations

from collections import defaultdict

from active_memory.evidence.model import (
    GRAPH_DISCOVERY,
    REPOSITORY_DISCOVERY,
    EvidenceItem,
    ExecutionRefOut,
    evidence_id,
)
from active_memory.runlog.record import ErrorOutcome, RunRecord, Visit

COUNTED_CODES = frozenset({"timeout", "crash"})
"""`malformed` and `refusal` are answers the model gave, not cost the run paid waiting."""


def timeouts_and_crashes(record: RunRecord, visits: list[Visit]) -> list[EvidenceItem]:
    """One item per node with two or more `timeout`/`crash` completions."""
    by_node: dict[str, list[Visit]] = defaultdict(list)
    for visit in visits:
        outcome = visit.outcome
        if isinstance(outcome, ErrorOutcome) and outcome.code in COUNTED_CODES:
            by_node[visit.node].append(visit)
    items: list[EvidenceItem] = []
    for node, failed in sorted(by_node.items()):
        if len(failed) < 2:
            continue
        failed.sort(key=lambda v: (v.settled if v.settled is not None else -1, v.execution))
        refs = tuple(
            ExecutionRefOut(
                execution=v.execution,
                node=v.node,
                map_item=v.map_indices,
                outcome=v.outcome.code if isinstance(v.outcome, ErrorOutcome) else "error",
                has_completion_text=v.execution in record.completions,
            )
            for v in failed
        )
        items.append(
            EvidenceItem(
                id=evidence_id(record.run_id, "timeout_crash", node=node),
                kind="timeout_crash",
                nodes=(node,),
                count=len(failed),
                specialists=(GRAPH_DISCOVERY, REPOSITORY_DISCOVERY),
                executions=refs,
            )
        )
    return items
