"""The run record `active-memory/run@1`: loading, clear errors, receipts, deliveries."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from run_builder import CHECKOUT, T0, RunBuilder, error, ok, software_change, verdict

from active_memory.errors import InvalidRecord, UsageError
from active_memory.runlog.record import (
    MAX_RECEIPTS,
    RECEIPTS_KEPT_FIRST,
    ErrorOutcome,
    NodeCompleted,
    RunRecord,
    VerifierOutcome,
    load_run_record,
    parse_run_record,
)


def _sample() -> dict[str, Any]:
    run = RunBuilder(software_change())
    run.visit("worker", error("timeout"))
    run.visit("acceptance", verdict("rejected"))
    return run.build()


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def _problem(data: dict[str, Any]) -> str:
    with pytest.raises(InvalidRecord) as caught:
        parse_run_record(data, "run.json")
    assert isinstance(caught.value, UsageError) and caught.value.exit_code == 2
    return str(caught.value)


def test_a_valid_record_loads_from_a_file(tmp_path: Path) -> None:
    record = load_run_record(_write(tmp_path, _sample()))
    assert record.run_id == "run-1" and record.outcome == "succeeded"
    completed = [e.event for e in record.events if isinstance(e.event, NodeCompleted)]
    assert isinstance(completed[0].completion.outcome, ErrorOutcome)
    assert isinstance(completed[1].completion.outcome, VerifierOutcome)
    assert record.graph is not None and record.graph.ir is not None


def test_unknown_fields_are_kept_everywhere() -> None:
    data = _sample()
    data["future"] = {"a": 1}
    data["events"][1]["event"]["reference"]["shard"] = 7
    data["events"][2]["event"]["completion"]["outcome"]["elapsedMs"] = 12
    record = parse_run_record(data)
    dumped = record.model_dump(mode="json", by_alias=True)
    assert dumped["future"] == {"a": 1}
    assert dumped["events"][1]["event"]["reference"]["shard"] == 7
    assert dumped["events"][2]["event"]["completion"]["outcome"]["elapsedMs"] == 12


def test_an_unknown_outcome_status_names_the_json_path_and_the_choices() -> None:
    data = _sample()
    data["events"][4]["event"]["completion"]["outcome"]["status"] = "approved"
    assert _problem(data) == (
        "run.json: events[4].event.completion.outcome.status: "
        "expected one of verified, verifier, error"
    )


def test_a_bad_error_code_names_the_closed_channel() -> None:
    data = _sample()
    data["events"][2]["event"]["completion"]["outcome"]["code"] = "oops"
    assert _problem(data).endswith(
        "events[2].event.completion.outcome.code: "
        "expected one of timeout, crash, malformed, refusal"
    )


def test_a_missing_field_and_a_wrong_type_are_named() -> None:
    data = _sample()
    del data["events"][1]["event"]["occurrence"]
    assert _problem(data).endswith("events[1].event.occurrence: required field missing")
    data = _sample()
    data["seeded"] = "yes"
    assert _problem(data).endswith("seeded: expected true or false")
    data = _sample()
    data["events"][3]["event"]["kind"] = "node_paused"
    assert "events[3].event.kind: expected one of run_started, node_started" in _problem(data)


def test_a_future_schema_is_refused_clearly() -> None:
    data = _sample()
    data["schema"] = "active-memory/run@2"
    message = _problem(data)
    assert "active-memory/run@2 is newer" in message and "upgrade" in message


def test_a_missing_or_foreign_schema_is_refused() -> None:
    data = _sample()
    del data["schema"]
    assert "schema: required field missing" in _problem(data)
    data["schema"] = "zeroshot/run@1"
    assert "schema: expected 'active-memory/run@1'" in _problem(data)


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, '{\n  "schema": "active-memory/run@1",\n  "run_id": oops\n}')
    with pytest.raises(InvalidRecord) as caught:
        load_run_record(path)
    assert caught.value.line == 3
    assert str(caught.value) == f"{path}:3: column 13: not valid JSON: Expecting value"


def test_a_missing_file_and_a_non_object_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such run record; check the path"):
        load_run_record(tmp_path / "absent.json")
    with pytest.raises(InvalidRecord, match="expected a JSON object, found a list"):
        load_run_record(_write(tmp_path, "[1, 2]"))
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(InvalidRecord, match="not UTF-8"):
        load_run_record(path)


def test_events_are_ordered_by_sequence_whatever_the_file_order() -> None:
    data = _sample()
    data["events"].reverse()
    record = parse_run_record(data)
    assert [e.sequence for e in record.events] == sorted(e.sequence for e in record.events)
    assert record.visits() == parse_run_record(_sample()).visits()


def test_duplicate_sequence_numbers_are_refused() -> None:
    data = _sample()
    data["events"][2]["sequence"] = 1
    assert "events: duplicate sequence 1" in _problem(data)


def test_visits_fold_starts_completions_and_voids() -> None:
    run = RunBuilder()
    done = run.visit("worker", ok(), map_item=(2,))
    voided = run.start("code")
    run.void(voided, "code")
    open_ = run.start("acceptance")
    visits = {v.execution: v for v in run.record().visits()}
    assert visits[done].map_indices == (2,) and visits[done].outcome is not None
    assert visits[done].settled is not None and visits[done].voided is None
    assert visits[voided].outcome is None and visits[voided].voided == "parallel_join"
    assert visits[open_].settled is None and visits[open_].outcome is None


def test_deliveries_missing_is_not_the_same_as_an_empty_list() -> None:
    data = _sample()
    assert parse_run_record(data).deliveries == ()
    del data["deliveries"]
    assert parse_run_record(data).deliveries is None
    data["deliveries"] = [{"session": "s-1", "lesson": "L-1", "revision": 2}]
    delivered = parse_run_record(data).deliveries
    assert delivered is not None and delivered[0].lesson == "L-1"


def test_receipt_paths_are_stored_root_relative_and_outside_paths_dropped() -> None:
    data = _sample()
    data["receipts"] = [
        {
            "node": "worker",
            "tool": "Read",
            "at": T0.isoformat(),
            "paths": [
                "src/app.py",
                f"{CHECKOUT}/src/lib/util.py",
                "/etc/passwd",
                "../elsewhere/x.py",
                "src/../../escape.py",
                f"{CHECKOUT}/../sibling/y.py",
                "./src/app.py",
                f"{CHECKOUT}",
            ],
        }
    ]
    record = parse_run_record(data)
    assert record.receipts[0].paths == ("src/app.py", "src/lib/util.py")


def test_absolute_receipt_paths_are_dropped_without_a_checkout() -> None:
    data = _sample()
    data["repository"]["checkout"] = None
    data["receipts"] = [{"tool": "Read", "paths": ["/abs/x.py", "rel/y.py"]}]
    assert parse_run_record(data).receipts[0].paths == ("rel/y.py",)


def test_receipts_are_capped_keeping_the_first_256_and_the_latest_256() -> None:
    data = _sample()
    data["receipts"] = [
        {
            "node": "worker",
            "tool": "Read",
            "at": (T0 + timedelta(seconds=i)).isoformat(),
            "paths": [f"src/f{i}.py"],
        }
        for i in range(10_000)
    ]
    data["receipts"].reverse()  # file order must not decide which survive
    record = parse_run_record(data)
    kept = [r.paths[0] for r in record.receipts]
    assert len(kept) == MAX_RECEIPTS == 512 and RECEIPTS_KEPT_FIRST == 256
    assert kept[:256] == [f"src/f{i}.py" for i in range(256)]
    assert kept[256:] == [f"src/f{i}.py" for i in range(10_000 - 256, 10_000)]
    assert record.receipts_dropped == 10_000 - 512
    again = parse_run_record(record.model_dump(mode="json", by_alias=True))
    assert again.receipts == record.receipts and again.receipts_dropped == record.receipts_dropped


def test_receipts_without_times_keep_their_recorded_order() -> None:
    data = _sample()
    data["receipts"] = [{"tool": "Read", "paths": [f"f{i}"]} for i in range(600)]
    record = parse_run_record(data)
    kept = [r.paths[0] for r in record.receipts]
    assert kept[0] == "f0" and kept[255] == "f255" and kept[256] == "f344" and kept[-1] == "f599"


def test_naive_times_are_read_as_utc() -> None:
    data = _sample()
    data["events"][1]["at"] = "2026-11-29T10:00:00"
    record = parse_run_record(data)
    assert record.events[1].at is not None and record.events[1].at.utcoffset() == timedelta(0)


def test_the_record_model_rejects_bad_schema_directly() -> None:
    with pytest.raises(ValueError):
        RunRecord.model_validate({"schema": "x", "run_id": "r", "outcome": "succeeded"})


def test_a_graph_with_a_repeated_node_name_is_refused_with_its_path() -> None:
    data = _sample()
    data["graph"]["ir"]["root"]["children"][0]["name"] = "worker_result"
    message = _problem(data)
    assert "graph.ir: node name 'worker_result' is used more than once" in message


def test_a_relative_checkout_cannot_anchor_absolute_paths() -> None:
    data = _sample()
    data["repository"]["checkout"] = "checkout"
    data["receipts"] = [{"tool": "Read", "paths": ["/work/checkout/a.py", "b.py"]}]
    assert parse_run_record(data).receipts[0].paths == ("b.py",)


def test_windows_checkouts_relativize_with_either_separator() -> None:
    data = _sample()
    data["repository"]["checkout"] = "C:\\work\\api"
    data["receipts"] = [
        {"tool": "Read", "paths": ["C:\\work\\api\\src\\a.py", "C:/work/api/b.py", "D:\\x.py"]}
    ]
    assert parse_run_record(data).receipts[0].paths == ("src/a.py", "b.py")


def test_receipts_never_keep_arguments_or_results() -> None:
    data = _sample()
    data["receipts"] = [
        {"tool": "Bash", "paths": ["a.py"], "arguments": {"command": "cat .env"}, "result": "x"}
    ]
    dumped = parse_run_record(data).model_dump(mode="json")["receipts"][0]
    assert set(dumped) == {"node", "tool", "at", "paths"}
