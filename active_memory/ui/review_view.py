"""The review queue as plain data (the page and `/api/review`)."""

from __future__ import annotations

from typing import Any

from active_memory.lessons import Lesson
from active_memory.recall.frame import frame, render_card
from active_memory.store.lesson_store import LessonStore
from active_memory.ui.history_view import card_lines, unified
from active_memory.ui.word_diff import rows

REVIEW_DECIDED_SHOWN = 50
"""Decided proposals shown under the queue: the latest."""


async def review_page(store: LessonStore) -> dict[str, Any]:
    """The review queue: proposals waiting (oldest first), each with the card as it would
    be delivered and, for an adaptation, the diff against the lesson now; then the latest
    decided ones."""
    everything = await store.proposals()
    waiting: list[dict[str, Any]] = []
    for proposal in (p for p in everything if p.state == "proposed"):
        document = proposal.to_json()
        m = proposal.mutation
        card = m.card
        if m.action == "adapt":
            current = await store.get(m.id)
            document["agent_card"] = frame(
                [render_card(m.id, m.base_revision + 1, card.title, card.recommendation)]
            )
            now = current.card().model_dump(mode="json") if isinstance(current, Lesson) else None
            document["current_revision"] = current.revision if current else None
            document["diff"] = unified(
                card_lines(now), card_lines(card.model_dump(mode="json")),
                f"{m.id} r{current.revision if current else '?'} (now)", "proposed",
            )  # fmt: skip
        else:
            document["agent_card"] = frame([render_card("NEW", 1, card.title, card.recommendation)])
            document["current_revision"] = None
            document["diff"] = []
        document["diff_rows"] = rows(document["diff"])
        waiting.append(document)
    decided = [p.to_json() for p in everything if p.state != "proposed"]
    return {
        "proposed": waiting,
        "decided": decided[-REVIEW_DECIDED_SHOWN:][::-1],
        "count": len(waiting),
    }
