"""What each specialist must answer (SPEC §6): the JSON shapes its provider validates.

These are the *wire* schemas: they fix the shape (field names, types, the action enum)
so that a mis-shaped answer gets the provider's one repair turn. Content rules (byte
limits, root-relative paths, keyword groups, lesson ID syntax) are deliberately not
enforced here but per item by `checks.py`, with the vocabulary models of `lessons/`:
one oversized title then costs one proposal, with its reason recorded, not the whole
answer. The limits are still written into the field descriptions the model reads.

- `MaintenanceAnswer`: `{"decisions": [DecisionDraft, ...]}`.
- `RepositoryDiscoveryAnswer`: `{"lessons": [ProposalDraft, ...]}`.
- `GraphDiscoveryAnswer`: `{"lessons": [GraphProposalDraft, ...]}`; each names the
  executed `node` the lesson is for (one of its cited evidence items' nodes).
- `answer_schema(name)` gives the model class for a specialist.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from active_memory.lessons import (
    KEYWORD_GROUP_MAX_TERMS,
    KEYWORD_GROUP_MIN_TERMS,
    REASON_MAX_BYTES,
    RECOMMENDATION_MAX_BYTES,
    TITLE_MAX_BYTES,
)
from active_memory.specialists.kinds import kind_of


class _Wire(BaseModel):
    # Unknown fields are refused so that a misspelt optional field (`canonnical`) is
    # quoted back in the repair turn instead of silently dropped.
    model_config = ConfigDict(extra="forbid", frozen=True)


class AssociationsDraft(_Wire):
    """What a tool call must touch for the card to be recalled."""

    files: list[str] = Field(
        default=[], description="root-relative file paths, e.g. api/schema.json"
    )
    folders: list[str] = Field(default=[], description="root-relative folders, e.g. src/api")
    identifiers: list[str] = Field(
        default=[], description="whole literal names that occur in the code, e.g. make_client"
    )
    keywords: list[list[str]] = Field(
        default=[],
        description=(
            f"groups of {KEYWORD_GROUP_MIN_TERMS} to {KEYWORD_GROUP_MAX_TERMS} specific "
            "lowercase terms that together identify the work; no broad words"
        ),
    )
    commands: list[str] = Field(
        default=[],
        description=(
            "command families a shell call matches: the program and its subcommand or "
            "script, e.g. mix test, git push, npm run build (never a bare program); the "
            "card arrives with that command's result"
        ),
    )


class CardDraft(_Wire):
    """A lesson's card: what an agent will see."""

    title: str = Field(description=f"at most {TITLE_MAX_BYTES} UTF-8 bytes")
    recommendation: str = Field(
        description=(
            f"at most {RECOMMENDATION_MAX_BYTES} UTF-8 bytes; a concrete action naming "
            "a command, file, identifier or flag in backticks"
        )
    )
    associations: AssociationsDraft = AssociationsDraft()


class CitationDraft(_Wire):
    """A file of the checkout the lesson was written against."""

    path: str = Field(description="root-relative path of a current file")
    lines: str | int | list[int] | None = Field(
        default=None, description='optional line range, e.g. "12-30"'
    )


class DecisionDraft(_Wire):
    """One verdict on one supplied lesson `(id, revision)`."""

    id: str = Field(description="the supplied lesson's id")
    revision: int = Field(description="the supplied lesson's revision")
    action: Literal["keep", "adapt", "retire", "defer"]
    reason: str = Field(default="", description=f"at most {REASON_MAX_BYTES} UTF-8 bytes")
    lesson: CardDraft | None = Field(default=None, description="the new card; 'adapt' only")
    canonical: str | None = Field(
        default=None, description="'retire' only: the id of the lesson that absorbs this one"
    )
    citations: list[CitationDraft] = Field(
        default=[],
        description=(
            "'keep' or 'adapt' only, optional: current files (and lines) the lesson now "
            "stands on, checked like a discovery's citations"
        ),
    )


class MaintenanceAnswer(_Wire):
    """A maintenance answer: exactly one decision per supplied `(id, revision)`."""

    decisions: list[DecisionDraft]


class ProposalDraft(CardDraft):
    """A proposed new lesson and what it stands on."""

    evidence: list[str] = Field(description="ids of the supplied evidence items it stands on")
    citations: list[CitationDraft] = []
    why_recurs: str = Field(
        description=f"why this work will come back; at most {REASON_MAX_BYTES} UTF-8 bytes"
    )
    adapts: str | None = Field(
        default=None,
        description=(
            "the id of an active lesson of the task's `lessons` that this proposal repeats "
            "and improves: it becomes an adaptation candidate of that lesson, not a new one"
        ),
    )


class GraphProposalDraft(ProposalDraft):
    """A proposed graph lesson: appended to the instructions of one executed node."""

    node: str = Field(description="the node the lesson is for: one of its evidence's nodes")


class RepositoryDiscoveryAnswer(_Wire):
    """Repository discovery's answer; an empty list is a good answer."""

    lessons: list[ProposalDraft]


class GraphDiscoveryAnswer(_Wire):
    """Graph discovery's answer; an empty list is a good answer."""

    lessons: list[GraphProposalDraft]


Answer = MaintenanceAnswer | RepositoryDiscoveryAnswer | GraphDiscoveryAnswer

_SCHEMAS: dict[str, type[BaseModel]] = {
    "graph_maintenance": MaintenanceAnswer,
    "repository_maintenance": MaintenanceAnswer,
    "graph_discovery": GraphDiscoveryAnswer,
    "repository_discovery": RepositoryDiscoveryAnswer,
}


def answer_schema(name: str) -> type[BaseModel]:
    """The answer model a specialist's provider session validates against."""
    return _SCHEMAS[kind_of(name).name]


def draft_data(draft: BaseModel) -> dict[str, Any]:
    """A draft as plain data, for validating it with the vocabulary models."""
    return draft.model_dump(mode="python", exclude_unset=False)


# --- examples shown to the model (tests check they pass every content check) --------

_EXAMPLE_CARD = CardDraft(
    title="Regenerate the API client through the make target",
    recommendation=(
        "After editing `api/schema.json`, run `make api-client`; never hand-edit "
        "`src/generated/client.ts`, the next generation overwrites it."
    ),
    associations=AssociationsDraft(
        files=["api/schema.json", "src/generated/client.ts"],
        identifiers=["make_client"],
        keywords=[["openapi", "codegen"]],
    ),
)


def example_answer(name: str) -> BaseModel:
    """A small valid answer for specialist `name`, as shown in its prompt."""
    kind = kind_of(name)
    if kind.is_maintenance:
        return MaintenanceAnswer(
            decisions=[
                DecisionDraft(id="L-7", revision=3, action="keep", reason="still true"),
                DecisionDraft(
                    id="L-8",
                    revision=1,
                    action="adapt",
                    reason="the make target was renamed",
                    lesson=_EXAMPLE_CARD,
                    citations=[CitationDraft(path="api/schema.json", lines="1-40")],
                ),
                DecisionDraft(
                    id="L-9", revision=2, action="retire", reason="paraphrase", canonical="L-7"
                ),
                DecisionDraft(
                    id="L-10", revision=1, action="defer", reason="the file moved; unsure where"
                ),
            ]
        )
    base = _EXAMPLE_CARD.model_dump()
    proposal = {
        **base,
        "evidence": ["ev-rr-0123456789ab"],
        "citations": [{"path": "api/schema.json", "lines": "1-40"}],
        "why_recurs": "every API change touches the schema and needs the client regenerated",
    }
    if kind.name == "graph_discovery":
        return GraphDiscoveryAnswer.model_validate(
            {
                "lessons": [
                    {
                        **proposal,
                        "title": "Run the generator before asking for review",
                        "recommendation": (
                            "Before finishing, run `make api-client` and commit "
                            "`src/generated/client.ts` with the schema change; reviewers "
                            "reject a stale client."
                        ),
                        "associations": {},
                        "citations": [],
                        "node": "worker",
                    }
                ]
            }
        )
    return RepositoryDiscoveryAnswer.model_validate({"lessons": [proposal]})
