"""Zeroshot graph models: every real graph parses, round-trips, and walks in order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from run_builder import ZEROSHOT, software_change

from active_memory.runlog.graph import (
    AllGuard,
    ChoiceNode,
    Graph,
    GraphIndex,
    JoinAll,
    KOfMapGuard,
    KOfNGuard,
    LoopNode,
    MapNode,
    NotGuard,
    ParNode,
    SeqNode,
    StepNode,
    VerifierNode,
    guard_selectors,
    nodes_in_order,
)


def _real_graphs() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted((ZEROSHOT / "graph").glob("*.json")):
        found.append((path.name, json.loads(path.read_text())))
    found.append(
        ("canonical/base.json", json.loads((ZEROSHOT / "canonical/base.json").read_text()))
    )
    for path in sorted((ZEROSHOT / "verifier").glob("*.json")):
        pair = json.loads(path.read_text())
        found.append((f"{path.name}#graph", pair["graph"]))
        found.append((f"{path.name}#compiledIr", pair["expected"]["compiledIr"]))
    return found


REAL_GRAPHS = _real_graphs()


def test_the_zeroshot_fixtures_are_present() -> None:
    assert len(REAL_GRAPHS) >= 16


@pytest.mark.parametrize(("name", "data"), REAL_GRAPHS, ids=[n for n, _ in REAL_GRAPHS])
def test_every_real_zeroshot_graph_parses_and_round_trips(name: str, data: dict[str, Any]) -> None:
    graph = Graph.from_json(data)
    assert graph.to_json() == data
    assert GraphIndex(graph).duplicates == ()


def test_full_all_nodes_graph_has_every_node_kind_and_guard() -> None:
    data = json.loads((ZEROSHOT / "graph/full-all-nodes.json").read_text())
    graph = Graph.from_json(data)
    kinds = {node.kind for node in nodes_in_order(graph.root)}
    assert kinds == {"seq", "step", "verifier", "choice", "par", "loop", "map", "succeed", "fail"}
    choose = GraphIndex(graph).get("choose")
    assert isinstance(choose, ChoiceNode)
    guard_kinds = [branch.when.kind for branch in choose.branches]
    assert guard_kinds == ["in", "all", "any", "not", "k_of_n", "k_of_map"]
    assert isinstance(choose.branches[3].when, NotGuard)
    assert isinstance(choose.branches[4].when, KOfNGuard)
    assert [s.source for s in guard_selectors(choose.branches[4].when)] == ["signal", "error"]
    assert isinstance(choose.branches[5].when, KOfMapGuard)
    joins = {n.name: n.join.kind for n in nodes_in_order(graph.root) if isinstance(n, ParNode)}
    assert joins == {
        "joinAll": "all",
        "joinAny": "any",
        "joinQuorum": "quorum",
        "joinFirst": "first",
    }
    verify = GraphIndex(graph).get("verify")
    assert isinstance(verify, VerifierNode)
    assert verify.signals == {"verdict": ["accepted", "rejected"]}


def test_unknown_fields_are_kept_on_nodes_and_guards() -> None:
    data = {
        "profile": "openengine.graph.full/v1",
        "futureTopLevel": {"x": 1},
        "root": {
            "kind": "loop",
            "name": "l",
            "maxIterations": 2,
            "newLoopField": True,
            "body": {"kind": "step", "name": "s", "someday": [1, 2]},
            "until": {
                "kind": "in",
                "labels": ["accepted"],
                "value": {"name": "s", "source": "signal", "field": "verdict", "extra": 1},
                "note": "kept",
            },
        },
    }
    graph = Graph.from_json(data)
    assert graph.to_json() == data
    assert isinstance(graph.root, LoopNode)
    assert graph.root.max_iterations == 2


def test_an_unknown_node_kind_is_rejected() -> None:
    with pytest.raises(ValidationError):
        Graph.from_json({"profile": "p", "root": {"kind": "teleport", "name": "x"}})


def test_nodes_in_order_is_preorder_in_authored_order() -> None:
    graph = Graph.from_json(software_change())
    names = [node.name for node in nodes_in_order(graph.root)]
    assert names[:3] == ["run", "worker", "worker_result"]
    assert names.index("parallel_reviews") < names.index("acceptance") < names.index("code")
    assert names.index("review_result") < names.index("review_repair")
    assert names[-1] == "reviews_exhausted"


def test_graph_index_finds_nodes_parents_and_ancestors() -> None:
    index = GraphIndex(Graph.from_json(software_change()))
    repair = index.get("review_repair")
    assert isinstance(repair, StepNode)
    parent = index.parent("review_repair")
    assert parent is not None and parent.name == "review_result"
    assert [a.name for a in index.ancestors("code")] == [
        "parallel_reviews",
        "review_iteration",
        "review_loop",
        "reviews",
        "worker_result",
        "run",
    ]
    assert index.parent("run") is None
    assert index.get("missing") is None and "worker" in index
    assert [n.name for n in index.executables()][:3] == ["worker", "acceptance", "code"]
    loop = index.get("review_loop")
    assert isinstance(loop, LoopNode) and isinstance(loop.until, AllGuard)
    par = index.get("parallel_reviews")
    assert isinstance(par, ParNode) and isinstance(par.join, JoinAll)


def test_graph_index_reports_duplicate_node_names() -> None:
    data = {
        "profile": "p",
        "root": {
            "kind": "seq",
            "name": "r",
            "children": [{"kind": "step", "name": "a"}, {"kind": "step", "name": "a"}],
        },
    }
    assert GraphIndex(Graph.from_json(data)).duplicates == ("a",)
    assert GraphIndex(SeqNode.model_validate(data["root"])).duplicates == ("a",)


def test_map_nodes_parse_with_their_selector() -> None:
    data = json.loads(Path(ZEROSHOT / "verifier/map-item-k-of-map.json").read_text())["graph"]
    maps = [n for n in nodes_in_order(Graph.from_json(data).root) if isinstance(n, MapNode)]
    assert maps and maps[0].max_items is not None and maps[0].over is not None
