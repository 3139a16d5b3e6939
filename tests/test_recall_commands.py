"""`active-memory recall` and `active-memory instructions` (SPEC §9, §10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from recall_support import (
    AUTHOR,
    GRAPH_HASH,
    graph_lesson,
    make_checkout,
    publish,
    repository_lesson,
)

from active_memory.cli import main
from active_memory.lessons import CreateLesson, GraphScope
from active_memory.runlog.canonical import graph_hash


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in (
        "ACTIVE_MEMORY_RUN_ID",
        "ACTIVE_MEMORY_REPOSITORY",
        "ACTIVE_MEMORY_BUDGET_BYTES",
        "ACTIVE_MEMORY_SCOPES",
        "ACTIVE_MEMORY_WORKSPACE",
        "ACTIVE_MEMORY_GRAPH_HASH",
        "ACTIVE_MEMORY_NODE",
        "ACTIVE_MEMORY_SESSION_ID",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("ACTIVE_MEMORY_STORE", str(tmp_path / "store.sqlite3"))
    make_checkout(tmp_path / "api")
    (tmp_path / "api" / "src").mkdir()
    return tmp_path


def recall_json(world: Path, tool_json: str, *extra: str, capsys: Any) -> dict[str, Any]:
    code = main(
        ["recall", "--session", "s", "--cwd", str(world / "api"), tool_json, "--json", *extra]
    )
    assert code == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_recall_json_shows_cards_score_match_context_and_budget(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(
        world / "store.sqlite3",
        [
            repository_lesson("Folder card", folders=["src"]),
            repository_lesson("Ident card", identifiers=["CartTotal"]),
        ],
    )
    tool = json.dumps({"tool_name": "Grep", "tool_input": {"pattern": "CartTotal", "path": "src"}})
    document = recall_json(world, tool, capsys=capsys)
    assert document["cards"] == [
        {"id": "L-1", "revision": 1, "score": 800, "match": "folder"},
        {"id": "L-2", "revision": 1, "score": 700, "match": "identifier"},
    ]
    assert document["context"].startswith("<active-memory note=")
    assert document["budget_left"] == 2048 - len(document["context"].encode())
    assert document["repository"] == "repo:github.com/acme/api"


def test_recall_shows_a_shell_calls_command_family_and_the_card_it_matches(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(world / "store.sqlite3", [repository_lesson("Database", commands=["mix test"])])
    command = {"command": "cd src && timeout 60 mix test test/a_test.exs"}
    tool = json.dumps({"tool_name": "Bash", "tool_input": command})
    document = recall_json(world, tool, capsys=capsys)
    assert document["signals"]["commands"] == ["mix test"]
    assert document["cards"] == [{"id": "L-1", "revision": 1, "score": 600, "match": "command"}]
    code = main(["recall", "--session", "s", "--cwd", str(world / "api"), tool])
    assert code == 0
    human = capsys.readouterr().out
    assert "commands: mix test\n" in human and "deliver L-1 r1: command (600)" in human


def test_recall_spends_nothing_and_records_nothing(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(world / "store.sqlite3", [repository_lesson("Folder card", folders=["src"])])
    tool = json.dumps({"tool": "read", "args": {"filePath": "src/a.ts"}})
    first = recall_json(world, tool, capsys=capsys)
    second = recall_json(world, tool, capsys=capsys)
    assert first["cards"] == second["cards"] != []
    assert not (world / "state").exists()


def test_recall_says_why_a_card_is_skipped(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(world / "store.sqlite3", [repository_lesson("Folder card", "z" * 400, folders=["src"])])
    tool = json.dumps({"tool_name": "Read", "tool_input": {"file_path": "src/a.py"}})
    document = recall_json(world, tool, "--budget-bytes", "100", capsys=capsys)
    assert document["cards"] == [] and document["skipped"][0]["reason"] == "over_budget"
    assert document["budget_left"] == 100


def test_recall_repository_option_overrides_the_remote(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(
        world / "store.sqlite3",
        [repository_lesson("Other", folders=["src"], namespace="repo:example.org/other")],
    )
    tool = json.dumps({"tool_name": "Read", "tool_input": {"file_path": "src/a.py"}})
    assert recall_json(world, tool, capsys=capsys)["cards"] == []
    other = recall_json(world, tool, "--repository", "repo:example.org/other", capsys=capsys)
    assert [card["id"] for card in other["cards"]] == ["L-1"]


@pytest.mark.parametrize("tool_json", ["{not json", "[]", '{"tool_input": {}}', "@/nonexistent"])
def test_recall_refuses_bad_tool_json_with_exit_2(
    world: Path, tool_json: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["recall", "--session", "s", "--cwd", str(world / "api"), tool_json]) == 2
    err = capsys.readouterr().err
    assert "TOOL_JSON" in err or "nonexistent" in err


def test_recall_human_output_names_the_cards(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(world / "store.sqlite3", [repository_lesson("Folder card", folders=["src"])])
    tool = json.dumps({"tool_name": "Read", "tool_input": {"file_path": "src/a.py"}})
    assert main(["recall", "--session", "s", "--cwd", str(world / "api"), tool]) == 0
    out = capsys.readouterr().out
    assert "deliver L-1 r1: folder (800)" in out and "## Folder card  (L-1 r1)" in out


# --- instructions ---------------------------------------------------------------------


def graph_file(world: Path, instructions: str | None = "Implement the change.") -> tuple[Path, str]:
    node: dict[str, Any] = {"kind": "step", "name": "worker", "worker": "builtin.agent.worker@1"}
    if instructions is not None:
        node["instructions"] = instructions
    graph = {
        "profile": "openengine.graph.full/v1",
        "root": {"kind": "seq", "name": "main", "children": [node]},
    }
    path = world / "graph.json"
    path.write_text(json.dumps(graph), encoding="utf-8")
    return path, graph_hash(graph)


def test_instructions_append_the_nodes_graph_lessons_framed(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, digest = graph_file(world)
    scope_hash = GRAPH_HASH
    publish(
        world / "store.sqlite3",
        [
            graph_lesson("Run checks first", node="worker"),
            graph_lesson("For the reviewer", node="reviewer"),
        ],
    )
    assert main(["instructions", "--graph", scope_hash, "--node", "worker"]) == 0
    out = capsys.readouterr().out
    assert "## Run checks first  (L-1 r1)" in out and "reviewer" not in out
    assert out.startswith("<active-memory note=")
    # With the authored graph: its instructions first, the file unchanged.
    before = path.read_bytes()
    assert (
        main(
            [
                "instructions",
                "--graph",
                digest,
                "--node",
                "worker",
                "--graph-file",
                str(path),
                "--json",
            ]
        )
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert document["instructions"] == "Implement the change."
    assert path.read_bytes() == before


def test_instructions_text_is_authored_then_lessons(
    world: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, digest = graph_file(world)

    mutation = graph_lesson("Run checks first")
    scoped = CreateLesson(
        scope=GraphScope(graph_hash=digest, node="worker"), card=mutation.card, author=AUTHOR
    )
    publish(world / "store.sqlite3", [scoped])
    assert (
        main(["instructions", "--graph", digest, "--node", "worker", "--graph-file", str(path)])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("Implement the change.\n\n<active-memory note=")
    assert "(L-1 r1)" in out


def test_instructions_budget_keeps_whole_cards_only(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(world / "store.sqlite3", [graph_lesson("Long", "l" * 500), graph_lesson("Short", "s")])
    assert (
        main(
            [
                "instructions",
                "--graph",
                GRAPH_HASH,
                "--node",
                "worker",
                "--budget-bytes",
                "200",
                "--json",
            ]
        )
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert [lesson["id"] for lesson in document["lessons"]] == ["L-2"]
    assert document["skipped"] == [{"id": "L-1", "revision": 1, "reason": "over_budget"}]


def test_instructions_refuse_a_graph_file_with_another_hash(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = graph_file(world)
    code = main(
        ["instructions", "--graph", GRAPH_HASH, "--node", "worker", "--graph-file", str(path)]
    )
    assert code == 2
    assert "hashes to" in capsys.readouterr().err


def test_instructions_refuse_an_unknown_node(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, digest = graph_file(world)
    code = main(["instructions", "--graph", digest, "--node", "nobody", "--graph-file", str(path)])
    assert code == 2
    assert "nobody" in capsys.readouterr().err


def test_instructions_within_a_run_use_the_runs_frozen_snapshot(
    world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACTIVE_MEMORY_RUN_ID", "run-5")
    publish(world / "store.sqlite3", [graph_lesson("Before the freeze")])
    assert main(["instructions", "--graph", GRAPH_HASH, "--node", "worker"]) == 0
    capsys.readouterr()
    publish(world / "store.sqlite3", [graph_lesson("After the freeze")])
    assert main(["instructions", "--graph", GRAPH_HASH, "--node", "worker"]) == 0
    out = capsys.readouterr().out
    assert "Before the freeze" in out and "After the freeze" not in out
