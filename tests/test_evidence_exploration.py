"""Rule 3 of SPEC §4: exploration (repository discovery only)."""

from __future__ import annotations

from run_builder import RunBuilder

from active_memory.evidence import scan


def test_three_distinct_receipts_over_five_minutes_are_exploration() -> None:
    run = RunBuilder()
    run.receipt("Read", ["src/a.py"], 0)
    run.receipt("Grep", ["src"], 2)
    run.receipt("Read", ["src/b.py"], 5, node="review_repair")
    [item] = scan(run.record()).evidence
    assert item.kind == "exploration" and item.count == 3
    assert item.specialists == ("repository_discovery",)
    assert item.nodes == ("review_repair", "worker")
    assert item.span_seconds == 300
    assert [r.paths for r in item.receipts] == [("src/a.py",), ("src",), ("src/b.py",)]


def test_receipts_within_less_than_five_minutes_are_not_exploration() -> None:
    run = RunBuilder()
    for minute, path in enumerate(["a", "b", "c", "d"]):
        run.receipt("Read", [path], minute * 1.3)
    assert scan(run.record()).evidence == ()


def test_repeating_one_receipt_is_not_three_distinct_receipts() -> None:
    run = RunBuilder()
    run.receipt("Read", ["src/a.py"], 0)
    run.receipt("Read", ["src/a.py"], 3)
    run.receipt("Read", ["src/b.py"], 9)
    assert scan(run.record()).evidence == ()


def test_receipts_without_a_time_are_not_counted() -> None:
    run = RunBuilder()
    run.receipt("Read", ["src/a.py"], 0)
    run.receipt("Read", ["src/b.py"], 6)
    run.receipts.append({"node": "worker", "tool": "Read", "paths": ["src/c.py"]})
    assert scan(run.record()).evidence == ()


def test_exploration_is_never_offered_to_graph_discovery() -> None:
    run = RunBuilder()
    for minute in range(0, 12, 3):
        run.receipt("Read", [f"src/{minute}.py"], minute)
    assert all("graph_discovery" not in item.specialists for item in scan(run.record()).evidence)
