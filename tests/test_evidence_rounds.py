"""Rule 2 of SPEC §4: distinct rejected review rounds, their attribution, and every skip."""

from __future__ import annotations

import json
from typing import Any

from run_builder import (
    FIXTURES,
    RunBuilder,
    all_of,
    any_of,
    choice,
    error,
    error_guard,
    fail,
    graph,
    loop,
    map_node,
    ok,
    par,
    review_loop,
    seq,
    software_change,
    step,
    succeed,
    verdict,
    verdict_guard,
    verifier,
)

from active_memory.evidence import ScanResult, scan
from active_memory.runlog.record import parse_run_record


def _software_change_run() -> RunBuilder:
    run = RunBuilder(software_change())
    run.visit("worker", ok())
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.review_round("accepted", "rejected")
    run.visit("review_repair", ok())
    run.review_round("accepted", "accepted")
    return run


def _reasons(result: ScanResult) -> list[str]:
    return [skip.reason for skip in result.skipped]


def test_software_change_rounds_are_attributed_to_worker_then_review_repair() -> None:
    result = scan(_software_change_run().record())
    [item] = result.evidence
    assert item.kind == "rejected_rounds" and item.loop == "review_loop"
    assert item.count == 2 and item.map_item == ()
    assert [r.round for r in item.rounds] == [1, 2]
    assert [r.workers for r in item.rounds] == [("worker",), ("review_repair",)]
    assert item.nodes == ("worker", "review_repair")
    verdicts = [{v.node: v.outcome for v in r.verifiers} for r in item.rounds]
    assert verdicts == [
        {"acceptance": "rejected", "code": "accepted"},
        {"acceptance": "accepted", "code": "rejected"},
    ]
    assert result.skipped == ()
    document = result.to_json()
    assert set(document) == {"evidence", "skipped"}
    assert {"id", "kind", "nodes", "count", "loop", "map_item"} <= set(document["evidence"][0])


def test_the_recorded_software_change_fixture_gives_the_same_attribution() -> None:
    data = json.loads((FIXTURES / "runs/software-change-two-rejections.json").read_text())
    result = scan(parse_run_record(data))
    assert [item.kind for item in result.evidence] == ["rejected_rounds", "exploration"]
    item = result.evidence[0]
    assert [r.workers for r in item.rounds] == [("worker",), ("review_repair",)]
    assert item.count == 2 and item.rounds[0].prefix[0].has_completion_text


def test_one_rejected_round_is_not_evidence() -> None:
    run = RunBuilder(software_change())
    run.visit("worker", ok())
    run.review_round("rejected", "rejected")
    run.visit("review_repair", ok())
    run.review_round("accepted", "accepted")
    result = scan(run.record())
    assert result.evidence == () and result.skipped == ()


def test_an_approved_round_between_is_still_two_rejected_rounds() -> None:
    # Without `until` the loop runs on after an approved round.
    run = RunBuilder(graph(seq("run", step("worker"), review_loop(until=None))))
    run.visit("worker", ok())
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.review_round("accepted", "accepted")
    run.visit("review_repair", ok())
    run.review_round("accepted", "rejected")
    [item] = scan(run.record()).evidence
    assert [r.round for r in item.rounds] == [1, 3] and item.count == 2
    assert [r.workers for r in item.rounds] == [("worker",), ("review_repair",)]


def test_direct_verifier_children_are_supported() -> None:
    body = seq("iteration", step("fix"), verifier("check"), choice("route", [], step("polish")))
    body["children"][2]["branches"] = [{"when": verdict_guard("check"), "node": succeed("ok")}]
    run = RunBuilder(graph(loop("review", body, verdict_guard("check"))))
    for _ in range(2):
        run.visit("fix", ok())
        run.visit("check", verdict("rejected"))
        run.visit("polish", ok())
    [item] = scan(run.record()).evidence
    assert [r.workers for r in item.rounds] == [("fix",), ("polish", "fix")]


def _mapped_graph() -> dict[str, Any]:
    return graph(map_node("each", seq("item", step("worker"), review_loop())))


def test_two_rejections_in_different_map_items_are_not_evidence() -> None:
    run = RunBuilder(_mapped_graph())
    for item in (0, 1):
        run.visit("worker", ok(), map_item=(item,))
        run.review_round("rejected", "accepted", map_item=(item,))
        run.visit("review_repair", ok(), map_item=(item,))
        run.review_round("accepted", "accepted", map_item=(item,))
    result = scan(run.record())
    assert result.evidence == ()
    assert [(s.map, s.reason) for s in result.skipped] == [
        ("each", "encloses loop review_loop: rounds are counted per map item, never across items")
    ]


def test_two_rejections_in_one_map_item_are_evidence_for_that_item() -> None:
    run = RunBuilder(_mapped_graph())
    run.visit("worker", ok(), map_item=(0,))
    run.visit("worker", ok(), map_item=(1,))
    run.review_round("rejected", "accepted", map_item=(1,))
    run.review_round("accepted", "accepted", map_item=(0,))
    run.visit("review_repair", ok(), map_item=(1,))
    run.review_round("rejected", "rejected", map_item=(1,))
    [item] = scan(run.record()).evidence
    assert item.map_item == (1,) and item.to_json()["map_item"] == [1]
    assert [r.workers for r in item.rounds] == [("worker",), ("review_repair",)]


def test_a_seeded_run_is_skipped() -> None:
    result = scan(_software_change_run().record(seeded=True))
    assert result.evidence == ()
    assert [(s.loop, s.reason) for s in result.skipped] == [
        ("review_loop", "the run was replayed from checkpoint seeds (seeded: true)")
    ]


def test_a_loop_whose_until_reads_another_node_is_skipped() -> None:
    until = all_of(verdict_guard("acceptance"), error_guard("worker"))
    run = RunBuilder(graph(seq("run", step("worker"), review_loop(until=until))))
    run.visit("worker", ok())
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.review_round("rejected", "accepted")
    result = scan(run.record())
    assert result.evidence == ()
    assert _reasons(result) == ["until reads worker.error, not only its own verifiers' signals"]


def test_a_routing_choice_reading_a_foreign_node_is_an_unsupported_layout() -> None:
    loop_node = review_loop()
    route = loop_node["body"]["children"][1]
    route["branches"][0]["when"] = any_of(error_guard("acceptance"), error_guard("worker"))
    run = RunBuilder(graph(seq("run", step("worker"), loop_node)))
    run.visit("worker", ok())
    run.review_round("rejected", "accepted")
    result = scan(run.record())
    assert result.evidence == ()
    assert _reasons(result) == [
        "unsupported layout: routing choice 'review_result' reads worker.error,"
        " not only the round's verifiers"
    ]


def test_an_any_join_par_of_reviewers_is_an_unsupported_layout() -> None:
    loop_node = review_loop()
    loop_node["body"]["children"][0]["join"] = {"kind": "any"}
    run = RunBuilder(graph(seq("run", step("worker"), loop_node)))
    run.visit("worker", ok())
    run.review_round("rejected", "rejected")
    assert _reasons(scan(run.record()))[0].startswith("unsupported layout: no direct verifiers")


def test_a_loop_body_that_is_not_a_seq_is_skipped() -> None:
    run = RunBuilder(graph(loop("l", par("p", verifier("a"), verifier("b")))))
    run.visit("a", verdict("rejected"))
    assert _reasons(scan(run.record())) == ["unsupported layout: the body is a par, not a seq"]


def test_work_before_the_verifiers_must_be_serial() -> None:
    body = seq("it", par("both", step("x"), step("y")), verifier("check"))
    run = RunBuilder(graph(loop("l", body, verdict_guard("check"))))
    run.visit("x", ok())
    run.visit("check", verdict("rejected"))
    assert _reasons(scan(run.record()))[0].startswith("unsupported layout: 'both' before")


def _nested(until: bool = True) -> dict[str, Any]:
    inner = review_loop(name="inner")
    body = seq("o", step("plan"), inner, verifier("gate"))
    outer = loop("outer", body, verdict_guard("gate") if until else None)
    return graph(seq("run", step("worker"), outer))


def test_an_enclosing_loop_is_skipped_and_the_inner_loop_checked() -> None:
    run = RunBuilder(_nested())
    run.visit("worker", ok())
    run.visit("plan", ok())
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.review_round("accepted", "rejected")
    result = scan(run.record())
    [item] = result.evidence
    assert item.loop == "inner"
    assert [r.workers for r in item.rounds] == [("plan",), ("review_repair",)]
    assert [(s.loop, s.reason) for s in result.skipped] == [
        ("outer", "encloses loop inner (loops are checked innermost-first)")
    ]


def test_an_inner_loop_whose_enclosing_loop_iterated_is_skipped() -> None:
    run = RunBuilder(_nested())
    run.visit("worker", ok())
    for gate in ("rejected", "accepted"):
        run.visit("plan", ok())
        run.review_round("rejected", "accepted")
        run.visit("gate", verdict(gate))
    result = scan(run.record())
    assert result.evidence == ()
    assert [(s.loop, s.reason) for s in result.skipped] == [
        (
            "inner",
            "enclosing loop 'outer' iterated while this loop ran, so its occurrences cannot"
            " be told apart",
        ),
        ("outer", "encloses loop inner (loops are checked innermost-first)"),
    ]


def test_an_inner_loop_is_checked_when_it_ran_in_one_outer_iteration() -> None:
    run = RunBuilder(_nested())
    run.visit("worker", ok())
    run.visit("plan", ok())
    run.visit("gate", verdict("rejected"))  # outer iteration 1 skipped the inner loop
    run.visit("plan", ok())
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.review_round("rejected", "accepted")
    [item] = scan(run.record()).evidence
    assert item.loop == "inner" and item.count == 2


def test_an_inner_loop_is_skipped_when_the_enclosing_loop_has_no_until() -> None:
    run = RunBuilder(_nested(until=False))
    run.visit("worker", ok())
    run.visit("plan", ok())
    run.review_round("rejected", "accepted")
    assert "enclosing loop 'outer' has no until verifier" in _reasons(scan(run.record()))[0]


def test_an_incomplete_round_is_skipped_with_its_reason() -> None:
    run = RunBuilder(software_change())
    run.visit("worker", ok())
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.start("acceptance")  # the run stopped mid-review
    code = run.start("code")
    run.void(code, "code")
    result = scan(run.record(outcome="cancelled"))
    [item] = result.evidence
    assert item.count == 2
    [skip] = result.skipped
    assert skip.round == 3 and skip.loop == "review_loop"
    assert skip.reason == (
        "incomplete round: no outcome from acceptance, code (missing, unsettled or voided)"
    )


def test_a_rejection_beside_a_missing_verdict_is_incomplete_not_rejected() -> None:
    run = RunBuilder(software_change())
    run.visit("worker", ok())
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.visit("acceptance", verdict("rejected"))  # `code` never ran in round 2
    result = scan(run.record())
    assert result.evidence == ()
    assert [s.round for s in result.skipped] == [2]


def test_overlapping_rounds_are_ambiguous() -> None:
    run = RunBuilder(software_change())
    run.visit("worker", ok())
    a1 = run.start("acceptance")
    c1 = run.start("code")
    run.complete(a1, "acceptance", verdict("rejected"))
    a2 = run.start("acceptance")  # a second acceptance before round 1's code settled
    run.complete(c1, "code", verdict("accepted"))
    run.complete(a2, "acceptance", verdict("rejected"))
    run.visit("code", verdict("rejected"))
    result = scan(run.record())
    assert result.evidence == ()
    assert _reasons(result) == [
        "ambiguous round: round 2's verification began before round 1's had finished"
    ]


def test_a_worker_off_the_serial_path_makes_the_round_ambiguous() -> None:
    loop_node = review_loop()
    route = loop_node["body"]["children"][1]
    route["branches"].append({"when": verdict_guard("code", "rejected"), "node": step("hotfix")})
    run = RunBuilder(graph(seq("run", step("worker"), loop_node)))
    run.visit("worker", ok())
    run.review_round("accepted", "rejected")
    run.visit("hotfix", ok())
    run.review_round("accepted", "rejected")
    result = scan(run.record())
    assert result.evidence == ()
    assert _reasons(result) == [
        "ambiguous round: hotfix ran before the verification but is not on the round's serial path"
    ]


def test_an_execution_without_a_start_event_is_skipped() -> None:
    run = RunBuilder(software_change())
    run.visit("worker", ok())
    run.review_round("rejected", "rejected")
    run.complete("ex-orphan", "review_repair", ok())
    run.review_round("rejected", "rejected")
    result = scan(run.record())
    assert result.evidence == ()
    assert "execution ex-orphan has no node_started event" in _reasons(result)[0]


def test_an_unproven_wrapper_cuts_the_serial_prefix() -> None:
    # The worker's only visit was voided: its error branch is not proven untaken,
    # so round 1 has no attributable worker and one round is left.
    run = RunBuilder(software_change())
    worker = run.start("worker")
    run.void(worker, "worker")
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.review_round("accepted", "rejected")
    result = scan(run.record())
    assert result.evidence == ()
    assert [(s.round, s.reason) for s in result.skipped] == [
        (1, "no serial-prefix worker ran before this rejected round")
    ]


def test_a_worker_that_errored_once_does_not_prove_the_wrapper() -> None:
    run = RunBuilder(software_change())
    run.visit("worker", error("malformed", "malformed_result"))
    run.visit("worker", ok(), attempt=2)
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.review_round("rejected", "accepted")
    result = scan(run.record())
    assert result.evidence == ()
    assert [s.round for s in result.skipped] == [1]


def test_an_error_only_wrapper_inside_the_repair_path_counts_when_proven() -> None:
    loop_node = review_loop()
    route = loop_node["body"]["children"][1]
    route["otherwise"] = seq(
        "repair",
        step("review_repair"),
        choice("repair_result", [(error_guard("review_repair"), fail("repair_failed"))], None),
    )
    run = RunBuilder(graph(seq("run", step("worker"), loop_node)))
    run.visit("worker", ok())
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.review_round("rejected", "accepted")
    [item] = scan(run.record()).evidence
    assert [r.workers for r in item.rounds] == [("worker",), ("review_repair",)]


def test_a_run_without_graph_ir_reports_why_rounds_were_not_judged() -> None:
    run = _software_change_run()
    run.graph_ir = None
    result = scan(run.record())
    assert result.evidence == ()
    assert _reasons(result) == [
        "the run record carries no graph IR, so review loops cannot be identified"
    ]


def test_a_loop_that_never_ran_is_not_reported() -> None:
    run = RunBuilder(software_change())
    run.visit("worker", error("crash"))
    assert scan(run.record()).skipped == ()


def test_rejected_rounds_ids_do_not_depend_on_reviewer_completion_order() -> None:
    def build(code_first: bool) -> ScanResult:
        run = RunBuilder(software_change())
        run.visit("worker", ok())
        for number, (a, c) in enumerate([("rejected", "accepted"), ("accepted", "rejected")]):
            ea = run.start("acceptance", execution=f"a{number}")
            ec = run.start("code", execution=f"c{number}")
            settle = [(ec, "code", c), (ea, "acceptance", a)]
            for execution, node, label in settle if code_first else reversed(settle):
                run.complete(execution, node, verdict(label))
            run.visit("review_repair", ok())
        return scan(run.record())

    assert build(True).to_json() == build(False).to_json()


def test_a_loop_enclosing_a_loop_is_skipped_even_if_the_inner_one_never_ran() -> None:
    run = RunBuilder(_nested())
    run.visit("worker", ok())
    run.visit("plan", error("crash"))
    result = scan(run.record())
    assert [(s.loop, s.reason) for s in result.skipped] == [
        ("outer", "encloses loop inner (loops are checked innermost-first)")
    ]


def _merge_delivery_graph() -> dict[str, Any]:
    """software-change with merge delivery: a delivery loop inside the accepted branch."""
    deliver = verifier("deliver")
    deliver["signals"] = {"outcome": ["ci_failed", "conflict", "merged"]}
    merged = {
        "kind": "in",
        "value": {"name": "deliver", "source": "signal", "field": "outcome"},
        "labels": ["merged"],
    }
    retry = dict(merged, labels=["ci_failed", "conflict"])
    attempt = seq(
        "delivery_attempt",
        deliver,
        choice(
            "delivery_result",
            [(error_guard("deliver"), fail("delivery_failed")), (retry, step("delivery_repair"))],
            succeed("delivered"),
        ),
    )
    delivery = seq(
        "merge_delivery", loop("delivery_loop", attempt, merged), fail("delivery_exhausted")
    )
    reviews = review_loop()
    reviews["body"]["children"][1]["branches"][1]["node"] = delivery
    return graph(seq("run", step("worker"), reviews))


def test_merge_delivery_nests_a_loop_so_the_review_loop_is_skipped() -> None:
    run = RunBuilder(_merge_delivery_graph())
    run.visit("worker", ok())
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.review_round("rejected", "accepted")
    run.visit("review_repair", ok())
    run.review_round("accepted", "accepted")
    run.visit("deliver", {"status": "verifier", "signals": {"outcome": "merged"}})
    result = scan(run.record())
    assert result.evidence == ()
    assert [(s.loop, s.reason) for s in result.skipped] == [
        ("review_loop", "encloses loop delivery_loop (loops are checked innermost-first)")
    ]
