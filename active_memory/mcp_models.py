"""The MCP tools' typed answers (docs/mcp.md): their JSON schemas are the tools'
`outputSchema`, and every answer is validated against them before it is sent."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from active_memory.lessons import Lesson


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchHit(_Answer):
    """One lesson a query matched."""

    id: str = Field(description="the lesson's ID: pass it to get_lesson")
    title: str = Field(description="the lesson's title")
    score: int = Field(
        description="orders results: recall's score of the strongest match (file 1000, "
        "folder 800, identifier 700, command 600, keywords 500) plus words of the title "
        "(3 each) and recommendation (1 each); not a probability"
    )
    match: str = Field(
        description="what matched best: file:<path>, folder:<folder>, identifier:<name>, "
        "command:<family>, keyword:<group>, title or recommendation"
    )


class SearchResult(_Answer):
    """`search_lessons`' answer."""

    repository: str | None = Field(
        None, description="the repository namespace searched (from the working directory)"
    )
    results: list[SearchHit] = Field(description="at most 10 lessons, best first")
    note: str | None = Field(None, description="why nothing could be searched, when so")


class Associations(_Answer):
    """Where the lesson applies."""

    files: list[str] = Field(default_factory=list, description="root-relative files")
    folders: list[str] = Field(default_factory=list, description="root-relative folders")
    identifiers: list[str] = Field(default_factory=list, description="whole identifiers")
    keywords: list[list[str]] = Field(
        default_factory=list, description="groups of terms that match together"
    )
    commands: list[str] = Field(
        default_factory=list, description="command families, e.g. `mix test`"
    )


class RecordedCode(_Answer):
    """The cited code as it was when the lesson was written (asked for only)."""

    sha256: str | None = Field(None, description="fingerprint of the cited lines")
    text: str | None = Field(None, description="the cited lines' text (at most 4 KB)")


class Cited(_Answer):
    """A place in the code the lesson was written against."""

    path: str = Field(description="root-relative file")
    lines: tuple[int, int] | None = Field(None, description="first and last line; none: the file")
    recorded: RecordedCode | None = Field(
        None, description="only with include_recorded_code: the code as it was then"
    )


class Why(_Answer):
    """Why the lesson exists."""

    citations: list[Cited] = Field(description="the code it was written against")
    runs: list[str] = Field(description="the runs it was learnt from")
    evidence: list[str] = Field(description="the impact evidence it cites (ev-…)")


class Stale(_Answer):
    """The cited code changed since the lesson was written."""

    cited_code_changed: list[str] = Field(description="the changed ranges, path:first-last")
    note: str = Field(description="the line a hook frames the card with")


class LessonCard(_Answer):
    """`get_lesson`'s answer: the card, why it exists, and whether its code changed."""

    id: str = Field(description="the lesson's ID")
    revision: int = Field(description="its revision (grows by one per change)")
    title: str = Field(description="the card's title")
    recommendation: str = Field(description="what to do: the card's body")
    associations: Associations
    why: Why
    stale: Stale | None = Field(
        None, description="present when the cited code changed since; check it first"
    )


def lesson_card(
    lesson: Lesson, stale: Stale | None = None, *, with_code: bool = False
) -> LessonCard:
    """What `get_lesson` answers; the recorded code only `with_code`."""
    evidence = lesson.evidence
    cited = [
        Cited(
            path=c.path,
            lines=c.lines,
            recorded=RecordedCode(sha256=c.sha256, text=c.excerpt) if with_code else None,
        )
        for c in evidence.counted_citations()
    ]
    return LessonCard(
        id=lesson.id,
        revision=lesson.revision,
        title=lesson.title,
        recommendation=lesson.recommendation,
        associations=Associations.model_validate(lesson.associations.model_dump(mode="json")),
        why=Why(citations=cited, runs=list(evidence.run_ids), evidence=list(evidence.evidence_ids)),
        stale=stale,
    )
