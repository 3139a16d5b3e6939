"""What the checks yield: accepted and refused proposals, reconciled and failed batches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from active_memory.evidence import EvidenceItem
from active_memory.lessons import Decision, Proposal, Scope


@dataclass(frozen=True, slots=True)
class AcceptedProposal:
    """A proposal that passed every check: the lesson to create and where it goes."""

    index: int
    proposal: Proposal
    scope: Scope
    evidence: tuple[EvidenceItem, ...]


@dataclass(frozen=True, slots=True)
class Rejection:
    """A refused proposal: its position in the answer, its title, and every reason.

    `duplicate_of` names the living lesson a near-duplicate repeats: the proposal is an
    adaptation candidate of that card, not a new lesson; `proposal` and `similarity` are
    then the checked proposal and its text similarity to that lesson (0-100).
    """

    index: int
    title: str
    reasons: tuple[str, ...]
    duplicate_of: str | None = None
    proposal: Proposal | None = None
    similarity: float | None = None

    @property
    def reason(self) -> str:
        """All reasons in one line."""
        return "; ".join(self.reasons)

    def to_json(self) -> dict[str, Any]:
        """`{"index", "title", "reason", "reasons"}` (and `duplicate_of`) for the report."""
        data: dict[str, Any] = {
            "index": self.index,
            "title": self.title,
            "reason": self.reason,
            "reasons": list(self.reasons),
        }
        if self.duplicate_of is not None:
            data["duplicate_of"] = self.duplicate_of
        return data


@dataclass(frozen=True, slots=True)
class DiscoveryResult:
    """What a discovery answer yielded: accepted proposals and refused ones."""

    specialist: str
    accepted: tuple[AcceptedProposal, ...] = ()
    rejected: tuple[Rejection, ...] = ()


@dataclass(frozen=True, slots=True)
class Reconciled:
    """A maintenance batch whose every supplied lesson has exactly one valid decision."""

    specialist: str
    decisions: tuple[Decision, ...]
    already_deferred: frozenset[str] = frozenset()
    """Batch lessons that were deferred already: deferring them again changes nothing."""
    status: Literal["reconciled"] = "reconciled"


@dataclass(frozen=True, slots=True)
class Failed:
    """A maintenance batch that failed reconciliation; nothing of it may be published."""

    specialist: str
    reasons: tuple[str, ...]
    status: Literal["failed"] = "failed"

    @property
    def reason(self) -> str:
        """All reasons in one line."""
        return "; ".join(self.reasons)


MaintenanceResult = Reconciled | Failed
