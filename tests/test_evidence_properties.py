"""Property tests: on any valid run record the scanner never raises, is deterministic,
and does not depend on the order of events, receipts or parallel completions in the file."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_builder import (
    RunBuilder,
    error,
    graph,
    loop,
    map_node,
    ok,
    review_loop,
    seq,
    software_change,
    step,
    verdict,
)

from active_memory.evidence import scan
from active_memory.runlog.record import parse_run_record

GRAPHS: list[dict[str, Any] | None] = [
    software_change(),
    graph(map_node("each", seq("item", step("worker"), review_loop()))),
    graph(seq("run", step("worker"), loop("outer", seq("o", step("plan"), review_loop())))),
    graph(seq("run", step("worker"), review_loop(until=None))),
    None,
]
NODES = ["worker", "review_repair", "acceptance", "code", "plan", "deliver", "ghost"]
OUTCOMES = [ok(), verdict("accepted"), verdict("rejected")] + [
    error(code) for code in ("timeout", "crash", "malformed", "refusal")
]
MAP_ITEMS: list[tuple[int, ...]] = [(), (0,), (1,)]


@dataclass(frozen=True)
class Op:
    kind: str  # visit | round | repair | start | void
    node: str
    outcome: int
    map_item: tuple[int, ...]
    attempt: int
    labels: tuple[str, str]
    code_first: bool


ops = st.builds(
    Op,
    kind=st.sampled_from(["visit", "visit", "round", "round", "repair", "repair", "start", "void"]),
    node=st.sampled_from(NODES),
    outcome=st.integers(0, len(OUTCOMES) - 1),
    map_item=st.sampled_from([(), (), (), (0,), (1,)]),
    attempt=st.integers(1, 2),
    labels=st.tuples(*[st.sampled_from(["accepted", "rejected"])] * 2),
    code_first=st.booleans(),
)
receipts = st.lists(
    st.tuples(
        st.sampled_from(["Read", "Grep", "Edit"]),
        st.lists(st.sampled_from(["src/a.py", "src/b.py", "docs", "/etc/x"]), max_size=3),
        st.integers(0, 20),
        st.sampled_from(["worker", "review_repair"]),
    ),
    max_size=8,
)


def build(
    graph_index: int, steps: list[Op], notes: list[Any], seeded: bool, *, flip: bool = False
) -> dict[str, Any]:
    run = RunBuilder(GRAPHS[graph_index])
    for item in MAP_ITEMS:
        run.visit("worker", ok(), map_item=item, execution=f"w{item}")
    for number, op in enumerate(steps):
        if op.kind == "round":
            ids = {"acceptance": f"a{number}", "code": f"c{number}"}
            labels = {"acceptance": op.labels[0], "code": op.labels[1]}
            order = ["code", "acceptance"] if op.code_first != flip else ["acceptance", "code"]
            for node in order:
                run.start(node, map_item=op.map_item, execution=ids[node])
            for node in reversed(order):
                run.complete(ids[node], node, verdict(labels[node]))
        elif op.kind == "repair":
            run.visit("review_repair", ok(), map_item=op.map_item, execution=f"r{number}")
        elif op.kind == "visit":
            execution = run.start(
                op.node, map_item=op.map_item, attempt=op.attempt, execution=f"v{number}"
            )
            run.complete(execution, op.node, OUTCOMES[op.outcome])
        elif op.kind == "start":
            run.start(op.node, map_item=op.map_item, execution=f"s{number}")
        else:
            execution = run.start(op.node, map_item=op.map_item, execution=f"x{number}")
            run.void(execution, op.node)
    for tool, paths, minute, node in notes:
        run.receipt(tool, paths, minute, node=node)
    return run.build(seeded=seeded)


PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
runs = st.tuples(
    st.integers(0, len(GRAPHS) - 1),
    st.lists(ops, max_size=14),
    receipts,
    st.sampled_from([False, False, False, True]),
)


@PROPERTY_SETTINGS
@given(runs)
def test_the_scanner_never_raises_and_is_deterministic(run: tuple[Any, ...]) -> None:
    data = build(*run)
    first = scan(parse_run_record(data)).to_json()
    assert first == scan(parse_run_record(data)).to_json()
    ids = [item["id"] for item in first["evidence"]]
    assert len(ids) == len(set(ids))
    for item in first["evidence"]:
        assert item["count"] >= 2 or item["kind"] == "exploration"
        if item["kind"] == "exploration":
            assert item["specialists"] == ["repository_discovery"]


@PROPERTY_SETTINGS
@given(runs, st.randoms(use_true_random=False))
def test_the_order_of_events_and_receipts_in_the_file_does_not_matter(
    run: tuple[Any, ...], shuffler: random.Random
) -> None:
    data = build(*run)
    expected = scan(parse_run_record(data)).to_json()
    shuffler.shuffle(data["events"])
    shuffler.shuffle(data["receipts"])
    assert scan(parse_run_record(data)).to_json() == expected


@PROPERTY_SETTINGS
@given(runs)
def test_the_order_parallel_reviewers_settle_in_does_not_matter(run: tuple[Any, ...]) -> None:
    one = scan(parse_run_record(build(*run))).to_json()
    other = scan(parse_run_record(build(*run, flip=True))).to_json()
    assert one == other
