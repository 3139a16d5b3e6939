"""What a tool call must touch for a card to be recalled (SPEC §5, §8), and which
associations are refused when a lesson is stored.

Files and folders are root-relative paths (fields.py); an identifier is one whole
literal name; a keyword group is 2 to 4 distinct lowercase terms, none of them a
`BROAD_WORDS` word; a command is one command family (SPEC §3, command_family.py), never
a bare program (`BROAD_PROGRAMS`, a program taking subcommands, an interpreter without
its script). At most `ASSOCIATIONS_MAX_PER_KIND` of each kind.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, SerializerFunctionWrapHandler, model_serializer
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
from active_memory.lessons.fields import RootPath, VocabularyModel, byte_limit, dedupe
from active_memory.lessons.limits import (
    ASSOCIATIONS_MAX_PER_KIND,
    COMMAND_MAX_BYTES,
    IDENTIFIER_MAX_BYTES,
    KEYWORD_GROUP_MAX_TERMS,
    KEYWORD_GROUP_MIN_TERMS,
)

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

_KEYWORD_TERM = re.compile(r"^[a-z0-9][a-z0-9_.+-]*$")


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


Identifier = Annotated[str, AfterValidator(_identifier), byte_limit(IDENTIFIER_MAX_BYTES)]
KeywordGroup = Annotated[list[str], AfterValidator(_keyword_group)]
CommandFamily = Annotated[str, byte_limit(COMMAND_MAX_BYTES), AfterValidator(_command_family)]


class Associations(VocabularyModel):
    """What a tool call must touch for a card to be recalled (SPEC §8)."""

    files: Annotated[
        list[RootPath], AfterValidator(dedupe), Field(max_length=ASSOCIATIONS_MAX_PER_KIND)
    ] = Field(default_factory=list)
    folders: Annotated[
        list[RootPath], AfterValidator(dedupe), Field(max_length=ASSOCIATIONS_MAX_PER_KIND)
    ] = Field(default_factory=list)
    identifiers: Annotated[
        list[Identifier], AfterValidator(dedupe), Field(max_length=ASSOCIATIONS_MAX_PER_KIND)
    ] = Field(default_factory=list)
    keywords: Annotated[
        list[KeywordGroup], AfterValidator(dedupe), Field(max_length=ASSOCIATIONS_MAX_PER_KIND)
    ] = Field(default_factory=list)
    # Command families a shell call's family matches (SPEC §5, §8; 2026-12).
    commands: Annotated[
        list[CommandFamily], AfterValidator(dedupe), Field(max_length=ASSOCIATIONS_MAX_PER_KIND)
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
