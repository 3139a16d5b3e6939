"""The vocabulary: lessons, their scopes and associations, decisions, proposals, mutations.

Everything that crosses a boundary between rooms (store, specialists, orchestrator,
recall) is one of these models. Limits of SPEC §5 are counted in UTF-8 bytes, because
that is what a card costs in an agent's context, not in characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from active_memory.command_family import (
    BOOKKEEPING,
    FILE_TOOLS,
    FILTERS,
    INTERPRETERS,
    SHELL_TOOLS,
    SHELLS,
    SUBCOMMAND_PROGRAMS,
    chain_families,
)

TITLE_MAX_BYTES = 96
RECOMMENDATION_MAX_BYTES = 640
REASON_MAX_BYTES = 640
PATH_MAX_BYTES = 512
IDENTIFIER_MAX_BYTES = 128
COMMAND_MAX_BYTES = 256
ASSOCIATIONS_MAX_PER_KIND = 32
KEYWORD_GROUP_MIN_TERMS = 2
KEYWORD_GROUP_MAX_TERMS = 4

# Words too common in code and prose to single out a piece of work: a keyword group
# containing one would fire on almost every tool call. Refused when a lesson is stored.
BROAD_WORDS: frozenset[str] = frozenset(
    {
        "a", "an", "and", "any", "api", "app", "bug", "build", "change", "check", "class",
        "code", "config", "data", "debug", "error", "file", "files", "fix", "folder",
        "for", "function", "get", "in", "is", "it", "make", "method", "module", "new",
        "of", "on", "or", "path", "project", "read", "repo", "run", "set", "src", "test",
        "tests", "the", "to", "tool", "type", "update", "use", "value", "with", "work",
        "write",
    }
)  # fmt: skip

# Programs a `commands` association may not name alone (SPEC §5: "a bare program is too
# broad"): a card on one would arrive with nearly every shell call. Beside these, a
# program that takes subcommands (`git`, `mix`, `npm`), an interpreter without its
# script, a shell, and the chain's bookkeeping and output filters (command_family.py).
BROAD_PROGRAMS: frozenset[str] = frozenset(
    {
        "ls", "find", "cp", "mv", "rm", "rmdir", "touch", "chmod", "chown", "ln", "stat",
        "file", "du", "df", "ps", "kill", "pkill", "diff", "tree", "realpath", "dirname",
        "basename", "env", "xargs", "open", "curl", "wget", "tar", "unzip", "zip",
    }
)  # fmt: skip

_LESSON_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
_GRAPH_HASH = re.compile(r"^[0-9a-f]{64}$")
_KEYWORD_TERM = re.compile(r"^[a-z0-9][a-z0-9_.+-]*$")


def utf8_size(text: str) -> int:
    """Size of `text` in UTF-8 bytes."""
    return len(text.encode("utf-8"))


def _byte_limit(limit: int) -> AfterValidator:
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


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("blank", "must not be empty or only whitespace")
    return value


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


def _identifier(value: str) -> str:
    if not value or any(ch.isspace() for ch in value):
        raise PydanticCustomError(
            "identifier",
            "'{value}' is not a whole literal name (no spaces, not empty)",
            {"value": value},
        )
    return value


def _command_family(value: str) -> str:
    """A `commands` association: the command family (SPEC §3) `value` names, normalised by
    command_family.py (`cd app && timeout 60 mix test x.exs` is `mix test`); one family,
    never a bare program."""
    families = chain_families(value.strip())
    if not families:
        raise PydanticCustomError(
            "command",
            "'{value}' names no command (empty, or only `cd`, `echo`, … around the work)",
            {"value": value},
        )
    if len(families) > 1:
        raise PydanticCustomError(
            "command",
            "'{value}' names several commands ({families}); give one family per entry",
            {"value": value, "families": ", ".join(families)},
        )
    family = families[0]
    words = family.split(" ")
    program = words[0]
    if len(words) == 1 and _is_broad_program(program):
        raise PydanticCustomError(
            "broad_command",
            "command '{family}' is a bare program, too broad for a card; name its "
            "subcommand or script (`git push`, `mix test`, `npm run build`, "
            "`node assets/build.js`)",
            {"family": family},
        )
    if program in FILE_TOOLS or program in SHELL_TOOLS:
        raise PydanticCustomError(
            "command",
            "'{value}' is a tool's name, not a command; associate the files it acts on",
            {"value": value},
        )
    return family


def _is_broad_program(program: str) -> bool:
    return (
        program in BROAD_PROGRAMS
        or program in SUBCOMMAND_PROGRAMS
        or program in INTERPRETERS
        or program in SHELLS
        or program in BOOKKEEPING
        or program in FILTERS
    )


def _keyword_group(terms: list[str]) -> list[str]:
    normalised = [t.strip().lower() for t in terms]
    for term in normalised:
        if not _KEYWORD_TERM.match(term):
            raise PydanticCustomError(
                "keyword",
                "keyword '{term}' must be one lowercase word (letters, digits, _ . + -)",
                {"term": term},
            )
    distinct = list(dict.fromkeys(normalised))
    if not KEYWORD_GROUP_MIN_TERMS <= len(distinct) <= KEYWORD_GROUP_MAX_TERMS:
        raise PydanticCustomError(
            "keyword_group",
            "a keyword group needs {low} to {high} distinct terms; got {n}",
            {"low": KEYWORD_GROUP_MIN_TERMS, "high": KEYWORD_GROUP_MAX_TERMS, "n": len(distinct)},
        )
    broad = [t for t in distinct if t in BROAD_WORDS]
    if broad:
        raise PydanticCustomError(
            "broad_keyword",
            "keyword group {group} uses broad word(s) {broad}; use terms specific to this code",
            {"group": distinct, "broad": broad},
        )
    return distinct


def _dedupe(values: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


Title = Annotated[str, AfterValidator(_not_blank), _byte_limit(TITLE_MAX_BYTES)]
Recommendation = Annotated[str, AfterValidator(_not_blank), _byte_limit(RECOMMENDATION_MAX_BYTES)]
Reason = Annotated[str, _byte_limit(REASON_MAX_BYTES)]
LessonId = Annotated[str, AfterValidator(_lesson_id)]
RootPath = Annotated[str, AfterValidator(_root_relative), _byte_limit(PATH_MAX_BYTES)]
Identifier = Annotated[str, AfterValidator(_identifier), _byte_limit(IDENTIFIER_MAX_BYTES)]
KeywordGroup = Annotated[list[str], AfterValidator(_keyword_group)]
CommandFamily = Annotated[str, _byte_limit(COMMAND_MAX_BYTES), AfterValidator(_command_family)]
Namespace = Annotated[str, AfterValidator(_not_blank), _byte_limit(PATH_MAX_BYTES)]


def _graph_hash(value: str) -> str:
    if not _GRAPH_HASH.match(value):
        raise PydanticCustomError(
            "graph_hash", "must be a lowercase hex SHA-256 (64 characters); got '{value}'",
            {"value": value},
        )  # fmt: skip
    return value


GraphHash = Annotated[str, AfterValidator(_graph_hash)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)


class RepositoryScope(_Model):
    """Lessons about one repository, injected when a tool call touches matching code."""

    kind: Literal["repository"] = "repository"
    repository: Namespace

    def key(self) -> tuple[str, str, str, str]:
        """A flat, sortable identity of the scope (kind, repository, graph hash, node)."""
        return ("repository", self.repository, "", "")


class GraphScope(_Model):
    """Lessons for one node of one graph, optionally only in one repository."""

    kind: Literal["graph"] = "graph"
    graph_hash: GraphHash
    node: Annotated[str, AfterValidator(_not_blank)]
    repository: Namespace | None = None

    def key(self) -> tuple[str, str, str, str]:
        """A flat, sortable identity of the scope (kind, repository, graph hash, node)."""
        return ("graph", self.repository or "", self.graph_hash, self.node)


Scope = Annotated[RepositoryScope | GraphScope, Field(discriminator="kind")]


class Associations(_Model):
    """What a tool call must touch for a card to be recalled (SPEC §8)."""

    files: Annotated[
        list[RootPath], AfterValidator(_dedupe), Field(max_length=ASSOCIATIONS_MAX_PER_KIND)
    ] = Field(default_factory=list)
    folders: Annotated[
        list[RootPath], AfterValidator(_dedupe), Field(max_length=ASSOCIATIONS_MAX_PER_KIND)
    ] = Field(default_factory=list)
    identifiers: Annotated[
        list[Identifier], AfterValidator(_dedupe), Field(max_length=ASSOCIATIONS_MAX_PER_KIND)
    ] = Field(default_factory=list)
    keywords: Annotated[
        list[KeywordGroup], AfterValidator(_dedupe), Field(max_length=ASSOCIATIONS_MAX_PER_KIND)
    ] = Field(default_factory=list)
    # Command families a shell call's family matches (SPEC §5, §8; 2026-12).
    commands: Annotated[
        list[CommandFamily], AfterValidator(_dedupe), Field(max_length=ASSOCIATIONS_MAX_PER_KIND)
    ] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _without_empty_commands(self, handler: SerializerFunctionWrapHandler) -> Any:
        # No commands: serialized as before they existed, so stored associations, tasks
        # and their recorded-answer digests stay byte for byte the same.
        data = handler(self)
        if isinstance(data, dict) and not self.commands:
            data.pop("commands", None)
        return data

    def is_empty(self) -> bool:
        """True when nothing could ever recall the card."""
        return not (
            self.files or self.folders or self.identifiers or self.keywords or self.commands
        )


class Card(_Model):
    """The part of a lesson an agent sees: title, recommendation and what recalls it."""

    title: Title
    recommendation: Recommendation
    associations: Associations = Associations()


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


class Citation(_Model):
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


class Evidence(_Model):
    """Why a lesson exists: the runs and evidence items (SPEC §4) and files it cites."""

    run_ids: Annotated[list[str], AfterValidator(_dedupe)] = Field(default_factory=list)
    evidence_ids: Annotated[list[str], AfterValidator(_dedupe)] = Field(default_factory=list)
    citations: Annotated[list[Citation], AfterValidator(_dedupe)] = Field(default_factory=list)

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


class Author(_Model):
    """Who made a change: the run, the specialist (or a person's command), the model."""

    specialist: Annotated[str, AfterValidator(_not_blank)]
    run_id: str | None = None
    model: str | None = None


Status = Literal["active", "deferred"]
StatusWithRetired = Literal["active", "deferred", "retired"]


class Lesson(_Model):
    """A stored, living lesson: its card plus identity, scope, status and evidence."""

    id: LessonId
    revision: Annotated[int, Field(ge=1)]
    scope: Scope
    status: Status = "active"
    title: Title
    recommendation: Recommendation
    associations: Associations = Associations()
    evidence: Evidence = Evidence()

    def card(self) -> Card:
        """Only what an agent sees."""
        return Card(
            title=self.title, recommendation=self.recommendation, associations=self.associations
        )


class Tombstone(_Model):
    """A retired ID: identity and last revision kept, content not, so it is never recreated."""

    id: LessonId
    revision: Annotated[int, Field(ge=1)]
    scope: Scope
    status: Literal["retired"] = "retired"
    canonical: LessonId | None = None


Action = Literal["keep", "adapt", "retire", "defer"]


class Decision(_Model):
    """A maintenance specialist's verdict on one supplied (id, revision) (SPEC §6)."""

    id: LessonId
    revision: Annotated[int, Field(ge=1)]
    action: Action
    reason: Reason = ""
    lesson: Card | None = None
    canonical: LessonId | None = None
    # What a keep or an adapt now stands on (SPEC §6: checked like a discovery's).
    citations: Annotated[list[Citation], AfterValidator(_dedupe)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _shape(self) -> Decision:
        if self.citations and self.action not in ("keep", "adapt"):
            raise PydanticCustomError(
                "decision", "only 'keep' and 'adapt' carry 'citations'; this one is '{action}'",
                {"action": self.action},
            )  # fmt: skip
        if self.action == "adapt" and self.lesson is None:
            raise PydanticCustomError("decision", "an 'adapt' decision needs the new 'lesson'")
        if self.action != "adapt" and self.lesson is not None:
            raise PydanticCustomError(
                "decision", "only 'adapt' carries a 'lesson'; this one is '{action}'",
                {"action": self.action},
            )  # fmt: skip
        if self.canonical is not None:
            if self.action != "retire":
                raise PydanticCustomError(
                    "decision", "'canonical' belongs to 'retire' only; this one is '{action}'",
                    {"action": self.action},
                )  # fmt: skip
            if self.canonical == self.id:
                raise PydanticCustomError(
                    "decision", "a lesson cannot be retired into itself ({id})", {"id": self.id}
                )
        return self


class Proposal(Card):
    """A discovery specialist's new lesson, with what it stands on (SPEC §6)."""

    evidence: Annotated[list[str], AfterValidator(_dedupe), Field(min_length=1)]
    citations: Annotated[list[Citation], AfterValidator(_dedupe)] = Field(default_factory=list)
    why_recurs: Annotated[str, AfterValidator(_not_blank), _byte_limit(REASON_MAX_BYTES)]


# --- Mutations: what a publish applies, each checked against the revision it read. ---


class CreateLesson(_Model):
    """A new lesson; the store gives it an ID and revision 1."""

    action: Literal["create"] = "create"
    scope: Scope
    card: Card
    evidence: Evidence = Evidence()
    author: Author
    reason: Reason = ""


class AdaptLesson(_Model):
    """Replace a lesson's card (and make it `status`, default active); revision + 1."""

    action: Literal["adapt"] = "adapt"
    id: LessonId
    base_revision: Annotated[int, Field(ge=1)]
    card: Card
    evidence: Evidence = Evidence()
    author: Author
    reason: Reason = ""
    status: Status | None = None  # None: active (a maintenance adapt reactivates a lesson)


class RetireLesson(_Model):
    """Retire a lesson into a tombstone, optionally absorbed by a canonical card."""

    action: Literal["retire"] = "retire"
    id: LessonId
    base_revision: Annotated[int, Field(ge=1)]
    canonical: LessonId | None = None
    author: Author
    reason: Reason = ""


class DeferLesson(_Model):
    """Make a lesson inactive without retiring it; revision + 1."""

    action: Literal["defer"] = "defer"
    id: LessonId
    base_revision: Annotated[int, Field(ge=1)]
    author: Author
    reason: Reason = ""


Mutation = Annotated[
    CreateLesson | AdaptLesson | RetireLesson | DeferLesson, Field(discriminator="action")
]


class HistoryEntry(_Model):
    """One row of a lesson's append-only revision history."""

    lesson_id: LessonId
    revision: Annotated[int, Field(ge=1)]
    previous_revision: int | None
    action: Literal["create", "adapt", "retire", "defer", "revert", "import", "keep"]
    status: StatusWithRetired
    card: Card | None
    author: Author
    reason: str
    at: datetime


class PublishReceipt(_Model):
    """What one publish changed: (id, new revision) per action."""

    created: list[tuple[str, int]] = Field(default_factory=list)
    adapted: list[tuple[str, int]] = Field(default_factory=list)
    retired: list[tuple[str, int]] = Field(default_factory=list)
    deferred: list[tuple[str, int]] = Field(default_factory=list)
    proposed: list[int] = Field(default_factory=list)  # manual review: the proposals' numbers

    def total(self) -> int:
        """Number of lessons changed."""
        return len(self.created) + len(self.adapted) + len(self.retired) + len(self.deferred)


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)
