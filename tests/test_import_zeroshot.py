"""`import zeroshot`: run records from a zeroshot native run ledger (`runs.sqlite3`).

The ledger is built here with zeroshot's own schema (`v2_run_ledger/sqlite.rs`) and
`StoredRun` / `RunEvent` JSON shaped as zeroshot serialises them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import ZEROSHOT_FIXTURES

from active_memory.cli import main
from active_memory.errors import InvalidRecord
from active_memory.runlog.importers.zeroshot import import_ledger
from active_memory.runlog.record import ErrorOutcome, load_run_record

CANONICAL = ZEROSHOT_FIXTURES / "canonical"

# Verbatim from zeroshot's SqliteRunLedger schema.
SCHEMA = """
PRAGMA foreign_keys = ON;
CREATE TABLE IF NOT EXISTS v2_runs (
    run_id TEXT PRIMARY KEY NOT NULL,
    submission_key TEXT UNIQUE NOT NULL,
    submission_digest TEXT NOT NULL,
    cursor INTEGER NOT NULL,
    stored_json TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS v2_run_events (
    run_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    event_json TEXT NOT NULL,
    PRIMARY KEY (run_id, sequence),
    FOREIGN KEY (run_id) REFERENCES v2_runs(run_id) ON DELETE CASCADE
) STRICT;
"""

SOURCE = {
    "repository": "open-engine/zeroshot",
    "branch": "main",
    "revision": "0123456789abcdef0123456789abcdef01234567",
}
RUNTIME = {
    "harness": "codex",
    "provider": "openai",
    "size": "medium",
    "nodes": {"worker": {"kind": "agent", "model": "gpt-5.6", "effort": "max"}},
}


def _graph() -> dict[str, Any]:
    graph: dict[str, Any] = json.loads((CANONICAL / "base.json").read_text())
    return graph


def _reference(run_id: str, execution: int, node: str = "worker") -> dict[str, Any]:
    return {"runId": run_id, "node": node, "nodeInstance": execution, "execution": execution}


def _started(run_id: str, execution: int) -> dict[str, Any]:
    return {
        "kind": "node_started",
        "reference": _reference(run_id, execution),
        "occurrence": {"node": "worker", "mapIndices": []},
        "attempt": 1,
        "input": {"request": "edit"},
    }


def _completed(run_id: str, execution: int, outcome: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "node_completed",
        "completion": {"reference": _reference(run_id, execution), "outcome": outcome},
    }


def _finished_events(run_id: str) -> list[dict[str, Any]]:
    return [
        {"kind": "run_started"},
        _started(run_id, 1),
        {"kind": "safe_log", "execution": 1, "stream": "output", "line": "working"},
        _completed(run_id, 1, {"status": "error", "code": "timeout", "reason": "declared_failure"}),
        _started(run_id, 2),
        _completed(
            run_id, 2, {"status": "verified", "output": "  Fixed the flow.  ", "artifacts": []}
        ),
        {"kind": "terminal", "result": {"status": "succeeded", "output": {"merged": True}}},
    ]


def _stored(run_id: str, phase: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    terminal = next((e["result"] for e in events if e["kind"] == "terminal"), None)
    return {
        "submissionKey": f"submission-{run_id}",
        "submissionDigest": "a" * 64,
        "admitted": {
            "title": "Repair checkout flow",
            "graph": _graph(),
            "initialInput": None,
            "runtime": RUNTIME,
            "source": SOURCE,
        },
        "snapshot": {
            "runId": run_id,
            "title": "Repair checkout flow",
            "source": SOURCE,
            "size": "medium",
            "cursor": f"v2:{len(events)}",
            "phase": phase,
            "forceStopRequested": False,
            "executions": {},
            "terminal": terminal,
        },
    }


def _ledger(folder: Path, runs: dict[str, tuple[str, list[dict[str, Any]]]]) -> Path:
    path = folder / "runs.sqlite3"
    connection = sqlite3.connect(path)
    connection.executescript(SCHEMA)
    for run_id, (phase, events) in runs.items():
        connection.execute(
            "INSERT INTO v2_runs (run_id, submission_key, submission_digest, cursor, stored_json)"
            " VALUES (?, ?, ?, ?, ?)",
            (
                run_id,
                f"submission-{run_id}",
                "a" * 64,
                len(events),
                json.dumps(_stored(run_id, phase, events)),
            ),
        )
        for sequence, event in enumerate(events, start=1):
            connection.execute(
                "INSERT INTO v2_run_events (run_id, sequence, event_json) VALUES (?, ?, ?)",
                (run_id, sequence, json.dumps(event)),
            )
    connection.commit()
    connection.close()
    return path


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    running = [{"kind": "run_started"}, _started("run-2", 1)]
    return _ledger(
        tmp_path,
        {"run-1": ("finished", _finished_events("run-1")), "run-2": ("running", running)},
    )


def test_finished_run_becomes_a_valid_run_record(ledger: Path) -> None:
    result = import_ledger(ledger)
    assert [run.run_id for run in result.runs] == ["run-1"]
    record = result.runs[0].record
    assert record["outcome"] == "succeeded"
    assert record["title"] == "Repair checkout flow"
    assert record["source"] == SOURCE
    assert record["runtime"] == RUNTIME
    assert record["repository"]["namespace"] == "repo:github.com/open-engine/zeroshot"
    assert [e["sequence"] for e in record["events"]] == [1, 2, 3, 4, 5, 6, 7]
    assert record["completions"] == {"2": "Fixed the flow."}
    assert "deliveries" not in record  # no delivery evidence in a zeroshot ledger


def test_graph_hash_is_the_canonical_hash_of_the_admitted_graph(ledger: Path) -> None:
    record = import_ledger(ledger).runs[0].record
    assert record["graph"]["hash"] == (CANONICAL / "base.sha256").read_text().strip()
    assert record["graph"]["ir"] == _graph()


def test_unfinished_runs_are_reported_and_skipped(ledger: Path) -> None:
    skipped = import_ledger(ledger).skipped
    assert [(s.run_id, s.reason) for s in skipped] == [("run-2", "run is running, not finished")]


def test_a_run_folder_holding_the_ledger_is_accepted(ledger: Path) -> None:
    assert [r.run_id for r in import_ledger(ledger.parent).runs] == ["run-1"]


def test_written_record_loads_and_keeps_error_outcomes(ledger: Path, tmp_path: Path) -> None:
    out = tmp_path / "records"
    out.mkdir()
    assert main(["import", "zeroshot", str(ledger), "--out", str(out)]) == 0
    record = load_run_record(out / "run-1.run.json")
    visits = record.visits()
    assert [v.execution for v in visits] == ["1", "2"]
    assert isinstance(visits[0].outcome, ErrorOutcome)
    assert visits[0].outcome.code == "timeout"


def test_import_never_writes_to_the_ledger(ledger: Path, tmp_path: Path) -> None:
    before = hashlib.sha256(ledger.read_bytes()).hexdigest()
    siblings = sorted(p.name for p in ledger.parent.iterdir())
    ledger.chmod(0o444)
    import_ledger(ledger)
    assert hashlib.sha256(ledger.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in ledger.parent.iterdir()) == siblings


def test_json_output_lists_runs_and_skipped(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "json-out"
    out.mkdir()
    assert main(["import", "zeroshot", str(ledger), "--out", str(out), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["runs"] == [
        {"run_id": "run-1", "path": str(out / "run-1.run.json"), "events": 7, "receipts": 0}
    ]
    assert document["skipped"] == [{"run_id": "run-2", "reason": "run is running, not finished"}]


def test_existing_records_are_not_overwritten_without_force(
    ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "again"
    out.mkdir()
    (out / "run-1.run.json").write_text("mine\n")
    assert main(["import", "zeroshot", str(ledger), "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (out / "run-1.run.json").read_text() == "mine\n"
    assert main(["import", "zeroshot", str(ledger), "--out", str(out), "--force"]) == 0
    assert load_run_record(out / "run-1.run.json").run_id == "run-1"
    assert [p.name for p in out.iterdir()] == ["run-1.run.json"]  # no temporary left


def test_output_file_refuses_an_import_of_several_runs(tmp_path: Path) -> None:
    ledger = _ledger(
        tmp_path,
        {
            "run-a": ("finished", _finished_events("run-a")),
            "run-b": ("finished", _finished_events("run-b")),
        },
    )
    assert main(["import", "zeroshot", str(ledger), "-o", str(tmp_path / "one.json")]) == 2
    assert not (tmp_path / "one.json").exists()


def test_unknown_event_kinds_are_dropped_with_a_warning(tmp_path: Path) -> None:
    events = _finished_events("run-x")
    events.insert(2, {"kind": "something_new", "detail": 1})
    result = import_ledger(_ledger(tmp_path, {"run-x": ("finished", events)}))
    run = result.runs[0]
    assert run.events == 7
    assert run.warnings == ["dropped 1 event(s) of unknown kind something_new"]


def test_a_run_with_corrupt_json_is_skipped_not_fatal(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, {"run-ok": ("finished", _finished_events("run-ok"))})
    connection = sqlite3.connect(ledger)
    connection.execute(
        "INSERT INTO v2_runs VALUES ('run-bad', 'k-bad', ?, 0, '{not json')", ("b" * 64,)
    )
    connection.commit()
    connection.close()
    result = import_ledger(ledger)
    assert [r.run_id for r in result.runs] == ["run-ok"]
    assert result.skipped[0].run_id == "run-bad"
    assert "not JSON" in result.skipped[0].reason


def test_a_database_that_is_not_a_ledger_is_a_clear_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.sqlite3"
    connection = sqlite3.connect(other)
    connection.execute("CREATE TABLE notes (x TEXT)")
    connection.commit()
    connection.close()
    with pytest.raises(InvalidRecord, match="not a zeroshot native run ledger: v2_runs table"):
        import_ledger(other)
    assert main(["import", "zeroshot", str(other)]) == 2
    assert "not a zeroshot native run ledger" in capsys.readouterr().err


def test_a_corrupt_file_is_a_clear_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = tmp_path / "runs.sqlite3"
    garbage.write_bytes(b"this is not sqlite at all" * 100)
    assert main(["import", "zeroshot", str(tmp_path)]) == 2
    assert "not a readable SQLite database" in capsys.readouterr().err


def test_a_folder_without_a_ledger_is_a_clear_usage_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidRecord, match=r"no runs\.sqlite3 in this folder"):
        import_ledger(tmp_path)
