"""The postmortem report (SPEC §10 `postmortem --json`) and its parts.

`PostmortemReport.to_json()` is the document `active-memory postmortem --json` prints:
`{"run_id", "outcome", "dry_run", "specialists": {name: {...}}, "published": {...},
"conflicts": [...]}` plus the fields this version adds (`usage`, `mutations`,
`publish_error`, `elapsed_ms`, `timeout_ms`). Fields may be added, never renamed.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from active_memory.specialists.providers.base import Usage, without_idle_tools

SpecialistStatus: TypeAlias = Literal["reconciled", "failed", "abstained", "timed_out", "disabled"]
"""How one specialist ended (SPEC §10). Discovery that answered is `reconciled` too."""

SPECIALIST_ORDER = (
    "graph_maintenance",
    "repository_maintenance",
    "graph_discovery",
    "repository_discovery",
)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class UsageReport(_Model):
    """Model usage of one specialist (or the total): `complete` False means a lower bound."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    requests: int = 0
    complete: bool = True
    tool_calls: int = 0  # read-only investigation calls (harness CLI lanes)
    tool_errors: int = 0

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return without_idle_tools(handler(self))

    @classmethod
    def of(cls, usage: Usage) -> UsageReport:
        """The report form of a provider session's `Usage`."""
        return cls(**usage.model_dump())

    def plus(self, other: UsageReport) -> UsageReport:
        """The sum of two usages (cost None only when neither reports one)."""
        total = Usage(**self.model_dump()).plus(Usage(**other.model_dump()))
        return UsageReport.of(total)


class DecisionReport(_Model):
    """One maintenance decision as checked: `{"id", "revision", "action", "reason"?, ...}`."""

    id: str
    revision: int
    action: Literal["keep", "adapt", "retire", "defer"]
    reason: str = ""
    canonical: str | None = None
    title: str | None = None  # the adapted card's new title


class AcceptedReport(_Model):
    """One accepted discovery proposal: where it goes and its title."""

    index: int
    title: str
    scope: dict[str, Any]


class RejectedReport(_Model):
    """One refused proposal (SPEC §10 `rejected: [{"reason"}]`), with every reason."""

    index: int
    title: str
    reason: str
    reasons: list[str]
    duplicate_of: str | None = None  # the living lesson a near-duplicate repeats


class SpecialistReport(_Model):
    """How one specialist ended, what it decided or proposed, and what it cost.

    Maintenance fills `manifest` (lessons supplied; `stale_offered` of them, when any,
    were not delivered but offered because their cited code changed), `batches`,
    `decisions` (only when every batch reconciled) and `kept`; discovery fills
    `proposals` (answered), `accepted` and `rejected`. `reasons` lists every failure
    reason (`reason` joins them). `rereconciled` names lessons decided again after a
    revision conflict. `repair_turns` counts the asks whose refused answer was repaired
    (one turn each; left out when none).
    """

    status: SpecialistStatus
    reason: str | None = None
    reasons: list[str] = Field(default_factory=list)
    manifest: int | None = None
    stale_offered: int | None = None
    batches: int | None = None
    decisions: list[DecisionReport] | None = None
    kept: int | None = None
    proposals: int | None = None
    accepted: list[AcceptedReport] | None = None
    rejected: list[RejectedReport] | None = None
    rereconciled: list[str] = Field(default_factory=list)
    repair_turns: int | None = None
    provider: str | None = None
    model: str | None = None
    usage: UsageReport = UsageReport()

    def to_json(self) -> dict[str, Any]:
        """The specialist's entry in the report; parts that do not apply are left out."""
        data = self.model_dump(mode="json")
        return {key: value for key, value in data.items() if value is not None}


class PublishedCounts(_Model):
    """How many lessons the publish created, adapted, retired, deferred; `kept` decisions."""

    created: int = 0
    adapted: int = 0
    retired: int = 0
    deferred: int = 0
    kept: int = 0
    proposed: int = 0  # manual review: creations and adaptations kept for a person


class MutationReport(_Model):
    """One change that was (or, in a dry run, would be) published."""

    action: Literal["create", "adapt", "retire", "defer"]
    specialist: str
    id: str | None = None  # None: a lesson not created yet (dry run, or publish failed)
    base_revision: int | None = None
    revision: int | None = None  # the revision written; None when nothing was written
    title: str | None = None
    canonical: str | None = None
    proposal: int | None = None  # manual review: the proposal's number, nothing published


class ConflictReport(_Model):
    """A lesson changed by another writer that could not be reconciled again in time."""

    id: str
    specialist: str
    expected_revision: int
    current_revision: int | None
    current_status: str | None


class PostmortemReport(_Model):
    """Everything one postmortem did; `to_json()` is SPEC §10's document."""

    run_id: str
    outcome: str
    dry_run: bool
    specialists: dict[str, SpecialistReport]
    published: PublishedCounts = PublishedCounts()
    conflicts: list[ConflictReport] = Field(default_factory=list)
    mutations: list[MutationReport] = Field(default_factory=list)
    publish_error: str | None = None
    usage: UsageReport = UsageReport()
    timeout_ms: int | None = None
    elapsed_ms: int = 0

    @property
    def ok(self) -> bool:
        """True when no specialist failed or timed out, nothing conflicted and the publish
        (if any) went through: the CLI exits 1 otherwise."""
        bad = {"failed", "timed_out"}
        return (
            not any(s.status in bad for s in self.specialists.values())
            and not self.conflicts
            and self.publish_error is None
        )

    def to_json(self) -> dict[str, Any]:
        """SPEC §10's `postmortem --json` document (specialists in SPEC §1's order)."""
        data = self.model_dump(mode="json", exclude={"specialists"})
        data["specialists"] = {
            name: self.specialists[name].to_json()
            for name in SPECIALIST_ORDER
            if name in self.specialists
        }
        if self.publish_error is None:
            del data["publish_error"]
        return data
