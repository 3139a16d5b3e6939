"""The `LessonStore` protocol every backend implements (SQLite now, PostgreSQL later)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from active_memory.lessons import (
    Author,
    HistoryEntry,
    Lesson,
    Mutation,
    PublishReceipt,
    Tombstone,
)
from active_memory.store.candidates import Candidate, Consumed
from active_memory.store.changes import ScopeChanges, ScopeKey
from active_memory.store.effectiveness import Effectiveness, EffectivenessHistory, RunObservation
from active_memory.store.review import Proposal, ProposedMutation, ReviewDecision

StoredLesson = Annotated[Lesson | Tombstone, Field(discriminator="status")]
"""A lesson as a store holds it: living (active, deferred) or a retired tombstone."""


class LessonQuery(BaseModel):
    """Which lessons to list; every field narrows, None means any."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repository: str | None = None
    graph_hash: str | None = None
    node: str | None = None
    kind: str | None = None  # "repository" | "graph"
    include_deferred: bool = True
    include_retired: bool = False


class LessonSummary(NamedTuple):
    """What a listing shows of a lesson: identity, status, scope columns, title."""

    id: str
    revision: int
    status: str
    scope_kind: str
    repository: str  # '' for a graph lesson of every repository
    graph_hash: str
    node: str
    title: str | None  # None for a retired tombstone


class ImportReport(BaseModel):
    """What an import changed, and what it left alone and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    added: list[tuple[str, int]] = []
    updated: list[tuple[str, int]] = []
    unchanged: list[tuple[str, str]] = []  # (id, why)


MARK_PREFIX = "mark:"
"""`store_meta` keys of publish marks, apart from the store's counters."""


class PublishMark(BaseModel):
    """A token a publish leaves in the store in its own transaction.

    The postmortem journal writes `token` before the publish; after a crash, the store
    holding it under `key` proves that the publish committed even though the journal
    never recorded its end (docs/store.md).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    token: Annotated[int, Field(ge=0, lt=2**62)]


@runtime_checkable
class LessonStore(Protocol):
    """Durable lessons with revision-checked, all-or-nothing publication."""

    @property
    def location(self) -> str:
        """Where the store lives, safe to print (no credentials)."""
        ...

    async def aclose(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...

    async def get(self, lesson_id: str) -> Lesson | Tombstone | None:
        """One lesson or tombstone by ID, or None if the ID was never used."""
        ...

    async def select(self, query: LessonQuery | None = None) -> list[Lesson | Tombstone]:
        """Lessons matching `query`, ordered by ID."""
        ...

    async def summaries(self, query: LessonQuery | None = None) -> list[LessonSummary]:
        """What `select(query)` returns, as summaries only (no cards, no evidence)."""
        ...

    async def read_snapshot(
        self, *, repository: str | None, graph_hash: str | None, node: str | None
    ) -> list[Lesson]:
        """Active lessons for one recall scope, read in one consistent transaction.

        Repository lessons of `repository`; graph lessons of (`graph_hash`, `node`) that are
        unqualified or qualified by `repository`. A None argument leaves that part out.
        """
        ...

    async def version(self) -> int:
        """The store's change version: bumped once by every write that changes lessons."""
        ...

    async def changes(self, scope: ScopeKey, since: int | None) -> ScopeChanges:
        """`scope`'s lessons changed since version `since` (any status), with the version
        they were read at, in one consistent read; `since=None`: its active lessons."""
        ...

    async def publish(
        self,
        mutations: Sequence[Mutation],
        effectiveness: Sequence[RunObservation] = (),
        *,
        candidates: Sequence[Candidate] = (),
        consumed: Sequence[Consumed] = (),
        mark: PublishMark | None = None,
        proposals: Sequence[ProposedMutation] = (),
    ) -> PublishReceipt:
        """Apply every mutation, add every effectiveness observation (to the counters and
        as a dated event) and adaptation candidate, clear every consumed candidate, and
        keep every proposal (manual review; their numbers in `receipt.proposed`), in one
        transaction, or none. With `mark`, the same transaction records it (see
        `publish_mark`).

        A candidate of an unknown or retired lesson is skipped, as is one its run and
        specialist already added; each lesson keeps its latest `CANDIDATES_KEPT`.
        `Consumed(lesson_id, through)` clears that lesson's candidates up to seq `through`.

        Each change is checked against the revision it was decided on; any mismatch (or a
        retired or unknown ID) raises `RevisionConflict` naming every such lesson, and
        nothing is written. An observation of an unknown ID is skipped; one whose run is
        the lesson's `last_run_id` already is not counted again. Never interrupted halfway
        by cancellation.
        """
        ...

    async def publish_mark(self, key: str) -> int | None:
        """The token of the last committed publish marked with `key`, or None."""
        ...

    async def effectiveness_history(self, lesson_id: str | None = None) -> EffectivenessHistory:
        """`lesson_id`'s dated effectiveness events, oldest first, or (None) every
        lesson's summed per UTC day; with the time the store began recording them."""
        ...

    async def effectiveness(self, lesson_ids: Sequence[str]) -> dict[str, Effectiveness]:
        """The counters of each named lesson that has any (absent: never observed)."""
        ...

    async def candidates(self, lesson_ids: Sequence[str]) -> dict[str, list[Candidate]]:
        """The pending adaptation candidates of each named lesson that has any, oldest
        first (absent: none)."""
        ...

    async def history(self, lesson_id: str) -> list[HistoryEntry]:
        """Every recorded revision of a lesson, oldest first."""
        ...

    async def revert(self, lesson_id: str, to_revision: int, author: Author) -> Lesson | Tombstone:
        """Make revision `to_revision`'s card and status current again, as a new revision."""
        ...

    async def propose(self, mutations: Sequence[ProposedMutation]) -> list[int]:
        """Keep creations and adaptations as proposals awaiting review (manual review),
        all or none; never visible to recall. An adaptation of a retired or unknown
        lesson is a `RevisionConflict`. Returns the proposals' sequence numbers."""
        ...

    async def proposals(self, state: str | None = None) -> list[Proposal]:
        """Proposals in `state` (proposed, approved, rejected; None: all), oldest first."""
        ...

    async def decide_proposal(self, seq: int, decision: ReviewDecision) -> Proposal:
        """Approve or reject proposal `seq`, in one transaction. Approving publishes its
        mutation (the decision's card, when edited) with the revision check; a lesson
        changed since is a `RevisionConflict` and the proposal stays proposed. A decided
        or unknown proposal is `ProposalNotPending`; a rejection needs a reason."""
        ...

    async def import_lessons(
        self, records: Iterable[Lesson | Tombstone], author: Author
    ) -> ImportReport:
        """Add or update lessons from an export, all or nothing; never recreate a tombstone.

        `records` may be a one-pass iterable (a file streamed as it is read): SQLite
        consumes it in chunks inside the one transaction, so an import's memory does not
        grow with the file; PostgreSQL holds it whole (its transaction may be retried).
        """
        ...

    async def backup(self, destination: Path) -> None:
        """Write a consistent copy of the store while others use it."""
        ...
