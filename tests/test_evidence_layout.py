"""Which loops have the supported review layout (SPEC §4 rule 2), on real graphs too."""

from __future__ import annotations

import json
from typing import Any

import pytest
from run_builder import (
    ZEROSHOT,
    choice,
    error_guard,
    fail,
    graph,
    software_change,
    step,
    verdict_guard,
)

from active_memory.evidence.layout import PathStep, classify_loop, error_wrapper_target
from active_memory.runlog.graph import ChoiceNode, Graph, GraphIndex, LoopNode, nodes_in_order


def _loops(data: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
    parsed = Graph.from_json(data)
    index = GraphIndex(parsed)
    found = {}
    for node in nodes_in_order(parsed.root):
        if isinstance(node, LoopNode):
            layout = classify_loop(index, node)
            found[node.name] = (layout.problem, layout.until_problem)
    return found


def test_the_software_change_review_loop_is_supported() -> None:
    index = GraphIndex(Graph.from_json(software_change()))
    loop = index.get("review_loop")
    assert isinstance(loop, LoopNode)
    layout = classify_loop(index, loop)
    assert layout.problem is None and layout.until_problem is None
    assert layout.verifiers == ("acceptance", "code")
    assert layout.entry == (PathStep(step="worker"), PathStep(wrapper="worker"))
    assert layout.repair == (PathStep(step="review_repair"),)
    assert layout.body_prefix == ()


@pytest.mark.parametrize(
    ("fixture", "loop", "problem"),
    [
        ("verifier/loop-and-group.json", "repeat", "the body is a verifier, not a seq"),
        ("verifier/nested-structural-folds.json", "innerLoop", "the body is a verifier, not a seq"),
        ("graph/full-all-nodes.json", "repeat", "the body is a succeed, not a seq"),
    ],
)
def test_real_zeroshot_loops_are_classified_with_a_reason(
    fixture: str, loop: str, problem: str
) -> None:
    data = json.loads((ZEROSHOT / fixture).read_text())
    found = _loops(data.get("graph", data))
    assert found[loop] == (f"unsupported layout: {problem}", None)


def _wrapper(when: dict[str, Any], otherwise: dict[str, Any] | None) -> ChoiceNode:
    node = Graph.from_json(graph(choice("c", [(when, fail("f"))], otherwise))).root
    assert isinstance(node, ChoiceNode)
    return node


def test_an_error_only_choice_is_a_wrapper_on_its_node() -> None:
    assert error_wrapper_target(_wrapper(error_guard("worker"), step("next"))) == "worker"
    assert error_wrapper_target(_wrapper(error_guard("worker"), None)) == "worker"


def test_choices_that_are_not_error_only_wrappers() -> None:
    negated = {"kind": "not", "guard": error_guard("worker")}
    mixed = {"kind": "any", "guards": [error_guard("worker"), error_guard("other")]}
    assert error_wrapper_target(_wrapper(verdict_guard("worker"), step("n"))) is None
    assert error_wrapper_target(_wrapper(negated, step("n"))) is None
    assert error_wrapper_target(_wrapper(mixed, step("n"))) is None
    assert error_wrapper_target(_wrapper(error_guard("worker"), fail("stop"))) is None
