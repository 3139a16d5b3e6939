"""Why a lesson exists: the runs and evidence items it stands on (SPEC §4) and the files
of the checkout it cites, with the fingerprint that later tells whether it is stale
(docs/staleness.md)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from active_memory.lessons.fields import RootPath, VocabularyModel, dedupe


def _line_range(value: Any) -> Any:
    """Accept "12", "12-30", 12, [12, 30] for a citation's lines."""
    if value is None or isinstance(value, list | tuple):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+)\s*(?:[-\u2013]\s*(\d+)\s*)?", value)
        if match:
            start = int(match.group(1))
            return (start, int(match.group(2) or start))
    return value


class Citation(VocabularyModel):
    """A file of the checkout a lesson was written against, optionally with lines."""

    path: RootPath
    lines: Annotated[tuple[int, int] | None, BeforeValidator(_line_range)] = None
    # Set by the publish, never taken from a model: the SHA-256 of the cited lines (the
    # whole file without `lines`) as the checkout had them; later different: stale.
    sha256: Annotated[str | None, Field(pattern=r"^[0-9a-f]{64}$")] = None
    # Set by the publish too: the cited lines as they were (at most 4 KB of whole lines,
    # credentials masked), so maintenance can be shown a diff (docs/staleness.md).
    excerpt: Annotated[str | None, Field(max_length=8192)] = None

    @model_serializer(mode="wrap")
    def _without_unknown_hash(self, handler: SerializerFunctionWrapHandler) -> Any:
        # No fingerprint: serialized as before fingerprints existed (stored evidence,
        # tasks and their recorded-answer digests stay the same).
        data = handler(self)
        if isinstance(data, dict):
            if self.sha256 is None:
                data.pop("sha256", None)
            if self.excerpt is None:
                data.pop("excerpt", None)
        return data

    def without_excerpt(self) -> Citation:
        """This citation without its recorded text (what a specialist's task shows)."""
        return self if self.excerpt is None else self.model_copy(update={"excerpt": None})

    @model_validator(mode="after")
    def _ordered(self) -> Citation:
        if self.lines is not None:
            start, end = self.lines
            if start < 1 or end < start:
                raise PydanticCustomError(
                    "lines", "lines must be 1-based and start <= end; got {lines}",
                    {"lines": list(self.lines)},
                )  # fmt: skip
        return self


def counted_citations(citations: Sequence[Citation]) -> list[Citation]:
    """The citations that count, in the order recorded (cited_text.py, `latest`): per
    (path, lines) the latest (the latest fingerprinted one, when any has a fingerprint:
    an unreadable re-citation replaces nothing), none that stands for no text
    (`NO_TEXT`: a place a keep or an adapt let go)."""
    from active_memory.cited_text import NO_TEXT

    by_range: dict[tuple[str, tuple[int, int] | None], Citation] = {}
    for c in citations:
        key = (c.path, c.lines)
        known = by_range.get(key)
        if c.sha256 is None and known is not None and known.sha256 is not None:
            continue
        by_range.pop(key, None)  # re-inserted last: in the order of the latest
        by_range[key] = c
    return [c for c in by_range.values() if c.sha256 != NO_TEXT]


class Evidence(VocabularyModel):
    """Why a lesson exists: the runs and evidence items (SPEC §4) and files it cites."""

    run_ids: Annotated[list[str], AfterValidator(dedupe)] = Field(default_factory=list)
    evidence_ids: Annotated[list[str], AfterValidator(dedupe)] = Field(default_factory=list)
    citations: Annotated[list[Citation], AfterValidator(dedupe)] = Field(default_factory=list)

    def without_excerpts(self) -> Evidence:
        """This evidence with its citations' recorded text left out."""
        if all(c.excerpt is None for c in self.citations):
            return self
        cited = [c.without_excerpt() for c in self.citations]
        return self.model_copy(update={"citations": cited})

    def counted_citations(self) -> list[Citation]:
        """The citations that count (`counted_citations`)."""
        return counted_citations(self.citations)

    def merged(self, other: Evidence) -> Evidence:
        """This evidence with `other`'s entries appended (duplicates dropped)."""
        return Evidence(
            run_ids=[*self.run_ids, *other.run_ids],
            evidence_ids=[*self.evidence_ids, *other.evidence_ids],
            citations=[*self.citations, *other.citations],
        )
