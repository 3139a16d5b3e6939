"""`lessons audit`: screen what a store already holds for credentials (docs/quality.md).

Every living lesson's card and evidence is screened, and so is its history: an earlier
revision's card and every revision's reason are stored too, so a secret there is as much
a leak as one in the current card. Tombstones keep no content but their history does.
"""

from __future__ import annotations

from dataclasses import dataclass

from active_memory.credentials import Finding, screen, strings_of
from active_memory.lessons import Lesson
from active_memory.store import LessonQuery, LessonStore


@dataclass(frozen=True, slots=True)
class LessonFinding:
    """A secret stored in one lesson: where it is and a masked excerpt."""

    lesson_id: str
    finding: Finding

    def to_json(self) -> dict[str, str]:
        """`{"lesson_id", "field", "kind", "excerpt"}`; the excerpt is masked."""
        return {"lesson_id": self.lesson_id, **self.finding.to_json()}


async def audit_store(store: LessonStore) -> list[LessonFinding]:
    """Every secret the store holds, lesson by lesson (ID order), field by field."""
    findings: list[LessonFinding] = []
    for item in await store.select(LessonQuery(include_retired=True)):
        fields: list[tuple[str, str]] = []
        if isinstance(item, Lesson):
            current = item.model_dump(
                mode="json", include={"title", "recommendation", "associations", "evidence"}
            )
            fields.extend(strings_of(current, ""))
        for entry in await store.history(item.id):
            where = f"history[r{entry.revision}]"
            fields.append((f"{where}.reason", entry.reason))
            # The current card was screened above; earlier ones only live in history.
            if entry.card is not None and not (
                isinstance(item, Lesson) and entry.revision == item.revision
            ):
                fields.extend(strings_of(entry.card.model_dump(mode="json"), f"{where}.card"))
        findings.extend(LessonFinding(item.id, finding) for finding in screen(fields))
    return findings
