"""`active-memory mcp` driven by the MCP SDK's own stdio client (docs/mcp.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from recall_support import REPO_ROOT, hook_env, make_checkout, publish, repository_lesson

from active_memory.recall.records import read_deliveries

pytest.importorskip("mcp")

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.anyio
_ENTRY = "import sys; from active_memory.cli import run; sys.argv[0] = 'active-memory'; run()"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    checkout = make_checkout(tmp_path / "api")
    other = make_checkout(tmp_path / "web", remote="git@github.com:acme/web.git")
    store = tmp_path / "lessons.sqlite3"
    receipt = publish(
        store,
        [
            repository_lesson(
                "Regenerate the client after schema edits",
                "Run make api-client after editing api/schema.json.",
                files=["api/schema.json"],
                identifiers=["regenerate_client"],
            ),
            repository_lesson("Keep handlers small", folders=["src/handlers"]),
            repository_lesson(
                "Web: never edit dist",
                files=["api/schema.json"],
                namespace="repo:github.com/acme/web",
            ),
        ],
    )
    env = hook_env(tmp_path / "state", store)
    return {"checkout": checkout, "other": other, "env": env, "ids": receipt, "tmp": tmp_path}


async def _call(world: dict[str, Any], tool: str, arguments: dict[str, Any], cwd: Path) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", _ENTRY, "mcp"],
        env=world["env"],
        cwd=str(cwd),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        names = {tool.name: tool for tool in tools.tools}
        assert set(names) == {"search_lessons", "get_lesson"}
        assert all(t.annotations and t.annotations.read_only_hint for t in names.values())
        return await session.call_tool(tool, arguments)


def _payload(result: Any) -> Any:
    assert result.structured_content is not None or result.content
    if result.structured_content is not None:
        return result.structured_content.get("result", result.structured_content)
    return json.loads(result.content[0].text)


async def test_search_lessons_returns_a_short_index_of_this_repository(
    world: dict[str, Any],
) -> None:
    result = await _call(
        world, "search_lessons", {"query": "api/schema.json regenerate_client"}, world["checkout"]
    )
    found = _payload(result)
    assert found["repository"] == "repo:github.com/acme/api"
    rows = found["results"]
    assert [row["title"] for row in rows] == ["Regenerate the client after schema edits"]
    assert set(rows[0]) == {"id", "title", "score", "match"}
    assert rows[0]["match"] == "file:api/schema.json" and rows[0]["score"] > 0


async def test_get_lesson_gives_the_card_and_records_the_delivery(world: dict[str, Any]) -> None:
    search = _payload(
        await _call(world, "search_lessons", {"query": "handlers"}, world["checkout"])
    )
    lesson_id = search["results"][0]["id"]
    shown = _payload(await _call(world, "get_lesson", {"id": lesson_id}, world["checkout"]))
    assert shown["title"] == "Keep handlers small" and shown["associations"]["folders"] == [
        "src/handlers"
    ]
    assert "why" in shown and shown["revision"] == 1
    recall = str(Path(world["env"]["ZEROSHOT_STATE_DIR"]) / "active-memory" / "recall")
    deliveries = read_deliveries(recall, "anonymous")
    assert [(d["lesson"], d["revision"]) for d in deliveries] == [(lesson_id, 1)]


async def test_another_repositorys_lesson_is_out_of_reach(world: dict[str, Any]) -> None:
    web = _payload(await _call(world, "search_lessons", {"query": "dist"}, world["other"]))
    assert [row["title"] for row in web["results"]] == ["Web: never edit dist"]
    # The same ID asked from the api checkout: refused, whatever the caller knows.
    result = await _call(world, "get_lesson", {"id": web["results"][0]["id"]}, world["checkout"])
    assert result.is_error
    assert "no active lesson" in result.content[0].text


async def test_off_here_means_no_results(world: dict[str, Any]) -> None:
    (world["checkout"] / ".active-memory.toml").write_text("enabled = false\n", encoding="utf-8")
    found = _payload(await _call(world, "search_lessons", {"query": "api"}, world["checkout"]))
    assert found["results"] == [] and "off" in found["note"]


def test_the_mcp_command_exists_in_the_cli() -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", _ENTRY, "mcp", "--help"],
        capture_output=True,
        text=True,
        cwd=str(REPO_ROOT),
        check=False,
    )
    assert done.returncode == 0 and "search_lessons" in done.stdout


def test_graph_scope_lists_this_repositorys_and_unbound_graph_lessons() -> None:
    from recall_support import GRAPH_HASH

    from active_memory.lessons import GraphScope, Lesson, RepositoryScope
    from active_memory.mcp_server import in_scope

    def lesson(scope: GraphScope | RepositoryScope) -> Lesson:
        return Lesson(id="L-1", revision=1, scope=scope, title="t", recommendation="r")

    api, web = "repo:github.com/acme/api", "repo:github.com/acme/web"
    unbound = lesson(GraphScope(graph_hash=GRAPH_HASH, node="worker"))
    bound = lesson(GraphScope(graph_hash=GRAPH_HASH, node="worker", repository=web))
    assert in_scope(unbound, api, "graph") and in_scope(unbound, api, "all")
    assert not in_scope(unbound, api, "repository")
    assert not in_scope(bound, api, "graph") and in_scope(bound, web, "graph")
    assert not in_scope(lesson(RepositoryScope(repository=web)), api, "all")
    assert not in_scope(unbound, None, "graph")  # outside a checkout: nothing


def test_search_finds_a_lesson_by_its_command_and_get_shows_it() -> None:
    from active_memory.lessons import Associations, Lesson, RepositoryScope
    from active_memory.mcp_server import lesson_view, search

    database = Lesson(
        id="L-1", revision=1, scope=RepositoryScope(repository="repo:github.com/acme/api"),
        title="Start the database first", recommendation="Run `docker compose up -d db`.",
        associations=Associations(commands=["mix test"]),
    )  # fmt: skip
    [row] = search([database], "why does mix test fail", ())
    assert row["match"] == "command:mix test"
    assert search([database], "mix format", ()) == []  # every word of the family, or nothing
    assert lesson_view(database)["associations"]["commands"] == ["mix test"]
