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

import jsonschema  # type: ignore[import-untyped]  # (mcp depends on it; no stubs)
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
        result = await session.call_tool(tool, arguments)
        if not result.is_error:
            # Every answer validates against the tool's declared output schema.
            jsonschema.validate(result.structured_content, names[tool].output_schema)
        return result


def _payload(result: Any) -> Any:
    assert result.structured_content is not None
    # The text a model reads is the same document, as compact JSON.
    [content] = result.content
    assert json.loads(content.text) == result.structured_content
    assert content.text == json.dumps(result.structured_content, ensure_ascii=False,
                                      separators=(",", ":"))  # fmt: skip
    return result.structured_content


async def test_every_tool_describes_each_parameter_and_declares_a_typed_output(
    world: dict[str, Any],
) -> None:
    from importlib.metadata import version

    params = StdioServerParameters(
        command=sys.executable, args=["-c", _ENTRY, "mcp"], env=world["env"],
        cwd=str(world["checkout"]),
    )  # fmt: skip
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        tools = (await session.list_tools()).tools
    assert init.server_info.name == "active-memory"
    assert init.server_info.version == version("active-memory") != ""
    for tool in tools:
        properties = tool.input_schema["properties"]
        assert properties and all(p.get("description") for p in properties.values()), tool.name
        assert tool.description
        output = tool.output_schema
        assert output is not None and output["type"] == "object" and output["properties"]
        jsonschema.Draft202012Validator.check_schema(output)
    scope = next(t for t in tools if t.name == "search_lessons").input_schema["properties"]
    assert scope["scope"]["enum"] == ["repository", "graph", "repository_and_graph", "all"]


@pytest.fixture
def cited(world: dict[str, Any]) -> str:
    """A lesson of the api checkout whose citation was fingerprinted (git work tree)."""
    import subprocess

    from active_memory.checkout import Checkout
    from active_memory.lessons import Citation, Evidence
    from active_memory.orchestrator.publish import fingerprinted

    root = world["checkout"]
    (root / "api").mkdir()
    (root / "api" / "schema.json").write_text('{"a": 1}\n{"b": 2}\n')
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    made = repository_lesson("Schema edits need a regeneration", files=["api/schema.json"])
    evidence = Evidence(citations=[Citation(path="api/schema.json", lines=(1, 2))])
    mutation = made.model_copy(update={"evidence": evidence})
    receipt = publish(world["tmp"] / "lessons.sqlite3", fingerprinted([mutation], Checkout(root)))
    return receipt.created[0][0]


async def test_get_lesson_leaves_out_the_recorded_code_unless_asked(
    world: dict[str, Any], cited: str
) -> None:
    root, lesson_id = world["checkout"], cited
    plain = _payload(await _call(world, "get_lesson", {"id": lesson_id}, root))
    assert plain["why"]["citations"] == [{"path": "api/schema.json", "lines": [1, 2]}]
    assert "sha256" not in json.dumps(plain) and '{\\"a\\": 1}' not in json.dumps(plain)
    asked = _payload(
        await _call(world, "get_lesson", {"id": lesson_id, "include_recorded_code": True}, root)
    )
    recorded = asked["why"]["citations"][0]["recorded"]
    assert len(recorded["sha256"]) == 64 and recorded["text"] == '{"a": 1}\n{"b": 2}\n'


async def test_scope_all_is_kept_as_an_alias_of_repository_and_graph(
    world: dict[str, Any],
) -> None:
    both = _payload(await _call(world, "search_lessons",
                                {"query": "handlers", "scope": "repository_and_graph"},
                                world["checkout"]))  # fmt: skip
    old = _payload(await _call(world, "search_lessons", {"query": "handlers", "scope": "all"},
                               world["checkout"]))  # fmt: skip
    assert both == old and [r["title"] for r in both["results"]] == ["Keep handlers small"]
    refused = await _call(world, "search_lessons", {"query": "x", "scope": "everything"},
                          world["checkout"])  # fmt: skip
    assert refused.is_error


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
    assert rows[0]["match"] == "file:api/schema.json"
    # Recall's table: the file (1000) counts once, the identifier beside it adds nothing.
    assert 1000 <= rows[0]["score"] < 1100


async def test_get_lesson_gives_the_card_and_records_the_delivery(world: dict[str, Any]) -> None:
    search = _payload(
        await _call(world, "search_lessons", {"query": "handlers"}, world["checkout"])
    )
    lesson_id = search["results"][0]["id"]
    shown = _payload(await _call(world, "get_lesson", {"id": lesson_id}, world["checkout"]))
    assert shown["title"] == "Keep handlers small" and shown["associations"]["folders"] == [
        "src/handlers"
    ]
    assert "why" in shown and shown["revision"] == 1 and "stale" not in shown
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
    from active_memory.mcp_search import in_scope

    def lesson(scope: GraphScope | RepositoryScope) -> Lesson:
        return Lesson(id="L-1", revision=1, scope=scope, title="t", recommendation="r")

    api, web = "repo:github.com/acme/api", "repo:github.com/acme/web"
    unbound = lesson(GraphScope(graph_hash=GRAPH_HASH, node="worker"))
    bound = lesson(GraphScope(graph_hash=GRAPH_HASH, node="worker", repository=web))
    assert in_scope(unbound, api, "graph") and in_scope(unbound, api, "all")
    assert in_scope(unbound, api, "repository_and_graph")
    assert not in_scope(unbound, api, "repository")
    assert not in_scope(bound, api, "graph") and in_scope(bound, web, "graph")
    assert not in_scope(lesson(RepositoryScope(repository=web)), api, "all")
    assert not in_scope(unbound, None, "graph")  # outside a checkout: nothing


def test_search_finds_a_lesson_by_its_command_and_get_shows_it() -> None:
    from active_memory.lessons import Associations, Lesson, RepositoryScope
    from active_memory.mcp_models import lesson_card
    from active_memory.mcp_search import search

    database = Lesson(
        id="L-1", revision=1, scope=RepositoryScope(repository="repo:github.com/acme/api"),
        title="Start the database first", recommendation="Run `docker compose up -d db`.",
        associations=Associations(commands=["mix test"]),
    )  # fmt: skip
    [row] = search([database], "why does mix test fail", ())
    assert row["match"] == "command:mix test"
    assert search([database], "mix format", ()) == []  # every word of the family, or nothing
    assert lesson_card(database).associations.commands == ["mix test"]


def test_search_scores_with_recalls_table() -> None:
    from active_memory.lessons import Associations, Lesson, RepositoryScope
    from active_memory.mcp_search import search
    from active_memory.recall.types import MATCH_SCORES

    def lesson(n: int, **associations: Any) -> Lesson:
        return Lesson(id=f"L-{n}", revision=1, title=f"Lesson {n}", recommendation="Do it.",
                      scope=RepositoryScope(repository="repo:github.com/acme/api"),
                      associations=Associations(**associations))  # fmt: skip

    lessons = [
        lesson(1, folders=["src/api"]),
        lesson(2, files=["src/api/client.ts"]),
        lesson(3, identifiers=["regenerate_client"]),
        lesson(4, keywords=[["generated", "client"]]),
        lesson(5, folders=["src/apis"]),
    ]
    found = search(lessons, "src/api/client.ts regenerate_client generated client", ())
    scores = {row["id"]: (row["score"], row["match"]) for row in found}
    assert scores["L-2"] == (MATCH_SCORES["file"], "file:src/api/client.ts")
    assert scores["L-1"] == (MATCH_SCORES["folder"], "folder:src/api")
    assert scores["L-3"] == (MATCH_SCORES["identifier"], "identifier:regenerate_client")
    assert scores["L-4"] == (MATCH_SCORES["keywords"], "keyword:generated client")
    assert "L-5" not in scores  # whole components: src/apis is not src/api
    assert [row["id"] for row in found] == ["L-2", "L-1", "L-3", "L-4"]
    # One term of a keyword group is not the group (recall's rule).
    assert search(lessons[3:4], "generated code", ()) == []
