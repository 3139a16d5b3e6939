"""Canonical graph JSON and the graph hash, against zeroshot's own test vector."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest
from run_builder import ZEROSHOT, all_of, any_of, error_guard, graph, par, seq, step, verdict_guard

from active_memory.runlog.canonical import (
    CanonicalError,
    canonical_bytes,
    canonical_graph_bytes,
    graph_hash,
)
from active_memory.runlog.graph import Graph

BASE_PATH = ZEROSHOT / "canonical/base.json"
BASE = json.loads(BASE_PATH.read_text()) if BASE_PATH.exists() else {}


def test_base_vector_canonical_bytes_match_byte_for_byte() -> None:
    expected = (ZEROSHOT / "canonical/base.canonical.json").read_bytes()
    assert canonical_graph_bytes(BASE) == expected


def test_base_vector_hash_matches_the_recorded_sha256() -> None:
    expected = (ZEROSHOT / "canonical/base.sha256").read_text().strip()
    assert graph_hash(BASE) == expected
    assert graph_hash(Graph.from_json(BASE)) == expected


def test_a_plain_sorted_dump_does_not_reproduce_the_vector() -> None:
    plain = json.dumps(BASE, sort_keys=True, separators=(",", ":")).encode()
    assert hashlib.sha256(plain).hexdigest() != graph_hash(BASE)


def test_par_branches_are_sorted_by_name_and_seq_order_is_kept() -> None:
    g = graph(seq("r", step("b"), step("a"), par("p", step("z"), step("y"))))
    text = canonical_graph_bytes(g).decode()
    assert text.index('"name":"b"') < text.index('"name":"a"')
    assert text.index('"name":"y"') < text.index('"name":"z"')
    swapped = graph(seq("r", step("b"), step("a"), par("p", step("y"), step("z"))))
    assert graph_hash(swapped) == graph_hash(g)
    reordered = graph(seq("r", step("a"), step("b"), par("p", step("z"), step("y"))))
    assert graph_hash(reordered) != graph_hash(g)


def _loop_with_until(until: dict[str, Any]) -> dict[str, Any]:
    return graph(
        {"kind": "loop", "name": "l", "maxIterations": 2, "body": step("s"), "until": until}
    )


def test_all_and_any_guards_are_flattened_sorted_and_deduplicated() -> None:
    a, b, c = verdict_guard("a"), verdict_guard("b"), verdict_guard("c")
    nested = _loop_with_until(all_of(c, all_of(a, b), a))
    flat = _loop_with_until(all_of(a, b, c))
    assert canonical_graph_bytes(nested) == canonical_graph_bytes(flat)
    # `any` inside `all` is a different operator: it stays nested.
    mixed = _loop_with_until(all_of(any_of(a, b), c))
    assert b'"kind":"any"' in canonical_graph_bytes(mixed)
    assert graph_hash(mixed) != graph_hash(flat)


def test_k_of_n_selectors_are_sorted_but_keep_multiplicity() -> None:
    sel_a = {"name": "a", "source": "signal", "field": "verdict"}
    sel_b = {"name": "b", "source": "error", "field": None}

    def guard(values: list[dict[str, Any]]) -> dict[str, Any]:
        return {"kind": "k_of_n", "count": 1, "values": values, "labels": ["accepted"]}

    assert canonical_graph_bytes(_loop_with_until(guard([sel_b, sel_a]))) == canonical_graph_bytes(
        _loop_with_until(guard([sel_a, sel_b]))
    )
    assert graph_hash(_loop_with_until(guard([sel_a, sel_a]))) != graph_hash(
        _loop_with_until(guard([sel_a]))
    )


def test_choice_branch_order_is_kept() -> None:
    def choose(first: str, second: str) -> dict[str, Any]:
        return graph(
            {
                "kind": "choice",
                "name": "c",
                "branches": [
                    {"when": error_guard(first), "node": step(f"{first}-x")},
                    {"when": error_guard(second), "node": step(f"{second}-x")},
                ],
            }
        )

    assert graph_hash(choose("a", "b")) != graph_hash(choose("b", "a"))


def test_bindings_and_promoted_paths_are_sorted() -> None:
    node = step("s")
    node["inputBindings"] = [{"target": ["b"]}, {"target": ["a"]}]
    node2 = copy.deepcopy(node)
    node2["inputBindings"].reverse()
    assert graph_hash(graph(node)) == graph_hash(graph(node2))
    group = seq("r", step("x"))
    group["promotedStatePaths"] = [["b"], ["a"], ["b"]]
    assert b'"promotedStatePaths":[["a"],["b"]]' in canonical_graph_bytes(graph(group))


def test_keys_sort_by_utf8_bytes_and_strings_escape_like_serde_json() -> None:
    value = {"b": 1, "a": 2, "Z": 3, "é": 4, "text": 'q"\\\n\t\x01é/€'}
    assert canonical_bytes(value) == (
        '{"Z":3,"a":2,"b":1,"text":"q\\"\\\\\\n\\t\\u0001é/€","é":4}'.encode()
    )


def test_numbers_are_integers_only() -> None:
    assert (
        canonical_bytes([0, -5, 2**64 - 1, True, None]) == b"[0,-5,18446744073709551615,true,null]"
    )
    with pytest.raises(CanonicalError, match="floating-point"):
        canonical_bytes({"ratio": 0.5})
    with pytest.raises(CanonicalError, match="64-bit"):
        canonical_bytes(2**64)


def test_a_lone_surrogate_is_refused() -> None:
    with pytest.raises(CanonicalError, match="surrogate"):
        canonical_bytes("\ud800")


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in (ZEROSHOT / "verifier").glob("*.json")),
)
def test_canonicalization_is_idempotent_on_real_compiled_ir(name: str) -> None:
    ir = json.loads((ZEROSHOT / "verifier" / name).read_text())["expected"]["compiledIr"]
    once = canonical_graph_bytes(ir)
    assert canonical_graph_bytes(json.loads(once)) == once
