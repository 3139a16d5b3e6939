"""What one specialist produced during a postmortem, before it becomes its report entry."""

from __future__ import annotations

from dataclasses import dataclass, field

from active_memory.lessons import Decision, Lesson
from active_memory.orchestrator.report import (
    AcceptedReport,
    DecisionReport,
    RejectedReport,
    SpecialistReport,
    SpecialistStatus,
    UsageReport,
)
from active_memory.specialists.checks import DiscoveryResult
from active_memory.specialists.kinds import SpecialistName
from active_memory.specialists.mutations import AnyMutation
from active_memory.specialists.providers import ProviderSession, Usage


@dataclass(slots=True, eq=False)  # identity: outcomes key dicts
class Outcome:
    """One specialist's state; `status` None means it has not ended yet."""

    name: SpecialistName
    status: SpecialistStatus | None = None
    reasons: list[str] = field(default_factory=list)
    manifest: int | None = None
    stale_offered: int | None = None  # of the manifest: stale lessons the run did not deliver
    batches: int | None = None
    decisions: dict[str, Decision] | None = None  # by lesson ID, batch order kept
    decided_on: dict[str, Lesson] = field(default_factory=dict)  # the lesson each judged
    discovery: DiscoveryResult | None = None
    mutations: list[AnyMutation] = field(default_factory=list)
    rereconciled: list[str] = field(default_factory=list)
    repair_turns: int = 0  # turns that repaired a refused answer (at most one per ask)
    usage: Usage = field(default_factory=Usage)
    provider: str | None = None
    model: str | None = None

    def end(self, status: SpecialistStatus, *reasons: str) -> None:
        """End with `status`; a failure drops every mutation (nothing of it publishes)."""
        self.status = status
        self.reasons.extend(reasons)
        if status != "reconciled":
            self.mutations = []
            # A failed maintenance reports the decisions of the batches it reconciled
            # before the failing one (never published); anything else reports none.
            if status != "failed" or not self.decisions:
                self.decisions = None

    def add_usage(self, session: ProviderSession) -> None:
        """Count a closed (or abandoned) session's usage and name its lane."""
        self.usage = self.usage.plus(session.usage)
        self.provider, self.model = session.provider, session.model

    @property
    def kept(self) -> int:
        """Keep decisions of a reconciled manifest."""
        if self.decisions is None:
            return 0
        return sum(1 for d in self.decisions.values() if d.action == "keep")

    def report(self) -> SpecialistReport:
        """The specialist's report entry."""
        status = self.status or "timed_out"
        decisions = (
            [
                # Built from validated decisions: skip validating ten thousand of them again.
                DecisionReport.model_construct(
                    id=d.id,
                    revision=d.revision,
                    action=d.action,
                    reason=d.reason,
                    canonical=d.canonical,
                    title=d.lesson.title if d.lesson is not None else None,
                )
                for d in self.decisions.values()
            ]
            if self.decisions is not None and status in ("reconciled", "failed")
            else None
        )
        found = self.discovery
        return SpecialistReport(
            status=status,
            reason="; ".join(self.reasons) or None,
            reasons=list(self.reasons),
            manifest=self.manifest,
            stale_offered=self.stale_offered or None,
            batches=self.batches,
            decisions=decisions,
            kept=self.kept if decisions is not None else None,
            proposals=len(found.accepted) + len(found.rejected) if found else None,
            accepted=[
                AcceptedReport(index=a.index, title=a.proposal.title, scope=a.scope.model_dump())
                for a in found.accepted
            ]
            if found and status == "reconciled"
            else None,
            rejected=[RejectedReport(**r.to_json()) for r in found.rejected] if found else None,
            rereconciled=list(self.rereconciled),
            repair_turns=self.repair_turns or None,
            provider=self.provider,
            model=self.model,
            usage=UsageReport.of(self.usage),
        )
