"""What the impact-evidence scanner reports (SPEC §4, §10).

`EvidenceItem` is one qualifying fact a discovery proposal may cite by `id`; `Skip` is one
thing the scanner declined to judge, with its reason; `ScanResult` holds both.
`ScanResult.to_json()` is the `evidence RUN.json --json` document.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

EvidenceKind = Literal["timeout_crash", "rejected_rounds", "exploration", "tool_failures"]

GRAPH_DISCOVERY = "graph_discovery"
REPOSITORY_DISCOVERY = "repository_discovery"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class ExecutionRefOut(_Model):
    """One execution a specialist may look up: its ID, node, map item and outcome."""

    execution: str
    node: str
    map_item: tuple[int, ...] = ()
    outcome: str
    """`timeout`, `crash`, …; or a verdict (`rejected`, `accepted`); or `verified`."""
    has_completion_text: bool = False
    """True when the run record's `completions` holds this execution's final text."""


class Round(_Model):
    """One rejected review round: its number, the verdicts, and who worked before it."""

    round: int
    """1-based iteration of the loop in this map scope."""
    workers: tuple[str, ...]
    """The round's serial prefix, in serial order."""
    prefix: tuple[ExecutionRefOut, ...]
    verifiers: tuple[ExecutionRefOut, ...]


class ReceiptRef(_Model):
    """One tool receipt counted as exploration (an index into the record's `receipts`)."""

    index: int
    node: str | None
    tool: str
    at: str
    paths: tuple[str, ...]


class FailureGroup(_Model):
    """Failures of one family with one normalised error, deduplicated with their count."""

    error: str
    """The first informative error as recorded."""
    signature: str
    """The normalised error (evidence/signatures.py)."""
    count: int
    times: tuple[str, ...]
    commands: tuple[str, ...]
    """Distinct command lines, in order, at most five."""
    exit_codes: tuple[int, ...] = ()


class FailureResolution(_Model):
    """The call that finally worked."""

    at: str
    command: str
    family: str


class NotCounted(_Model):
    """A failure of the family that does not qualify on its own, and why."""

    at: str
    command: str
    reason: str


_FAILURE_FIELDS: dict[str, Any] = {
    "family": None,
    "qualified": None,
    "failures": (),
    "resolution": None,
    "seconds_to_resolution": None,
    "not_counted": (),
}


class EvidenceItem(_Model):
    """One evidence item with a stable ID (SPEC §4)."""

    id: str
    kind: EvidenceKind
    nodes: tuple[str, ...]
    count: int
    loop: str | None = None
    map_item: tuple[int, ...] | None = None
    specialists: tuple[str, ...]
    """Which discovery specialists may cite it (exploration: repository discovery only)."""
    executions: tuple[ExecutionRefOut, ...] = ()
    rounds: tuple[Round, ...] = ()
    receipts: tuple[ReceiptRef, ...] = ()
    span_seconds: float | None = None
    family: str | None = None
    """Repeated tool failures: the family that failed."""
    qualified: str | None = None
    """Repeated tool failures: which threshold it met (`the same error twice`, …)."""
    failures: tuple[FailureGroup, ...] = ()
    resolution: FailureResolution | None = None
    seconds_to_resolution: float | None = None
    not_counted: tuple[NotCounted, ...] = ()

    left_out_when_unset: ClassVar[dict[str, Any]] = _FAILURE_FIELDS
    """Fields serialised only when set, with their unset value (a subclass adds its own)."""

    @model_serializer(mode="wrap")
    def _without_unset_failure_fields(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Rule 4's fields appear only on its items: every other item (and every task
        # that shows one) serialises as before they existed.
        data = handler(self)
        if isinstance(data, dict):
            for key, unset in self.left_out_when_unset.items():
                if key in data and (data[key] == unset or data[key] in ((), [])):
                    del data[key]
        return data

    def to_json(self) -> dict[str, Any]:
        """The §10 shape plus references; `loop` / `map_item` only when set."""
        data = self.model_dump(mode="json", exclude_none=True)
        for empty in ("executions", "rounds", "receipts"):
            if not data[empty]:
                del data[empty]
        return data


class Skip(_Model):
    """A loop, map or failing family the scanner did not count, and why."""

    loop: str | None = None
    map: str | None = None
    family: str | None = None
    reason: str
    map_item: tuple[int, ...] | None = None
    round: int | None = None

    def to_json(self) -> dict[str, Any]:
        """`{"loop" | "map", "reason", ...}` with unset fields left out."""
        return self.model_dump(mode="json", exclude_none=True)


class ScanResult(_Model):
    """Everything the scanner found in one run."""

    run_id: str
    evidence: tuple[EvidenceItem, ...] = ()
    skipped: tuple[Skip, ...] = Field(default=())

    def to_json(self) -> dict[str, Any]:
        """The `evidence RUN.json --json` document (SPEC §10)."""
        return {
            "evidence": [item.to_json() for item in self.evidence],
            "skipped": [skip.to_json() for skip in self.skipped],
        }

    def ids(self) -> frozenset[str]:
        """The IDs of every evidence item."""
        return frozenset(item.id for item in self.evidence)

    def get(self, evidence_id: str) -> EvidenceItem | None:
        """The item with this ID, or None."""
        return next((item for item in self.evidence if item.id == evidence_id), None)


def evidence_id(run_id: str, kind: str, **content: Any) -> str:
    """A stable ID from the run, the kind and identifying content (never from order)."""
    payload = json.dumps(
        {"run": run_id, "kind": kind, **content}, sort_keys=True, separators=(",", ":")
    )
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    prefix = {
        "timeout_crash": "tc",
        "rejected_rounds": "rr",
        "exploration": "ex",
        "tool_failures": "tf",
    }[kind]
    return f"ev-{prefix}-{digest[:12]}"
