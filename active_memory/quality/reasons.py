"""Rejection reasons grouped into a few kinds, for `lessons stats` (docs/quality.md).

The checks (`specialists/checks.py`) write each reason as `json.path: message`; the kind is
read from the message's fixed wording. A reason that matches none is `invalid` (a shape
or size problem found by validation). The first matching rule wins.
"""

from __future__ import annotations

from collections.abc import Iterable

_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("secret", ("contains a credential",)),
    ("duplicate", ("near-duplicate of",)),
    ("generic_advice", ("generic advice", "generic-advice", "task-summary")),
    ("too_many", ("proposals are considered",)),
    ("repeated_title", ("repeats the title of",)),
    ("evidence", ("is not an evidence item", "may not cite")),
    (
        "citation",
        ("not a current file", "must cite a current file", "no checkout to verify"),
    ),
    ("associations", ("none matches a cited file", "needs one at least")),
    ("node", (".node:",)),
    ("scope", ("no repository namespace", "graph hash is unknown")),
)

REJECTION_KINDS: tuple[str, ...] = (*(kind for kind, _ in _RULES), "invalid")
"""Every kind `rejection_kind` can return, in report order."""


def rejection_kind(reason: str) -> str:
    """The kind of one rejection reason (`secret`, `duplicate`, …, else `invalid`)."""
    for kind, phrases in _RULES:
        if any(phrase in reason for phrase in phrases):
            return kind
    return "invalid"


def rejection_kinds(reasons: Iterable[str]) -> list[str]:
    """The distinct kinds of a proposal's reasons, in `REJECTION_KINDS` order."""
    found = {rejection_kind(reason) for reason in reasons}
    return [kind for kind in REJECTION_KINDS if kind in found]
