"""`lessons stats`: lessons per scope and status from the store; deliveries, refused
duplicates and rejections by kind from the postmortem journal's last N entries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import FakeSessions, config, evidence_ids, run_record

from active_memory.cli import main
from active_memory.credentials import secret_reasons
from active_memory.lessons import Associations, Author, GraphScope, Lesson
from active_memory.orchestrator import run_postmortem
from active_memory.orchestrator.journal import Journal, JournalEntry, RefusedProposal
from active_memory.quality.reasons import rejection_kind, rejection_kinds
from active_memory.specialists.providers.base import Request
from active_memory.store.sqlite import SqliteStore

SCOPE = {"kind": "repository", "repository": "repo:github.com/acme/api"}


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("lessons[0].recommendation: generic-advice: be careful", "generic_advice"),
        ("lessons[3]: near-duplicate of L-7 (r1): similarity 81/100", "duplicate"),
        ("lessons[21]: only the first 20 proposals are considered", "too_many"),
        ("lessons[2]: repeats the title of lessons[0]", "repeated_title"),
        ("lessons[0].evidence[0]: 'ev-x' is not an evidence item of this task", "evidence"),
        ("lessons[0].citations[0]: not a current file: missing", "citation"),
        ("lessons[0].associations: none matches a cited file (x)", "associations"),
        ("lessons[0].node: 'w' did not execute in run r", "node"),
        ("lessons[0].title: the limit is 200 bytes", "invalid"),
    ],
)
def test_each_rejection_wording_has_its_kind(reason: str, kind: str) -> None:
    assert rejection_kind(reason) == kind


def test_a_secret_reason_is_of_kind_secret_and_kinds_are_distinct() -> None:
    [reason] = secret_reasons({"title": "key AKIA" + "IOSFODNN7EXAMPLE"}, "lessons[0]")
    assert rejection_kinds([reason, reason, "x: generic-advice: y"]) == [
        "secret",
        "generic_advice",
    ]


async def _repeating_proposal(request: Request) -> Any:
    return {
        "lessons": [
            {
                "title": "Read the schema before the generated client",
                "recommendation": "Open `api/schema.json` first; `make api-client` rebuilds it.",
                "associations": {"files": ["api/schema.json"]},
                "evidence": evidence_ids(request),
                "citations": [],
                "why_recurs": "the worker timed out twice reading generated code",
                "node": "worker",
            }
        ]
    }


@pytest.mark.asyncio
async def test_the_journal_keeps_deliveries_and_refused_proposals(
    tmp_path: Path, store: SqliteStore
) -> None:
    record = run_record(tmp_path, ["L-40", "L-40"], timeouts=True)
    assert record.graph is not None and record.graph.hash is not None
    existing = Lesson(
        id="L-40",
        revision=1,
        scope=GraphScope(graph_hash=record.graph.hash, node="worker"),
        title="Read api/schema.json before the generated client",
        recommendation="Open `api/schema.json` first, since `make api-client` rebuilds it.",
        associations=Associations(files=["api/schema.json"]),
    )
    await store.import_lessons([existing], Author(specialist="person:test"))
    sessions = FakeSessions({"graph_discovery": _repeating_proposal})
    journal = tmp_path / "journal"
    await run_postmortem(record, config(), store, sessions=sessions, journal_dir=journal)
    [entry] = Journal(journal).entries()
    assert entry.deliveries == {"L-40": 2}
    assert [(r.specialist, r.kinds, r.duplicate_of) for r in entry.rejected] == [
        ("graph_discovery", ["duplicate"], "L-40")
    ]


def _journal(folder: Path) -> None:
    journal = Journal(folder)
    refused = RefusedProposal(specialist="repository_discovery", title="t", kinds=["secret"])
    duplicate = RefusedProposal(
        specialist="graph_discovery", title="d", kinds=["duplicate"], duplicate_of="L-1"
    )
    entries = [
        ("run-1", "finished", {"L-1": 3, "L-2": 1}, [refused]),
        ("run-2", "failed", {"L-1": 9}, [refused]),  # no report: not counted
        ("run-3", "finished", {"L-1": 1}, [duplicate, refused]),
    ]
    for number, (run_id, state, deliveries, rejected) in enumerate(entries):
        journal.write(
            JournalEntry(
                run_id=run_id,
                outcome="completed",
                state=state,
                pid=1,
                started_at=f"2026-11-29T15:0{number}:00Z",
                deliveries=deliveries,
                rejected=rejected,
            )
        )


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[str, str]:
    lines = [
        {"id": "L-1", "revision": 1, "scope": SCOPE, "title": "One", "recommendation": "Run x."},
        {"id": "L-2", "revision": 1, "scope": SCOPE, "title": "Two", "recommendation": "Run y."},
        {"id": "L-3", "revision": 2, "scope": SCOPE, "status": "retired"},
    ]
    source = tmp_path / "lessons.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    store = str(tmp_path / "lessons.sqlite3")
    assert main(["lessons", "import", str(source), "--store", store]) == 0
    _journal(tmp_path / "journal")
    return store, str(tmp_path / "journal")


def test_stats_counts_lessons_and_the_last_finished_postmortems(
    seeded: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, journal = seeded
    capsys.readouterr()
    assert main(["lessons", "stats", "--store", store, "--journal", journal, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert [(x["status"], x["count"]) for x in stats["lessons"]] == [("active", 2), ("retired", 1)]
    assert stats["postmortems"] == {"last": 20, "read": 2}
    assert stats["deliveries"] == {"total": 5, "by_lesson": {"L-1": 4, "L-2": 1}}
    assert stats["duplicates_refused"] == {"total": 1, "by_lesson": {"L-1": 1}}
    assert stats["proposals_rejected"] == {"total": 3, "by_kind": {"secret": 2, "duplicate": 1}}


def test_stats_last_reads_only_the_newest_postmortems(
    seeded: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    store, journal = seeded
    capsys.readouterr()
    args = ["lessons", "stats", "--store", store, "--journal", journal, "--json", "--last", "1"]
    assert main(args) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["postmortems"]["read"] == 1
    assert stats["deliveries"]["by_lesson"] == {"L-1": 1}


def test_stats_prints_tables_for_people(
    seeded: tuple[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    store, journal = seeded
    capsys.readouterr()
    assert main(["lessons", "stats", "--store", store, "--journal", journal]) == 0
    out = capsys.readouterr().out
    assert "Lessons per scope" in out and "repo:github.com/acme/api" in out
    assert "duplicates of L-1" in out and "proposals rejected" in out


def test_stats_refuses_a_bad_count_or_a_missing_journal(
    seeded: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, _ = seeded
    with pytest.raises(SystemExit) as exited:
        main(["lessons", "stats", "--store", store, "--last", "0"])
    assert exited.value.code == 2
    missing = str(tmp_path / "nowhere")
    assert main(["lessons", "stats", "--store", store, "--journal", missing]) == 2
    assert "no such journal folder" in capsys.readouterr().err
