"""What the store's callers hand it and get back, apart from `lessons/`'s vocabulary:
queries, listing rows, import reports and publish marks."""

from __future__ import annotations

from typing import Annotated, NamedTuple

from pydantic import BaseModel, ConfigDict, Field


class LessonQuery(BaseModel):
    """Which lessons to list; every field narrows, None means any."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repository: str | None = None
    graph_hash: str | None = None
    node: str | None = None
    kind: str | None = None  # "repository" | "graph"
    include_deferred: bool = True
    include_retired: bool = False
    ids: tuple[str, ...] | None = None  # only these lessons (a page of a listing)


class LessonSummary(NamedTuple):
    """What a listing shows of a lesson: identity, status, scope columns, title."""

    id: str
    revision: int
    status: str
    scope_kind: str
    repository: str  # '' for a graph lesson of every repository
    graph_hash: str
    node: str
    title: str | None  # None for a retired tombstone


class ImportReport(BaseModel):
    """What an import changed, and what it left alone and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    added: list[tuple[str, int]] = []
    updated: list[tuple[str, int]] = []
    unchanged: list[tuple[str, str]] = []  # (id, why)


MARK_PREFIX = "mark:"
"""`store_meta` keys of publish marks, apart from the store's counters."""


class PublishMark(BaseModel):
    """A token a publish leaves in the store in its own transaction.

    The postmortem journal writes `token` before the publish; after a crash, the store
    holding it under `key` proves that the publish committed even though the journal
    never recorded its end (docs/store.md).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    token: Annotated[int, Field(ge=0, lt=2**62)]
