"""The card an agent sees, and the stored lesson around it (SPEC §5): a living lesson
(active or deferred) or the tombstone a retired one leaves."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from active_memory.lessons.associations import Associations
from active_memory.lessons.citations import Evidence
from active_memory.lessons.fields import LessonId, Recommendation, Title, VocabularyModel
from active_memory.lessons.scopes import Scope


class Card(VocabularyModel):
    """The part of a lesson an agent sees: title, recommendation and what recalls it."""

    title: Title
    recommendation: Recommendation
    associations: Associations = Associations()


Status = Literal["active", "deferred"]
StatusWithRetired = Literal["active", "deferred", "retired"]


class Lesson(VocabularyModel):
    """A stored, living lesson: its card plus identity, scope, status and evidence."""

    id: LessonId
    revision: Annotated[int, Field(ge=1)]
    scope: Scope
    status: Status = "active"
    title: Title
    recommendation: Recommendation
    associations: Associations = Associations()
    evidence: Evidence = Evidence()

    def card(self) -> Card:
        """Only what an agent sees."""
        return Card(
            title=self.title, recommendation=self.recommendation, associations=self.associations
        )


class Tombstone(VocabularyModel):
    """A retired ID: identity and last revision kept, content not, so it is never recreated."""

    id: LessonId
    revision: Annotated[int, Field(ge=1)]
    scope: Scope
    status: Literal["retired"] = "retired"
    canonical: LessonId | None = None
