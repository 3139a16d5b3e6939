"""Did the next session avoid the mistake? The bench's measures, as pure functions.

- A failure family **recurs** in a session when it failed there and in an earlier session
  whose postmortem was published before this session started (so a lesson about it could
  have reached it). Families that failed only in sessions it could not see yet (they were
  still running) are counted apart, as not yet learnable.
- A lesson **concerns** a family when it was written against a repeated-failure item of
  that family (its evidence cites the item's ID), when its `commands` association names
  the family, when one of its keyword groups is exactly the family's words (`git push` →
  `["git", "push"]`, how a command was associated before `commands` existed), or when its
  title or recommendation names the family's command (`git push -u origin …` names
  `git push`; shell families only: a file tool's family names a file, not a mistake).
- For a recurring family, the first call that delivered a card concerning it *to the
  context of the failing call* decides (a card a sub-agent got is not in the main
  agent's context, and a card given before a compaction of that context is no longer in
  it): **prevented** when that call came before the family's first failing call;
  **shortened** when it was the first failing call or came after it, but before the
  family's second failing call and before the call that resolved the first failure (a
  card reaches the model with its call's result, so a card triggered by the failing call
  itself can only shorten); **missed** otherwise, or when no such card came.
- A delivered card **concerns nothing the session then did** when, from the call that
  delivered it on, the session ran no command of a family the lesson concerns, or, for a
  lesson that concerns no family, touched none of the files it cites or associates (nor
  anything under its folders). Its bytes are the card's own (framing aside).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from learning.calls import Call, command_family
from learning.replay import Delivery

Verdict = Literal["prevented", "shortened", "missed"]
LessonKey = tuple[str, int]


def _words(text: str) -> list[str]:
    cleaned = "".join(ch if ch.isalnum() or ch in "-_.:/" else " " for ch in text.lower())
    return cleaned.split()


def _names_command(text: str, family: str) -> bool:
    words, wanted = _words(text), family.lower().split()
    return any(words[i : i + len(wanted)] == wanted for i in range(len(words)))


def is_shell_family(family: str) -> bool:
    """A family of a shell command (not a file tool's `Read path`)."""
    first = family.split(" ", 1)[0]
    # Tool names (`Read`, `Edit`, `Skill`) are capitalised; programs are not.
    return bool(first) and not first[0].isupper() and first not in command_family.FILE_TOOLS


def concerned_families(
    lesson: Mapping[str, Any], families: Iterable[str], evidence_families: Mapping[str, str]
) -> frozenset[str]:
    """The families among `families` that `lesson` (an exported lesson) concerns;
    `evidence_families` maps a repeated-failure evidence ID to its family."""
    evidence = (lesson.get("evidence") or {}).get("evidence_ids") or []
    found = {evidence_families[e] for e in evidence if e in evidence_families}
    associations = lesson.get("associations") or {}
    found.update(str(c) for c in associations.get("commands") or [])
    text = f"{lesson.get('title') or ''}\n{lesson.get('recommendation') or ''}"
    groups = [frozenset(str(t) for t in group) for group in associations.get("keywords") or []]
    for family in families:
        if not is_shell_family(family):
            continue
        if frozenset(family.lower().split()) in groups or _names_command(text, family):
            found.add(family)
    return frozenset(found)


@dataclass(frozen=True)
class Recurrence:
    """A family that failed again in a session that could have learned about it."""

    session: str
    family: str
    failures: int
    first_failure: int
    bound: int
    """The second failing call or the resolution, whichever came first (else the end)."""
    delivered_at: int | None
    lesson: LessonKey | None
    verdict: Verdict


def classify(
    session: str,
    calls: list[Call],
    family: str,
    deliveries: list[Delivery],
    concerns: Callable[[LessonKey], frozenset[str]],
    epochs: list[int] | None = None,
) -> Recurrence:
    """The verdict for `family` in one session (see the module docstring); `epochs`: per
    call, the compactions of the main context before it (none: no compaction)."""
    failing = [c.index for c in calls if c.failed and c.failure_family == family]
    if not failing:
        raise ValueError(f"{family} did not fail in session {session}")
    first = failing[0]
    ends = list(failing[1:2])
    ends += [c.index for c in calls if c.index > first and family in c.resolves][:1]
    bound = min(ends) if ends else len(calls)
    agent = calls[first].agent
    epoch = epochs[first] if epochs and first < len(epochs) else 0

    def held(delivery: Delivery) -> bool:
        # In the failing call's context, and not lost to a compaction before it (a card
        # given at or after the first failure is in the context the next call sees).
        return delivery.agent == agent and (delivery.call >= first or delivery.epoch == epoch)

    relevant = [d for d in deliveries if family in concerns((d.lesson, d.revision)) and held(d)]
    earliest = min(relevant, key=lambda d: d.call) if relevant else None
    verdict: Verdict = "missed"
    if earliest is not None and earliest.call < first:
        verdict = "prevented"
    elif earliest is not None and earliest.call < bound:
        verdict = "shortened"
    return Recurrence(
        session, family, len(failing), first, bound,
        earliest.call if earliest else None,
        (earliest.lesson, earliest.revision) if earliest else None, verdict,
    )  # fmt: skip


def concerns_nothing_after(
    delivery: Delivery,
    calls: list[Call],
    families: frozenset[str],
    lesson: Mapping[str, Any],
    touched: Callable[[Call], Iterable[str]],
) -> bool:
    """Whether the session, from the delivering call on, did nothing the card is about."""
    later = [c for c in calls if c.index >= delivery.call]
    if families:
        return not any(c.family in families or c.failure_family in families for c in later)
    associations = lesson.get("associations") or {}
    cited = (lesson.get("evidence") or {}).get("citations") or []
    files = {str(f) for f in associations.get("files") or []}
    files.update(str(c.get("path")) for c in cited if isinstance(c, dict))
    folders = [str(f).rstrip("/") + "/" for f in associations.get("folders") or []]
    for call in later:
        for path in touched(call):
            if path in files or any(path.startswith(f) or path + "/" == f for f in folders):
                return False
    return True
