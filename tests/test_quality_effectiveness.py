"""Deriving effectiveness observations from run records, and the counters that follow."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import GRAPH_HASH, NAMESPACE, card, create
from run_builder import RunBuilder

from active_memory.evidence.model import EvidenceItem, ReceiptRef
from active_memory.lessons import Associations, Evidence, GraphScope, Lesson, RepositoryScope
from active_memory.quality.effectiveness import observe, written_against
from active_memory.runlog.record import RunRecord
from active_memory.store.effectiveness import Effectiveness, RunObservation


def graph_lesson(lesson_id: str = "L-1", node: str = "worker", cites: str = "ev-tc-1") -> Lesson:
    return Lesson(id=lesson_id, revision=1, scope=GraphScope(graph_hash=GRAPH_HASH, node=node),
                  evidence=Evidence(evidence_ids=[cites]),
                  **card("Split the worker's task").model_dump())  # fmt: skip


def repo_lesson(lesson_id: str = "L-2", folder: str = "api") -> Lesson:
    return Lesson(id=lesson_id, revision=1, scope=RepositoryScope(repository=NAMESPACE),
                  **card("Read api/README first",
                         associations=Associations(folders=[folder])).model_dump())  # fmt: skip


def run(run_id: str, *, nodes: tuple[str, ...] = (), paths: tuple[str, ...] = (),
        delivered: tuple[str, ...] = ()) -> RunRecord:  # fmt: skip
    builder = RunBuilder(run_id=run_id)
    for node in nodes:
        builder.start(node)
    if paths:
        builder.receipt("Read", list(paths), minute=1)
    builder.extra["graph"] = {"name": "test", "hash": GRAPH_HASH, "ir": None}
    builder.extra["deliveries"] = [
        {"session": "s-1", "lesson": lesson, "revision": 1} for lesson in delivered
    ]
    return builder.record()


def timeout_on(node: str) -> EvidenceItem:
    return EvidenceItem(id="ev-tc-x", kind="timeout_crash", nodes=(node,), count=1,
                        specialists=("graph_discovery",))  # fmt: skip


def exploration_of(*paths: str) -> EvidenceItem:
    return EvidenceItem(id="ev-ex-x", kind="exploration", nodes=("worker",), count=3,
                        specialists=("repository_discovery",),
                        receipts=(ReceiptRef(index=0, node="worker", tool="Read",
                                             at="2026-11-29T10:01:00+00:00",
                                             paths=paths),))  # fmt: skip


def test_a_delivered_lesson_whose_timeout_recurs_is_observed_as_delivered_and_recurred() -> None:
    record = run("run-1", nodes=("worker",), delivered=("L-1",))
    assert observe(record, [timeout_on("worker")], [graph_lesson()]) == [
        RunObservation(lesson_id="L-1", run_id="run-1", delivered=True, recurred=True)
    ]


def test_a_delivered_lesson_whose_timeout_did_not_come_back_is_observed_as_prevented() -> None:
    record = run("run-1", nodes=("worker",), delivered=("L-1",))
    assert observe(record, [timeout_on("reviewer")], [graph_lesson()]) == [
        RunObservation(lesson_id="L-1", run_id="run-1", delivered=True, recurred=False)
    ]


def test_a_run_that_ran_the_node_without_delivering_the_lesson_counts_as_touched() -> None:
    record = run("run-1", nodes=("worker",))
    assert observe(record, [timeout_on("worker")], [graph_lesson()]) == [
        RunObservation(lesson_id="L-1", run_id="run-1", delivered=False, recurred=True)
    ]


def test_a_run_that_never_reached_the_lesson_observes_nothing() -> None:
    record = run("run-1", nodes=("reviewer",), paths=("docs/index.md",))
    assert observe(record, [timeout_on("reviewer")], [graph_lesson(), repo_lesson()]) == []


def test_a_record_without_delivery_evidence_observes_nothing() -> None:
    builder = RunBuilder(run_id="run-1")
    builder.start("worker")
    builder.extra["graph"] = {"name": "test", "hash": GRAPH_HASH, "ir": None}
    builder.extra["deliveries"] = None
    assert observe(builder.record(), [timeout_on("worker")], [graph_lesson()]) == []


def test_exploration_recurs_for_a_repository_lesson_only_on_its_files() -> None:
    record = run("run-1", paths=("api/schema.json",))
    lesson = repo_lesson()
    assert observe(record, [exploration_of("web/app.ts")], [lesson])[0].recurred is False
    assert observe(record, [exploration_of("api/client.py")], [lesson])[0].recurred is True


def test_a_lesson_written_against_rejected_rounds_ignores_a_timeout_on_its_node() -> None:
    lesson = graph_lesson(cites="ev-rr-1")
    assert written_against(lesson) == {"rejected_rounds"}
    record = run("run-1", nodes=("worker",), delivered=("L-1",))
    assert observe(record, [timeout_on("worker")], [lesson])[0].recurred is False


def make_test_timeouts(family: str = "make test") -> EvidenceItem:
    """A repeated tool failure with no receipts (a timeout carries none)."""
    return EvidenceItem(id="ev-tf-x", kind="tool_failures", nodes=("worker",), count=2,
                        specialists=("repository_discovery",), family=family)  # fmt: skip


def test_a_command_lesson_sees_its_family_fail_again_without_any_receipt() -> None:
    # Issue 25: with the card delivered and `make test` timing out again, `recurred` was 0
    # because timeout evidence carries no receipts and the lesson was written against
    # "exploration" only.
    lesson = repo_lesson().model_copy(
        update={"associations": Associations(folders=["api"], commands=["make test"])}
    )
    assert written_against(lesson) == {"tool_failures"}
    record = run("run-1", paths=("api/Makefile",), delivered=("L-2",))
    assert observe(record, [make_test_timeouts()], [lesson])[0].recurred is True
    assert observe(record, [make_test_timeouts("git push")], [lesson])[0].recurred is False


def test_a_repository_lesson_citing_a_repeated_failure_is_written_against_it() -> None:
    lesson = repo_lesson().model_copy(
        update={"evidence": Evidence(evidence_ids=["ev-tf-0123456789ab"])}
    )
    assert written_against(lesson) == {"tool_failures"}
    assert written_against(repo_lesson()) == {"exploration"}


@pytest.mark.asyncio
async def test_run_history_gives_counters_that_separate_a_helpful_lesson_from_a_useless_one(
    store: Any,
) -> None:
    await store.publish([create("Split the worker's task",
                                GraphScope(graph_hash=GRAPH_HASH, node="worker")),
                         create("Split the planner's task",
                                GraphScope(graph_hash=GRAPH_HASH, node="planner"))])  # fmt: skip
    helpful, useless = graph_lesson("L-1", "worker"), graph_lesson("L-2", "planner")
    # L-1: delivered twice, its timeout never came back; not delivered once, it came back.
    # L-2: delivered twice, its timeout came back both times.
    history = [
        (run("run-1", nodes=("worker", "planner"), delivered=("L-1", "L-2")),
         [timeout_on("planner")]),
        (run("run-2", nodes=("worker",)), [timeout_on("worker")]),
        (run("run-3", nodes=("worker", "planner"), delivered=("L-1", "L-2")),
         [timeout_on("planner")]),
    ]  # fmt: skip
    for record, evidence in history:
        await store.publish([], observe(record, evidence, [helpful, useless]))
    assert await store.effectiveness(["L-1", "L-2"]) == {
        "L-1": Effectiveness(runs_delivered=2, recurred_when_delivered=0,
                             runs_touched_not_delivered=1, recurred_when_not_delivered=1,
                             last_run_id="run-3"),
        "L-2": Effectiveness(runs_delivered=2, recurred_when_delivered=2,
                             runs_touched_not_delivered=0, recurred_when_not_delivered=0,
                             last_run_id="run-3"),
    }  # fmt: skip
