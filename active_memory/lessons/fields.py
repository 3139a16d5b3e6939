"""The checked texts a lesson is made of: titles, recommendations, reasons, lesson IDs,
root-relative paths, namespaces and graph hashes, and the base of every model.

Each is an `Annotated` string whose validators refuse what SPEC §5 refuses (blank text,
more bytes than limits.py allows, an absolute path or one leaving the checkout root), with
an error that names what is wrong.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic_core import PydanticCustomError

from active_memory.lessons.limits import (
    PATH_MAX_BYTES,
    REASON_MAX_BYTES,
    RECOMMENDATION_MAX_BYTES,
    TITLE_MAX_BYTES,
    utf8_size,
)

_LESSON_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
_GRAPH_HASH = re.compile(r"^[0-9a-f]{64}$")


class VocabularyModel(BaseModel):
    """The base of the vocabulary's models: frozen, and an unknown key is an error."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)


def byte_limit(limit: int) -> AfterValidator:
    """A validator refusing a text of more than `limit` UTF-8 bytes."""

    def check(value: str) -> str:
        size = utf8_size(value)
        if size > limit:
            raise PydanticCustomError(
                "too_many_bytes",
                "is {size} bytes in UTF-8; the limit is {limit} bytes",
                {"size": size, "limit": limit},
            )
        return value

    return AfterValidator(check)


def not_blank(value: str) -> str:
    """`value`, unless it is empty or only whitespace."""
    if not value.strip():
        raise PydanticCustomError("blank", "must not be empty or only whitespace")
    return value


def dedupe(values: list[Any]) -> list[Any]:
    """`values` without repeats, in their first order."""
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


def _lesson_id(value: str) -> str:
    if not _LESSON_ID.match(value):
        raise PydanticCustomError(
            "lesson_id",
            "'{value}' is not a lesson ID (letters, digits and . _ : - only; at most 64)",
            {"value": value},
        )
    return value


def _root_relative(value: str) -> str:
    """Normalise a root-relative path; refuse absolute paths and escapes from the root."""
    cleaned = value.replace("\\", "/").strip()
    if not cleaned:
        raise PydanticCustomError("path", "must be a root-relative path, not empty")
    if cleaned.startswith("/") or re.match(r"^[A-Za-z]:/", cleaned):
        raise PydanticCustomError(
            "path", "'{value}' is absolute; give it relative to the checkout root", {"value": value}
        )
    parts = [p for p in PurePosixPath(cleaned).parts if p != "."]
    if ".." in parts:
        raise PydanticCustomError(
            "path", "'{value}' leaves the checkout root ('..')", {"value": value}
        )
    if not parts:
        raise PydanticCustomError("path", "'{value}' names the root itself", {"value": value})
    return "/".join(parts)


def _graph_hash(value: str) -> str:
    if not _GRAPH_HASH.match(value):
        raise PydanticCustomError(
            "graph_hash", "must be a lowercase hex SHA-256 (64 characters); got '{value}'",
            {"value": value},
        )  # fmt: skip
    return value


Title = Annotated[str, AfterValidator(not_blank), byte_limit(TITLE_MAX_BYTES)]
Recommendation = Annotated[str, AfterValidator(not_blank), byte_limit(RECOMMENDATION_MAX_BYTES)]
Reason = Annotated[str, byte_limit(REASON_MAX_BYTES)]
LessonId = Annotated[str, AfterValidator(_lesson_id)]
RootPath = Annotated[str, AfterValidator(_root_relative), byte_limit(PATH_MAX_BYTES)]
Namespace = Annotated[str, AfterValidator(not_blank), byte_limit(PATH_MAX_BYTES)]
GraphHash = Annotated[str, AfterValidator(_graph_hash)]
