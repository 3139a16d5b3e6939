"""Reads for a listing of many lessons that must not build a model per lesson.

The web view filters 10,000 lessons by text, by run or evidence item, and by staleness
on every request. Building each lesson's pydantic model (validating its paths and
associations) costs a third of a millisecond a lesson; these reads hand back only what
the filter needs, as plain values: the card's text, the lessons holding an evidence
row, and the citations (built without validating them again: the store validated them
when they were written, as recall trusts its change rows, changes.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from active_memory.lessons import Citation
from active_memory.store.dialect import Dialect


class LessonText(NamedTuple):
    """What a text search looks in: ID, status, title, recommendation, associations."""

    id: str
    status: str
    text: str


TEXT_COLUMNS = "id, status, title, recommendation, associations"


def association_words(associations: str | None) -> str:
    """The values of a stored associations JSON, joined by spaces (never its keys)."""
    if not associations:
        return ""
    found = json.loads(associations)
    words: list[str] = []
    for values in found.values() if isinstance(found, dict) else ():
        for value in values if isinstance(values, list) else ():
            words.append(" ".join(value) if isinstance(value, list) else str(value))
    return " ".join(words)


def text_rows(rows: Sequence[Any]) -> list[LessonText]:
    """`TEXT_COLUMNS` rows as `LessonText`s (the text lower case)."""
    return [
        LessonText(row[0], row[1], " ".join(
            [row[0], row[2] or "", row[3] or "", association_words(row[4])]).lower())
        for row in rows
    ]  # fmt: skip


async def holders(d: Dialect, kind: str, value: str) -> set[str]:
    """The lessons with evidence row `(kind, value)` (a run ID, an evidence item ID)."""
    rows = await d.rows(
        "SELECT lesson_id FROM lesson_evidence WHERE kind = ? AND value = ?", kind, value
    )
    return {str(row[0]) for row in rows}


async def citations(d: Dialect, ids: Sequence[str]) -> dict[str, list[Citation]]:
    """Each named lesson's citations in the order recorded (absent: none)."""
    if not ids:
        return {}
    where, param = d.among("lesson_id", ids)
    rows = await d.rows(
        f"SELECT lesson_id, value FROM lesson_evidence WHERE {where} AND kind = 'citation' "
        "ORDER BY seq",
        param,
    )
    found: dict[str, list[Citation]] = {}
    for lesson_id, value in rows:
        data = json.loads(value)
        lines = data.get("lines")
        data["lines"] = tuple(lines) if lines is not None else None
        found.setdefault(str(lesson_id), []).append(Citation.model_construct(**data))
    return found
