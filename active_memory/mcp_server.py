"""`active-memory mcp`: lessons as read-only Model Context Protocol tools (docs/mcp.md).

A stdio MCP server on the maintained SDK (`mcp`, the `mcp` extra). Two tools, each with
a description for every parameter and a typed output schema (mcp_models.py); answers
are compact JSON, validated against that schema:

- `search_lessons(query, scope)`: a short index of the active lessons that match, best
  first (mcp_search.py: recall's score table).
- `get_lesson(id, include_recorded_code)`: the lesson's card (title, recommendation,
  associations) and why it exists (its citations, the runs it came from, its revision);
  when the cited code changed since (checked as a hook delivery checks it,
  recall/stale.py) also `stale`. The code as it was when the lesson was written (its
  fingerprint and recorded text) only when asked: it costs tokens and misleads where
  the code changed. A card handed out here is recorded like a hook delivery
  (recall/records.py), so the postmortem knows the session received it.

The repository is the one holding the server's working directory (the harness starts
it in the session's cwd): a lesson of another repository is neither listed nor shown,
whatever ID is asked for. Nothing is written to the store; with Active Memory off here
(settings.py) both tools answer that it is off. Excluded paths (`exclude`) never match.
`serverInfo` carries the package's version.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Annotated, Any

import anyio

# The `mcp` extra: this module is imported only to serve (commands/mcp.py says how to
# install it when missing). The tools' annotations name its types at module level.
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from active_memory.lessons import Lesson
from active_memory.mcp_models import LessonCard, SearchResult, Stale, lesson_card
from active_memory.mcp_search import Scope, in_scope, search

SESSION_VARIABLES = ("ACTIVE_MEMORY_SESSION_ID", "CLAUDE_CODE_SESSION_ID")
"""Where the server learns the client's session (first set wins)."""
INSTRUCTIONS = (
    "Lessons learned from this repository's costly mistakes, each with what to do "
    "instead. Search them before changing unfamiliar code or after a command fails "
    "(search_lessons); read one with get_lesson."
)
QUERY = (
    "what you are about to touch or what failed: paths (src/api/client.ts), file or folder "
    "names, identifiers (regenerate_client), a command (mix test) or plain words"
)
SCOPE = (
    "which lessons: repository (default): lessons about this repository's code; graph: "
    "lessons for orchestrator graph nodes, bound to this repository or to none; "
    "repository_and_graph: both; all: the same as repository_and_graph (older name)"
)
LESSON_ID = "a lesson ID from search_lessons, e.g. L-12"
RECORDED = (
    "also return the cited code as it was when the lesson was written (fingerprint and "
    "text); off by default: it costs tokens, and where the code changed it can mislead"
)


class Place:
    """Where the server runs: the checkout, its repository namespace, its settings."""

    def __init__(self, cwd: str, env: Mapping[str, str]) -> None:
        from active_memory.recall.environment import (
            WORKSPACE_ENV,
            find_checkout_root,
            repository_namespace,
        )
        from active_memory.settings import effective_settings

        self.cwd = os.path.abspath(cwd)
        self.env = env
        self.root = env.get(WORKSPACE_ENV) or find_checkout_root(self.cwd)
        self.namespace = repository_namespace(self.root) if self.root else None
        self.settings = effective_settings(self.root, env)


def stale_view(lesson: Lesson, root: str | None, date: str) -> Stale | None:
    """What changed, when cited code changed under `root` since the lesson's revision
    of `date` (`YYYY-MM-DD`); None when not, or when nothing can tell."""
    from active_memory.recall import stale

    citations = [c.model_dump(mode="json") for c in lesson.evidence.citations]
    cited = stale.cited_of_citations(date, citations)
    ranges = stale.changed(cited, root or "") if cited is not None else []
    if cited is None or not ranges:
        return None
    return Stale(cited_code_changed=ranges, note=stale.note(cited, ranges).rstrip("\n"))


async def _revision_date(env: Mapping[str, str], lesson: Lesson) -> str:
    """The date (`YYYY-MM-DD`) the lesson's current revision was written; "" if unknown."""
    from active_memory.store.location import resolve_store_location
    from active_memory.store.opening import open_store

    async with open_store(resolve_store_location(None, env), create=False) as store:
        entries = await store.history(lesson.id)
    dates = [e.at.date().isoformat() for e in entries if e.revision == lesson.revision]
    return dates[-1] if dates else ""


async def _lessons(env: Mapping[str, str]) -> list[Lesson]:
    from active_memory.store.location import is_postgres_url, resolve_store_location
    from active_memory.store.opening import open_store

    location = resolve_store_location(None, env)
    if not is_postgres_url(location) and not await anyio.Path(location).exists():
        return []
    async with open_store(location, create=False) as store:
        found = await store.select()
    return [item for item in found if isinstance(item, Lesson) and item.status == "active"]


def _record_delivery(place: Place, lesson: Lesson) -> None:
    from active_memory.recall.environment import resolve_context
    from active_memory.recall.records import record_deliveries
    from active_memory.recall.types import CardHit, ToolCall

    # The client's session, when it tells its MCP servers (Claude Code sets
    # CLAUDE_CODE_SESSION_ID): the delivery then joins that session's run record.
    session = next((place.env[name] for name in SESSION_VARIABLES if place.env.get(name)), None)
    call = ToolCall("mcp", "get_lesson", {}, session=session, cwd=place.cwd)
    context = resolve_context(call, place.env)
    hit = CardHit(lesson.id, lesson.revision, 0, "file", "")
    record_deliveries(context, [hit])


def compact(answer: BaseModel) -> CallToolResult:
    """A tool result: the answer as structured content and as compact JSON text (the
    SDK would indent it; a client's model reads every byte)."""

    data = answer.model_dump(mode="json", exclude_none=True)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def build_server(cwd: str | None = None, env: Mapping[str, str] | None = None) -> Any:
    """The MCP server, its tools bound to the checkout holding `cwd`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from active_memory import __version__

    environment = dict(os.environ if env is None else env)
    folder = cwd or os.getcwd()
    server: MCPServer[Any] = MCPServer(
        "active-memory", version=__version__, instructions=INSTRUCTIONS
    )
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    def here() -> Place:
        # A settings file that cannot be read is the user's to fix: the tool says which
        # and why (a ToolError), instead of the SDK's bare "Error executing tool" and a
        # traceback on stderr.
        from active_memory.settings import SettingsError

        try:
            return Place(folder, environment)
        except SettingsError as exc:
            raise ToolError(
                f"Active Memory's settings are invalid: {exc}; fix that file "
                "(`active-memory settings` shows the effective values)"
            ) from None

    @server.tool(annotations=read_only)
    async def search_lessons(
        query: Annotated[str, Field(description=QUERY, min_length=1)],
        scope: Annotated[Scope, Field(description=SCOPE)] = "repository",
    ) -> Annotated[CallToolResult, SearchResult]:
        """Search this repository's lessons: a short index (id, title, score, match), best
        first. Read a lesson with get_lesson."""
        place = here()
        if not place.settings.scopes:
            return compact(SearchResult(results=[], note="Active Memory is off here (settings)"))
        if place.namespace is None:
            note = "not inside a git checkout: no repository lessons"
            return compact(SearchResult(results=[], note=note))
        mine = [
            lesson
            for lesson in await _lessons(environment)
            if in_scope(lesson, place.namespace, scope)
        ]
        found = search(mine, query, place.settings.exclude)
        return compact(SearchResult.model_validate({"repository": place.namespace,
                                                    "results": found}))  # fmt: skip

    @server.tool(annotations=read_only)
    async def get_lesson(
        id: Annotated[str, Field(description=LESSON_ID, min_length=1)],
        include_recorded_code: Annotated[bool, Field(description=RECORDED)] = False,
    ) -> Annotated[CallToolResult, LessonCard]:
        """One lesson of this repository: its card, why it exists, and whether the code it
        cites changed since."""
        place = here()
        if not place.settings.scopes:
            raise ToolError("Active Memory is off here (settings)")
        lesson = next(
            (
                item
                for item in await _lessons(environment)
                if item.id == id and in_scope(item, place.namespace, "repository_and_graph")
            ),
            None,
        )
        if lesson is None:
            raise ToolError(f"no active lesson {id} in this repository; use search_lessons")
        _record_delivery(place, lesson)
        stale = None
        if any(c.sha256 for c in lesson.evidence.citations):
            stale = stale_view(lesson, place.root, await _revision_date(environment, lesson))
        return compact(lesson_card(lesson, stale, with_code=include_recorded_code))

    return server


def run_stdio(cwd: str | None = None) -> None:
    """Serve on stdin/stdout until the client closes them."""
    build_server(cwd).run("stdio")
