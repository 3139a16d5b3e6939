"""`active-memory mcp`: lessons as read-only Model Context Protocol tools (docs/mcp.md).

A stdio MCP server on the maintained SDK (`mcp`, the `mcp` extra). Two tools:

- `search_lessons(query, scope)`: a short index of the active lessons that match, best
  first: `id`, `title`, `score`, `match` (what matched: `file:…`, `folder:…`,
  `identifier:…`, `command:…` (every word of the family in the query), `keyword:…`,
  `title`, `recommendation`).
- `get_lesson(id)`: the lesson's card (title, recommendation, associations) and why it
  exists (its citations, the runs it came from, its revision); when the cited code
  changed since (checked as a hook delivery checks it, recall/stale.py) also `stale`: the
  changed ranges and the line a hook frames the card with. A card handed out here is
  recorded like a hook delivery (recall/records.py), so the postmortem knows the session
  received it.

The repository is the one holding the server's working directory (the harness starts
it in the session's cwd): a lesson of another repository is neither listed nor shown,
whatever ID is asked for. Nothing is written to the store; with Active Memory off here
(settings.py) both tools answer that it is off. Excluded paths (`exclude`) never match.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import anyio

from active_memory.lessons import Lesson

Scope = Literal["repository", "graph", "all"]
MAX_RESULTS = 10
SESSION_VARIABLES = ("ACTIVE_MEMORY_SESSION_ID", "CLAUDE_CODE_SESSION_ID")
"""Where the server learns the client's session (first set wins)."""
_WORD = re.compile(r"[A-Za-z0-9_./-]+")
_WEIGHTS = {
    "file": 8,
    "folder": 6,
    "identifier": 6,
    "command": 5,
    "keyword": 4,
    "title": 3,
    "recommendation": 1,
}


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


def score_lesson(lesson: Lesson, words: Sequence[str], exclude: tuple[str, ...]) -> tuple[int, str]:
    """How well `words` (lowercase) match `lesson`, and the best thing that matched."""
    from active_memory.exclusion import is_excluded

    hits: list[tuple[int, str]] = []
    card = lesson.associations
    for word in words:
        for path in card.files:
            if not is_excluded(path, exclude) and (word == path.lower() or word in path.lower()):
                hits.append((_WEIGHTS["file"], f"file:{path}"))
        for folder in card.folders:
            if not is_excluded(folder, exclude) and word.startswith(folder.lower().rstrip("/")):
                hits.append((_WEIGHTS["folder"], f"folder:{folder}"))
        for identifier in card.identifiers:
            if word == identifier.lower():
                hits.append((_WEIGHTS["identifier"], f"identifier:{identifier}"))
        for group in card.keywords:
            if word in (k.lower() for k in group):
                hits.append((_WEIGHTS["keyword"], f"keyword:{' '.join(group)}"))
        if word in _words(lesson.title):
            hits.append((_WEIGHTS["title"], "title"))
        if word in _words(lesson.recommendation):
            hits.append((_WEIGHTS["recommendation"], "recommendation"))
    given = set(words)
    for family in card.commands:
        # A family counts once, when the query holds each of its words (`mix test`).
        if all(part.lower() in given for part in family.split(" ")):
            hits.append((_WEIGHTS["command"], f"command:{family}"))
    if not hits:
        return 0, ""
    best = max(hits, key=lambda hit: hit[0])
    return sum(weight for weight, _ in hits), best[1]


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text)}


def search(
    lessons: Sequence[Lesson], query: str, exclude: tuple[str, ...], limit: int = MAX_RESULTS
) -> list[dict[str, Any]]:
    """The short index of `lessons` matching `query`, best first (score, then ID)."""
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(query)))
    scored = []
    for lesson in lessons:
        score, match = score_lesson(lesson, words, exclude)
        if score:
            scored.append((score, lesson.id, lesson.title, match))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [
        {"id": lesson_id, "title": title, "score": score, "match": match}
        for score, lesson_id, title, match in scored[:limit]
    ]


def in_scope(lesson: Lesson, namespace: str | None, scope: Scope) -> bool:
    """Whether `lesson` belongs to this repository and the asked scope."""
    if namespace is None:
        return False
    kind = lesson.scope.kind
    if scope != "all" and kind != scope:
        return False
    # A graph lesson bound to no repository is the graph's, for every repository.
    return lesson.scope.repository == namespace or (
        kind == "graph" and lesson.scope.repository is None
    )


def lesson_view(lesson: Lesson, stale: dict[str, Any] | None = None) -> dict[str, Any]:
    """What `get_lesson` answers: the card and why the lesson exists (and `stale`, when
    its cited code changed)."""
    evidence = lesson.evidence
    view = {
        "id": lesson.id,
        "revision": lesson.revision,
        "title": lesson.title,
        "recommendation": lesson.recommendation,
        "associations": lesson.associations.model_dump(mode="json"),
        "why": {
            "citations": [c.model_dump(mode="json", exclude_none=True) for c in evidence.citations],
            "runs": list(evidence.run_ids),
            "evidence": list(evidence.evidence_ids),
        },
    }
    if stale is not None:
        view["stale"] = stale
    return view


def stale_view(lesson: Lesson, root: str | None, date: str) -> dict[str, Any] | None:
    """`{"cited_code_changed", "note"}` when cited code changed under `root` since the
    lesson's revision of `date` (`YYYY-MM-DD`); None when not, or when nothing can tell."""
    from active_memory.recall import stale

    citations = [c.model_dump(mode="json") for c in lesson.evidence.citations]
    cited = stale.cited_of_citations(date, citations)
    ranges = stale.changed(cited, root or "") if cited is not None else []
    if cited is None or not ranges:
        return None
    return {"cited_code_changed": ranges, "note": stale.note(cited, ranges).rstrip("\n")}


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


def build_server(cwd: str | None = None, env: Mapping[str, str] | None = None) -> Any:
    """The MCP server, its tools bound to the checkout holding `cwd`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    environment = dict(os.environ if env is None else env)
    folder = cwd or os.getcwd()
    server: MCPServer[Any] = MCPServer(
        "active-memory",
        instructions="Lessons learned from this repository's costly mistakes. Search them "
        "before changing unfamiliar code; read one with get_lesson.",
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
    async def search_lessons(query: str, scope: Scope = "repository") -> dict[str, Any]:
        """Search this repository's lessons: a short index (id, title, score, match)."""
        place = here()
        if not place.settings.scopes:
            return {"results": [], "note": "Active Memory is off here (settings)"}
        if place.namespace is None:
            return {"results": [], "note": "not inside a git checkout: no repository lessons"}
        mine = [
            lesson
            for lesson in await _lessons(environment)
            if in_scope(lesson, place.namespace, scope)
        ]
        return {
            "repository": place.namespace,
            "results": search(mine, query, place.settings.exclude),
        }

    @server.tool(annotations=read_only)
    async def get_lesson(id: str) -> dict[str, Any]:
        """One lesson of this repository: its card and why it exists."""
        place = here()
        if not place.settings.scopes:
            raise ToolError("Active Memory is off here (settings)")
        lesson = next(
            (
                item
                for item in await _lessons(environment)
                if item.id == id and in_scope(item, place.namespace, "all")
            ),
            None,
        )
        if lesson is None:
            raise ToolError(f"no active lesson {id} in this repository; use search_lessons")
        _record_delivery(place, lesson)
        stale = None
        if any(c.sha256 for c in lesson.evidence.citations):
            stale = stale_view(lesson, place.root, await _revision_date(environment, lesson))
        return lesson_view(lesson, stale)

    return server


def run_stdio(cwd: str | None = None) -> None:
    """Serve on stdin/stdout until the client closes them."""
    build_server(cwd).run("stdio")
