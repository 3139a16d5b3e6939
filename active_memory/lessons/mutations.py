"""What a publish applies, each checked against the revision it read (create, adapt,
retire, defer), who made it, and what it leaves: history rows and a receipt."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from active_memory.lessons.cards import Card, Status, StatusWithRetired
from active_memory.lessons.citations import Evidence
from active_memory.lessons.fields import LessonId, Reason, VocabularyModel, not_blank
from active_memory.lessons.scopes import Scope


class Author(VocabularyModel):
    """Who made a change: the run, the specialist (or a person's command), the model."""

    specialist: Annotated[str, AfterValidator(not_blank)]
    run_id: str | None = None
    model: str | None = None


class CreateLesson(VocabularyModel):
    """A new lesson; the store gives it an ID and revision 1."""

    action: Literal["create"] = "create"
    scope: Scope
    card: Card
    evidence: Evidence = Evidence()
    author: Author
    reason: Reason = ""


class AdaptLesson(VocabularyModel):
    """Replace a lesson's card (and make it `status`, default active); revision + 1."""

    action: Literal["adapt"] = "adapt"
    id: LessonId
    base_revision: Annotated[int, Field(ge=1)]
    card: Card
    evidence: Evidence = Evidence()
    author: Author
    reason: Reason = ""
    status: Status | None = None  # None: active (a maintenance adapt reactivates a lesson)


class RetireLesson(VocabularyModel):
    """Retire a lesson into a tombstone, optionally absorbed by a canonical card."""

    action: Literal["retire"] = "retire"
    id: LessonId
    base_revision: Annotated[int, Field(ge=1)]
    canonical: LessonId | None = None
    author: Author
    reason: Reason = ""


class DeferLesson(VocabularyModel):
    """Make a lesson inactive without retiring it; revision + 1."""

    action: Literal["defer"] = "defer"
    id: LessonId
    base_revision: Annotated[int, Field(ge=1)]
    author: Author
    reason: Reason = ""


Mutation = Annotated[
    CreateLesson | AdaptLesson | RetireLesson | DeferLesson, Field(discriminator="action")
]


class HistoryEntry(VocabularyModel):
    """One row of a lesson's append-only revision history."""

    lesson_id: LessonId
    revision: Annotated[int, Field(ge=1)]
    previous_revision: int | None
    action: Literal["create", "adapt", "retire", "defer", "revert", "import", "keep"]
    status: StatusWithRetired
    card: Card | None
    author: Author
    reason: str
    at: datetime


class PublishReceipt(VocabularyModel):
    """What one publish changed: (id, new revision) per action."""

    created: list[tuple[str, int]] = Field(default_factory=list)
    adapted: list[tuple[str, int]] = Field(default_factory=list)
    retired: list[tuple[str, int]] = Field(default_factory=list)
    deferred: list[tuple[str, int]] = Field(default_factory=list)
    proposed: list[int] = Field(default_factory=list)  # manual review: the proposals' numbers

    def total(self) -> int:
        """Number of lessons changed."""
        return len(self.created) + len(self.adapted) + len(self.retired) + len(self.deferred)


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)
