"""What the specialists answer (SPEC §6): a maintenance specialist's decision on one
supplied lesson, and a discovery specialist's proposal of a new one."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from active_memory.lessons.cards import Card
from active_memory.lessons.citations import Citation
from active_memory.lessons.fields import (
    LessonId,
    Reason,
    VocabularyModel,
    byte_limit,
    dedupe,
    not_blank,
)
from active_memory.lessons.limits import REASON_MAX_BYTES

Action = Literal["keep", "adapt", "retire", "defer"]


class Decision(VocabularyModel):
    """A maintenance specialist's verdict on one supplied (id, revision) (SPEC §6)."""

    id: LessonId
    revision: Annotated[int, Field(ge=1)]
    action: Action
    reason: Reason = ""
    lesson: Card | None = None
    canonical: LessonId | None = None
    # What a keep or an adapt now stands on (SPEC §6: checked like a discovery's).
    citations: Annotated[list[Citation], AfterValidator(dedupe)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _shape(self) -> Decision:
        if self.citations and self.action not in ("keep", "adapt"):
            raise PydanticCustomError(
                "decision", "only 'keep' and 'adapt' carry 'citations'; this one is '{action}'",
                {"action": self.action},
            )  # fmt: skip
        if self.action == "adapt" and self.lesson is None:
            raise PydanticCustomError("decision", "an 'adapt' decision needs the new 'lesson'")
        if self.action != "adapt" and self.lesson is not None:
            raise PydanticCustomError(
                "decision", "only 'adapt' carries a 'lesson'; this one is '{action}'",
                {"action": self.action},
            )  # fmt: skip
        if self.canonical is not None:
            if self.action != "retire":
                raise PydanticCustomError(
                    "decision", "'canonical' belongs to 'retire' only; this one is '{action}'",
                    {"action": self.action},
                )  # fmt: skip
            if self.canonical == self.id:
                raise PydanticCustomError(
                    "decision", "a lesson cannot be retired into itself ({id})", {"id": self.id}
                )
        return self


class Proposal(Card):
    """A discovery specialist's new lesson, with what it stands on (SPEC §6)."""

    evidence: Annotated[list[str], AfterValidator(dedupe), Field(min_length=1)]
    citations: Annotated[list[Citation], AfterValidator(dedupe)] = Field(default_factory=list)
    why_recurs: Annotated[str, AfterValidator(not_blank), byte_limit(REASON_MAX_BYTES)]
