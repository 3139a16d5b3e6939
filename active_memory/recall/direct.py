"""A pending run's answers, read straight from the SQLite store at the run's version.

A run whose first call found no generation holding the store pins the store's version
(pins.py) and, until its generation exists, answers each call from `recall_keys`
(store/direct.py): one read transaction, one bounded index lookup per key of the call,
only lessons unchanged since the pinned version. The cards are rendered here exactly as a
generation renders them, walked in the same order (tier, then lesson ID) and offered to
the session ledger with the same `bound` protocol as a generation's walk (match.py).

What differs from a generation, and why it is accepted for the seconds a build takes:
per key at most `store.direct.LIMIT` lessons are offered (of the first `EXAMINE` in ID
order), so a session that already received dozens of a folder's cards may get nothing
more from it until the generation is there; the ID order is natural for IDs whose
digits end them (the store's `L-<n>`), text order otherwise.

After each read the run's pin is rewritten to name the current generation when that
generation holds the run's version (`CURRENT`'s `since` ≤ version, and the scope has not
changed since `checked`): from the next call on, the run reads the generation.
"""

from __future__ import annotations

import os

from active_memory.recall.frame import render_card
from active_memory.recall.index import order_key
from active_memory.recall.match import tier_keys
from active_memory.recall.postings import SIZE_CAP
from active_memory.recall.types import MATCH_SCORES, CardHit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from active_memory.recall.pins import Pending
    from active_memory.recall.signals import Signals
    from active_memory.recall.types import MatchKind, RecallContext

TIERS: tuple[MatchKind, ...] = ("file", "folder", "identifier", "command", "keywords")


class DirectSource:
    """A pending run's scope: cards read from the store at the run's version."""

    min_card = 0

    def __init__(self, pending: Pending, context: RecallContext) -> None:
        self.pending = pending
        self.context = context

    def walk(self, signals: Signals) -> DirectWalk:
        """The cards `signals` match, best first; honours `bound` like match.Walk."""
        return DirectWalk(self, signals)

    def read(self, signals: Signals, room: int) -> list[Any]:
        """The rows the call's keys offer that could fit `room`, in delivery order (not
        rendered yet: `DirectWalk` renders only the rows it reaches)."""
        from active_memory.store.changes import OldSchema
        from active_memory.store.direct import read_direct

        lookups: list[tuple[int, str, str]] = []
        for tier, (_kind, keys) in enumerate(tier_keys(signals)):
            lookups += [(tier, key[0], key[2:]) for key in keys]
        lookups += [(4, "k", term) for term in sorted(signals.terms)]
        pending = self.pending
        try:
            found = read_direct(pending.location, pending.scope, pending.version, lookups, room)
        except OldSchema:
            return []  # not migrated yet: nothing until a write migrates it
        self._settle(found.version, found.latest)
        return _ordered(found.rows, signals.terms)

    def _settle(self, version: int, latest: int) -> None:
        """Point the run's pin at the current generation once it holds the run's version."""
        from active_memory.recall.generations import read_pointer, scope_dir
        from active_memory.recall.pins import settle_pin

        pending, context = self.pending, self.context
        folder = scope_dir(context.recall_dir, pending.location, pending.scope)
        pointer = read_pointer(folder)
        if pointer is None or not pointer.since <= pending.version:
            return
        if pointer.holds(pending.version) or latest <= pointer.checked <= version:
            settle_pin(context, pending.scope, os.path.join(folder, pointer.generation))


def _ordered(rows: list[Any], terms: set[str]) -> list[Any]:
    """The rows in delivery order: tier, then lesson ID; each lesson once (at its
    strongest tier); a keyword group only when all its terms occur."""
    from active_memory.recall import jsonio

    by_tier: dict[int, dict[str, Any]] = {}
    for row in rows:
        if row[0] == 4:
            try:
                wanted = jsonio.loads(row[5])
            except ValueError:
                continue
            if not isinstance(wanted, list) or not all(term in terms for term in wanted):
                continue
        by_tier.setdefault(row[0], {})[row[1]] = row
    ordered: list[Any] = []
    seen: set[str] = set()
    for tier in sorted(by_tier):
        for lesson_id in sorted(by_tier[tier], key=order_key):
            if lesson_id not in seen:
                seen.add(lesson_id)
                ordered.append(by_tier[tier][lesson_id])
    return ordered


def _hit(row: Any) -> CardHit:
    """The card of one row, rendered as a generation renders it."""
    from active_memory.recall.generation import cited_of

    tier, lesson_id, revision, title, recommendation, _terms, _bytes, updated, citations = row
    kind = TIERS[tier]
    text = render_card(lesson_id, int(revision), title or "", recommendation or "")
    return CardHit(lesson_id, int(revision), MATCH_SCORES[kind], kind, text, 0,
                   cited_of(lesson_id, updated, citations))  # fmt: skip


class DirectWalk:
    """The direct source's matches as a walk: read at the first step, with its room."""

    __slots__ = ("_rows", "_signals", "_source", "room", "visits")

    def __init__(self, source: DirectSource, signals: Signals) -> None:
        self._source = source
        self._signals = signals
        self._rows: list[Any] | None = None
        self.room = SIZE_CAP
        self.visits = 0

    def bound(self, room: int) -> None:
        """From now on yield only cards of at most `room` bytes."""
        self.room = room

    def __iter__(self) -> DirectWalk:
        return self

    def __next__(self) -> CardHit:
        if self._rows is None:
            self._rows = self._source.read(self._signals, max(self.room, 0))
            self._rows.reverse()
        while self._rows:
            row = self._rows.pop()
            if row[6] > self.room:
                continue  # cannot fit: not even rendered
            hit = _hit(row)
            if hit.size <= self.room:
                self.visits += 1
                return hit
        raise StopIteration
