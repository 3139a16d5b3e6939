"""Rule 1 of SPEC §4: two or more timeouts/crashes of one node."""

from __future__ import annotations

from run_builder import RunBuilder, error, ok

from active_memory.evidence import scan


def test_two_timeouts_of_one_node_are_evidence() -> None:
    run = RunBuilder()
    first = run.visit("worker", error("timeout"))
    second = run.visit("worker", error("timeout"), attempt=2)
    run.visit("worker", ok(), attempt=3)
    result = scan(run.record())
    [item] = result.evidence
    assert item.kind == "timeout_crash" and item.nodes == ("worker",) and item.count == 2
    assert [e.execution for e in item.executions] == [first, second]
    assert [e.outcome for e in item.executions] == ["timeout", "timeout"]
    assert set(item.specialists) == {"graph_discovery", "repository_discovery"}
    assert item.to_json()["id"].startswith("ev-tc-") and "loop" not in item.to_json()


def test_a_timeout_and_a_crash_count_together() -> None:
    run = RunBuilder()
    run.visit("worker", error("crash"))
    run.visit("worker", error("timeout"))
    [item] = scan(run.record()).evidence
    assert item.count == 2 and [e.outcome for e in item.executions] == ["crash", "timeout"]


def test_one_timeout_is_not_evidence() -> None:
    run = RunBuilder()
    run.visit("worker", error("timeout"))
    run.visit("worker", ok())
    assert scan(run.record()).evidence == ()


def test_malformed_is_not_a_crash() -> None:
    run = RunBuilder()
    run.visit("worker", error("malformed", "malformed_result"))
    run.visit("worker", error("malformed", "malformed_result"))
    run.visit("worker", error("crash"))
    assert scan(run.record()).evidence == ()


def test_refusals_do_not_count() -> None:
    run = RunBuilder()
    run.visit("worker", error("refusal"))
    run.visit("worker", error("timeout"))
    assert scan(run.record()).evidence == ()


def test_timeouts_of_different_nodes_are_not_evidence() -> None:
    run = RunBuilder()
    run.visit("worker", error("timeout"))
    run.visit("review_repair", error("timeout"))
    assert scan(run.record()).evidence == ()


def test_voided_and_unsettled_executions_are_not_completions() -> None:
    run = RunBuilder()
    run.visit("worker", error("timeout"))
    voided = run.start("worker")
    run.void(voided, "worker")
    run.start("worker")
    assert scan(run.record()).evidence == ()


def test_the_evidence_id_is_stable_and_names_the_run() -> None:
    def build(run_id: str, reverse: bool) -> str:
        run = RunBuilder(run_id=run_id)
        run.visit("worker", error("timeout"))
        run.visit("worker", error("crash"))
        data = run.build()
        if reverse:
            data["events"].reverse()
        from active_memory.runlog.record import parse_run_record

        [item] = scan(parse_run_record(data)).evidence
        return item.id

    assert build("run-1", False) == build("run-1", True)
    assert build("run-1", False) != build("run-2", False)
