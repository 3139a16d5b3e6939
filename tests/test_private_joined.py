"""`<private>` text stays out once everything is joined into a run record (issue 27
item 4, docs/privacy.md): hook receipts and deliveries, tool failures, prompts, node
inputs and outputs; tags matched loosely; the session's hook files rewritten.

The transcript is the real Claude Code 2.1.332 capture of `tests/fixtures/sessions/`
with a private path typed into a prompt and read by the agent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from recall_support import hook_env

from active_memory.cli import main
from active_memory.recall.records import DELIVERIES_FILE, RECEIPTS_FILE, run_dir
from active_memory.runlog.importers.harness_session import import_harness_session
from active_memory.runlog.importers.privacy import (
    PRIVATE_MARK,
    Scrubber,
    private_passages,
    seal,
    without_private,
)
from active_memory.runlog.record import RunRecord, parse_run_record

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
SESSION = "913df1ad-bf35-4229-9a7f-7a3c08238481"
PRIVATE_PATH = "data/PRIVATE-ACME-MERGER-7731.csv"
NEEDLE = "ACME-MERGER-7731"


@pytest.mark.parametrize(
    "tagged",
    [
        "<PRIVATE >x-secret-1</PRIVATE>",
        "< private>x-secret-1</ Private >",
        "<Private>x-secret-1< /private >",
        "<\tprivate\n>x-secret-1</private\t>",
    ],
)
def test_tags_are_matched_in_any_case_with_whitespace_inside(tagged: str) -> None:
    text = f"Fix it {tagged} now"
    assert private_passages(text) == ["x-secret-1"]
    assert without_private(text) == "Fix it  now"


def test_not_a_tag_is_left_alone() -> None:
    assert without_private("a <privateer> and <b>private</b>") == "a <privateer> and <b>private</b>"


def test_a_passage_repeated_in_another_case_is_masked() -> None:
    scrubber = Scrubber(private=["Acme Merger plan"])
    assert scrubber.text("the ACME MERGER PLAN is off") == f"the {PRIVATE_MARK} is off"
    assert scrubber.text("acme merger Plan") == PRIVATE_MARK


def _every_field(secret: str) -> dict[str, Any]:
    """A run record with `secret` in every field that holds text (the graph aside)."""
    at = "2026-12-01T10:00:00Z"
    ref = {"node": "worker", "execution": "ex-1"}
    return {
        "schema": "active-memory/run@1",
        "run_id": "claude-one",
        "title": f"title {secret}",
        "outcome": "failed",
        "source": {"repository": f"acme/{secret}", "branch": f"b-{secret}", "revision": secret},
        "repository": {
            "namespace": f"repo:local/{secret}",
            "checkout": f"/home/dev/{secret}",
            "remote": f"git@host:{secret}.git",
            "aliases": [secret],
        },
        "runtime": {"harness": "claude", "note": secret, secret: 1},
        "events": [
            {"sequence": 1, "at": at, "event": {"kind": "run_started"}},
            {
                "sequence": 2,
                "event": {
                    "kind": "node_started",
                    "reference": ref,
                    "occurrence": {"node": "worker"},
                    "input": f"read {secret}",
                },
            },
            {
                "sequence": 3,
                "event": {"kind": "safe_log", "execution": "ex-1", "line": f"cat {secret}"},
            },
            {
                "sequence": 4,
                "event": {"kind": "token_usage_observed", "execution": "ex-1", "usage": secret},
            },
            {
                "sequence": 5,
                "event": {
                    "kind": "node_completed",
                    "completion": {
                        "reference": ref,
                        "outcome": {"status": "error", "code": "crash", "reason": secret},
                    },
                },
            },
            {
                "sequence": 6,
                "event": {
                    "kind": "execution_voided",
                    "reference": {"node": "worker", "execution": "ex-2"},
                    "reason": secret,
                },
            },
            {
                "sequence": 7,
                "event": {
                    "kind": "node_completed",
                    "completion": {
                        "reference": {"node": "worker", "execution": "ex-3"},
                        "outcome": {
                            "status": "verifier",
                            "signals": {"s": secret},
                            "output": secret,
                        },
                    },
                },
            },
            {
                "sequence": 8,
                "event": {"kind": "terminal", "result": {"status": "failed", "output": secret}},
            },
        ],
        "completions": {"ex-1": f"done with {secret}"},
        "receipts": [
            {"node": "worker", "tool": "Read", "paths": [secret]},
            {"node": "worker", "tool": "Bash", "paths": ["src/a.py", secret], "at": at},
        ],
        "tool_failures": [
            {
                "node": "worker",
                "execution": "ex-1",
                "tool": "Bash",
                "at": at,
                "command": f"cat {secret}",
                "family": "cat",
                "cwd": "",
                "exit_code": 1,
                "error": f"{secret}: No such file",
                "paths": [secret],
                "resolved_by": {"at": at, "command": f"cat ./{secret}", "family": "cat"},
            }
        ],
        "tool_failures_dropped": 0,
        "deliveries": [{"session": "s1", "lesson": f"L-{secret}", "revision": 1, "at": at}],
    }


def test_a_private_passage_planted_in_every_field_of_a_record_is_masked() -> None:
    secret = PRIVATE_PATH
    data = _every_field(secret)
    # The record covers every field the model has: a new field must be added here.
    assert set(RunRecord.model_fields) - {"schema_", "run_id", "graph"} <= {
        *data,
        "seeded",
        "receipts_dropped",
    }
    parse_run_record(data)  # the control: a valid record that holds it everywhere
    assert json.dumps(data).count(secret) >= 25
    sealed, masked = seal(data, [secret])
    assert NEEDLE not in json.dumps(sealed)
    assert masked >= 25
    record = parse_run_record(sealed)
    assert [r.paths for r in record.receipts] == [("src/a.py",)]  # the private path gone
    assert record.tool_failures[0].paths == ()
    assert "[private]" in record.tool_failures[0].command


def test_tags_anywhere_in_a_record_are_cut_by_the_seal() -> None:
    data = _every_field("<PRIVATE >zz-hidden-zz</ private>")
    sealed, _ = seal(data, [])
    assert "zz-hidden-zz" not in json.dumps(sealed)


def _transcript(tmp_path: Path) -> Path:
    folder = tmp_path / "claude"
    shutil.copytree(FIXTURES / "claude-2.1.332-real", folder)
    main_file = folder / f"{SESSION}.jsonl"
    text = main_file.read_text(encoding="utf-8")
    assert '"Check git status"' in text and '"file_path":"src/app.py"' in text
    text = text.replace(
        '"Check git status"', f'"Check git status, then read < PRIVATE>{PRIVATE_PATH}</Private >"'
    )
    text = text.replace('"file_path":"src/app.py"', f'"file_path":"{PRIVATE_PATH}"')
    main_file.write_text(text, encoding="utf-8")
    return main_file


def _hook_files(state: Path) -> Path:
    folder = Path(run_dir(str(state / "active-memory" / "recall"), f"session:{SESSION}"))
    folder.mkdir(parents=True, exist_ok=True)
    at = "2026-12-01T14:50:40.%03dZ"
    receipts = [
        {"node": None, "tool": "Read", "paths": ["README.md"], "at": at % 241},
        {"node": None, "tool": "Read", "paths": [PRIVATE_PATH.lower()], "at": at % 300},
        {"node": None, "tool": "Grep", "paths": ["src", PRIVATE_PATH], "at": at % 322},
    ]
    (folder / RECEIPTS_FILE).write_text(
        "".join(json.dumps(r) + "\n" for r in receipts), encoding="utf-8"
    )
    delivery = {"session": SESSION, "lesson": "L-1", "revision": 1, "at": at % 100}
    (folder / DELIVERIES_FILE).write_text(json.dumps(delivery) + "\n", encoding="utf-8")
    return folder


def _hook_text(folder: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in folder.iterdir() if p.is_file())


def test_import_claude_masks_hook_receipts_and_rewrites_the_hook_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    for key, value in hook_env(state, tmp_path / "l.sqlite3").items():
        monkeypatch.setenv(key, value)
    source = _transcript(tmp_path)
    folder = _hook_files(state)
    assert NEEDLE in _hook_text(folder)  # the control
    out = tmp_path / "run.json"
    assert main(["import", "claude", str(source), "-o", str(out), "--json"]) == 0
    printed = capsys.readouterr().out
    written = out.read_text(encoding="utf-8")
    assert NEEDLE.lower() not in written.lower() and NEEDLE.lower() not in printed.lower()
    receipts = json.loads(written)["receipts"]
    assert ["README.md"] in [r["paths"] for r in receipts]
    assert ["src"] in [r["paths"] for r in receipts]  # the receipt stays, its path goes
    assert json.loads(printed)["runs"][0]["report"]["private"]["masked"] >= 3
    hook = _hook_text(folder)
    assert NEEDLE.lower() not in hook.lower()
    lines = (folder / RECEIPTS_FILE).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["paths"] for line in lines] == [["README.md"], ["src"]]
    assert (folder / DELIVERIES_FILE).read_text(encoding="utf-8").count("L-1") == 1


def test_the_workers_import_masks_the_joined_record_and_the_hook_files(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = hook_env(state, tmp_path / "l.sqlite3")
    source = _transcript(tmp_path)
    folder = _hook_files(state)
    record = import_harness_session("claude", source, session_id=SESSION, cwd=None, env=env)
    dumped = record.model_dump_json(by_alias=True)
    assert NEEDLE.lower() not in dumped.lower()
    assert record.deliveries is not None and len(record.deliveries) == 1
    assert NEEDLE.lower() not in _hook_text(folder).lower()
    # A second import finds nothing more to rewrite and the same record.
    again = import_harness_session("claude", source, session_id=SESSION, cwd=None, env=env)
    assert again.receipts == record.receipts
