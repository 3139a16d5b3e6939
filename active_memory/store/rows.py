"""Rows of the lesson store, shared by every backend: models to rows and back, and the
change set one write transaction collects before it writes anything."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from active_memory.errors import StoreCorrupt
from active_memory.lessons import (
    Associations,
    Author,
    Card,
    Evidence,
    GraphScope,
    HistoryEntry,
    Lesson,
    RepositoryScope,
    Tombstone,
)

LESSON_COLUMNS = (
    "id, revision, status, scope_kind, repository, graph_hash, node, "
    "title, recommendation, associations, canonical"
)

Scope = RepositoryScope | GraphScope


def scope_columns(scope: Scope) -> tuple[str, str, str, str]:
    """(scope_kind, repository, graph_hash, node); '' stands for "none"."""
    if isinstance(scope, RepositoryScope):
        return ("repository", scope.repository, "", "")
    return ("graph", scope.repository or "", scope.graph_hash, scope.node)


def card_columns(card: Card | None) -> tuple[str | None, str | None, str | None]:
    """(title, recommendation, associations JSON); all None for a tombstone."""
    if card is None:
        return (None, None, None)
    return (card.title, card.recommendation, card.associations.model_dump_json())


def row_scope(row: Any, location: str) -> Scope:
    """The scope of a `lessons` row (LESSON_COLUMNS order)."""
    kind, repository, graph_hash, node = row[3:7]
    try:
        if kind == "repository":
            return RepositoryScope(repository=repository)
        return GraphScope(graph_hash=graph_hash, node=node, repository=repository or None)
    except ValidationError as exc:
        raise StoreCorrupt(location, f"lesson {row[0]} has an unreadable scope: {exc}") from None


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cycle collector while building many models that hold no cycles.

    Hydrating 10,000 lessons otherwise spends over half its time in repeated collections.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def row_to_model(
    row: Any, evidence: dict[str, list[Any]] | None, location: str
) -> Lesson | Tombstone:
    """A `lessons` row (LESSON_COLUMNS order) and its evidence as a model."""
    lesson_id, revision, status = row[:3]
    title, recommendation, associations, canonical = row[7:]
    scope = row_scope(row, location)
    try:
        if status == "retired":
            return Tombstone(id=lesson_id, revision=revision, scope=scope, canonical=canonical)
        ev = evidence or {}
        return Lesson(
            id=lesson_id,
            revision=revision,
            scope=scope,
            status=status,
            title=title,
            recommendation=recommendation,
            associations=Associations.model_validate_json(associations),
            evidence=Evidence(
                run_ids=ev.get("run", []),
                evidence_ids=ev.get("evidence", []),
                citations=ev.get("citation", []),
            ),
        )
    except ValidationError as exc:
        raise StoreCorrupt(location, f"lesson {lesson_id} is unreadable: {exc}") from None


HISTORY_COLUMNS = (
    "lesson_id, revision, previous_revision, action, status, card, "
    "specialist, run_id, model, reason, at"
)


def row_to_history(row: Any, location: str) -> HistoryEntry:
    """A `lesson_history` row (HISTORY_COLUMNS order) as a model."""
    try:
        return HistoryEntry(
            lesson_id=row[0],
            revision=row[1],
            previous_revision=row[2],
            action=row[3],
            status=row[4],
            card=Card.model_validate_json(row[5]) if row[5] else None,
            author=Author(specialist=row[6], run_id=row[7], model=row[8]),
            reason=row[9],
            at=row[10],
        )
    except ValidationError as exc:
        raise StoreCorrupt(
            location, f"history of {row[0]} r{row[1]} is unreadable: {exc}"
        ) from None


@dataclass
class ChangeSet:
    """Every row one transaction writes, collected first and written in a few statements."""

    now: str
    inserts: list[tuple[Any, ...]] = field(default_factory=list)
    updates: list[tuple[Any, ...]] = field(default_factory=list)
    history: list[tuple[Any, ...]] = field(default_factory=list)
    evidence: list[tuple[str, str, str]] = field(default_factory=list)
    dropped_evidence: list[tuple[str]] = field(default_factory=list)

    def insert(
        self, lesson_id: str, revision: int, status: str, scope: Scope, card: Card | None,
        canonical: str | None = None,
    ) -> None:  # fmt: skip
        """A new row (a lesson, or a tombstone when `card` is None)."""
        self.inserts.append(
            (lesson_id, revision, status, *scope_columns(scope), *card_columns(card), canonical,
             self.now, self.now)
        )  # fmt: skip

    def update(
        self, lesson_id: str, base_revision: int, revision: int, status: str, card: Card | None,
        canonical: str | None = None,
    ) -> None:  # fmt: skip
        """Move a row from `base_revision` to `revision`; a retire drops its evidence."""
        self.updates.append(
            (revision, status, *card_columns(card), canonical, self.now, lesson_id, base_revision)
        )
        if card is None:
            self.dropped_evidence.append((lesson_id,))

    def record(
        self, lesson_id: str, revision: int, previous: int | None, action: str, status: str,
        scope: Scope, card: Card | None, author: Author, reason: str,
    ) -> None:  # fmt: skip
        """One append-only history row."""
        self.history.append(
            (lesson_id, revision, previous, action, status, scope.model_dump_json(),
             card.model_dump_json() if card is not None else None,
             author.specialist, author.run_id, author.model, reason, self.now)
        )  # fmt: skip

    def add_evidence(self, lesson_id: str, evidence: Evidence) -> None:
        """Append evidence rows; ones the lesson already has are ignored on write."""
        self.evidence += [(lesson_id, "run", run) for run in evidence.run_ids]
        self.evidence += [(lesson_id, "evidence", item) for item in evidence.evidence_ids]
        self.evidence += [(lesson_id, "citation", c.model_dump_json()) for c in evidence.citations]
