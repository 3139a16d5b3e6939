"""A lesson's history as the page shows it: each revision with the change of its card
against the one before, as a unified diff (`diff`, for scripts) and as rows with the
changed words marked (`diff_rows`, word_diff.py)."""

from __future__ import annotations

import difflib
from typing import Any

from active_memory.lessons import HistoryEntry
from active_memory.ui.word_diff import rows


def card_lines(card: dict[str, Any] | None) -> list[str]:
    """A card (JSON) as lines of text to diff: title, recommendation, each association."""
    if card is None:
        return []
    a = card.get("associations", {})
    lines = [f"title: {card['title']}", "recommendation:"]
    lines += ["  " + line for line in str(card["recommendation"]).splitlines()]
    for name in ("files", "folders", "identifiers"):
        lines += [f"{name}: {value}" for value in a.get(name, [])]
    lines += [f"keywords: {' '.join(group)}" for group in a.get("keywords", [])]
    lines += [f"commands: {value}" for value in a.get("commands", [])]
    return lines


def unified(before: list[str], after: list[str], old: str, new: str) -> list[str]:
    """The unified diff of two cards' lines (one line of context)."""
    return list(difflib.unified_diff(before, after, fromfile=old, tofile=new, lineterm="", n=1))


def history_json(entries: list[HistoryEntry]) -> list[dict[str, Any]]:
    """Each revision with the diff of its card against the revision before it (a keep
    changes no card: no diff; a retire removes it)."""
    out: list[dict[str, Any]] = []
    previous: list[str] = []
    for entry in entries:
        text = card_lines(entry.card.model_dump(mode="json") if entry.card else None)
        diff: list[str] = []
        if entry.action != "keep":
            old = f"r{entry.previous_revision}" if entry.previous_revision else "(none)"
            diff = unified(previous, text, old, f"r{entry.revision}")
        document = entry.model_dump(mode="json")
        document["diff"] = diff
        document["diff_rows"] = rows(diff)
        out.append(document)
        if entry.card is not None:
            previous = text
    return out
