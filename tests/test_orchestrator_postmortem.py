"""The postmortem end to end: scopes, abstention, reconciliation, discovery, dry runs and
the report (SPEC §1, §2, §6, §7, §10), with fake sessions and a real SQLite store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import (
    FakeSessions,
    config,
    decisions,
    evidence_ids,
    graph_lessons,
    repo_lessons,
    run_record,
    seed,
    snapshot,
    supplied,
)

from active_memory.errors import ConfigError
from active_memory.lessons import Lesson
from active_memory.orchestrator import (
    PostmortemLimits,
    ProgressEvent,
    config_from_record,
    open_checkout,
    run_postmortem,
)
from active_memory.specialists.providers.base import Request
from active_memory.store.sqlite import SqliteStore

ADAPTED = {
    "title": "Regenerate the api client after schema edits",
    "recommendation": "After editing `api/schema.json` run `make api-client` and commit both.",
    "associations": {"folders": ["api"]},
}


async def adapt_all(request: Request) -> Any:
    return decisions(request, "adapt", lesson=ADAPTED)


async def graph_proposal(request: Request) -> Any:
    evidence = evidence_ids(request)
    return {
        "lessons": [
            {
                "title": "Read the schema before the generated client",
                "recommendation": "Open `api/schema.json` first; `make api-client` rebuilds it.",
                "associations": {"files": ["api/schema.json"]},
                "evidence": evidence,
                "citations": [],
                "why_recurs": "the worker timed out twice reading generated code",
                "node": "worker",
            }
        ]
    }


@pytest.mark.asyncio
async def test_keep_decisions_reconcile_and_publish_nothing(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(5))
    record = run_record(tmp_path, ["L-1", "L-2", "L-3"])
    before = await snapshot(store)
    report = await run_postmortem(
        record, config(), store, sessions=FakeSessions(), journal_dir=tmp_path / "j"
    )
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "reconciled"
    assert entry.manifest == 3 and entry.kept == 3
    assert [d.id for d in entry.decisions or []] == ["L-1", "L-2", "L-3"]
    assert report.published.kept == 3 and report.published.adapted == 0
    assert report.ok
    assert await snapshot(store) == before


@pytest.mark.asyncio
async def test_adaptations_publish_as_new_revisions(tmp_path: Path, store: SqliteStore) -> None:
    await seed(store, repo_lessons(3))
    record = run_record(tmp_path, ["L-1", "L-2"])
    sessions = FakeSessions({"repository_maintenance": adapt_all})
    report = await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    assert report.published.adapted == 2
    assert [(m.id, m.revision) for m in report.mutations] == [("L-1", 2), ("L-2", 2)]
    lesson = await store.get("L-1")
    assert lesson is not None and lesson.revision == 2
    assert isinstance(lesson, Lesson) and lesson.title == ADAPTED["title"]
    untouched = await store.get("L-3")
    assert untouched is not None and untouched.revision == 1


@pytest.mark.asyncio
async def test_dry_run_reports_what_would_be_published_and_writes_nothing(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(3))
    record = run_record(tmp_path, ["L-1", "L-2"], timeouts=True)
    sessions = FakeSessions(
        {"repository_maintenance": adapt_all, "graph_discovery": graph_proposal}
    )
    before = await snapshot(store)
    journal = tmp_path / "journal"
    report = await run_postmortem(
        record, config(), store, sessions=sessions, dry_run=True, journal_dir=journal
    )
    assert report.dry_run
    assert report.published.adapted == 2 and report.published.created == 1
    creates = [m for m in report.mutations if m.action == "create"]
    assert len(creates) == 1 and creates[0].id is None and creates[0].revision is None
    assert await snapshot(store) == before
    assert not journal.exists()
    assert report.to_json()["dry_run"] is True


@pytest.mark.asyncio
async def test_graph_discovery_creates_a_lesson_for_the_failing_node(
    tmp_path: Path, store: SqliteStore
) -> None:
    record = run_record(tmp_path, [], timeouts=True)
    sessions = FakeSessions({"graph_discovery": graph_proposal})
    report = await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    entry = report.specialists["graph_discovery"]
    assert entry.status == "reconciled" and entry.proposals == 1
    assert [a.title for a in entry.accepted or []] == [
        "Read the schema before the generated client"
    ]
    assert report.published.created == 1
    created = report.mutations[0]
    assert created.id is not None
    lesson = await store.get(created.id)
    assert lesson is not None and lesson.scope.kind == "graph"


@pytest.mark.asyncio
async def test_discovery_without_qualifying_evidence_asks_no_model(
    tmp_path: Path, store: SqliteStore
) -> None:
    record = run_record(tmp_path, [])
    sessions = FakeSessions()
    report = await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    assert report.specialists["graph_discovery"].status == "reconciled"
    assert report.specialists["graph_discovery"].proposals is None
    assert "graph_discovery" not in sessions.opened
    assert sessions.opened == []  # an empty manifest needs no session either


@pytest.mark.asyncio
async def test_maintenance_abstains_without_delivery_evidence(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(2))
    record = run_record(tmp_path, None, timeouts=True)
    sessions = FakeSessions()
    report = await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    for name in ("graph_maintenance", "repository_maintenance"):
        assert report.specialists[name].status == "abstained"
        assert "deliveries" in (report.specialists[name].reason or "")
    assert "repository_maintenance" not in sessions.opened
    assert report.specialists["repository_discovery"].status == "reconciled"


@pytest.mark.asyncio
async def test_a_disabled_scope_reports_its_specialists_disabled(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(2))
    record = run_record(tmp_path, ["L-1"], timeouts=True)
    sessions = FakeSessions()
    report = await run_postmortem(
        record, config(repository=False), store, sessions=sessions, journal_dir=tmp_path
    )
    for name in ("repository_maintenance", "repository_discovery"):
        assert report.specialists[name].status == "disabled"
        assert report.specialists[name].reason == "activeMemory.repository is false"
    assert sorted(sessions.opened) == ["graph_discovery"]
    assert report.specialists["graph_maintenance"].status == "reconciled"


@pytest.mark.asyncio
async def test_postmortem_disabled_runs_no_specialist(tmp_path: Path, store: SqliteStore) -> None:
    record = run_record(tmp_path, [], timeouts=True)
    sessions = FakeSessions()
    journal = tmp_path / "journal"
    report = await run_postmortem(
        record, config(enabled=False), store, sessions=sessions, journal_dir=journal
    )
    assert {e.status for e in report.specialists.values()} == {"disabled"}
    assert sessions.opened == []
    assert not journal.exists()


@pytest.mark.asyncio
async def test_graph_maintenance_judges_only_graph_lessons_of_executed_nodes(
    tmp_path: Path, store: SqliteStore
) -> None:
    record = run_record(tmp_path, ["G-1", "L-1"])
    await seed(store, [*graph_lessons(record, ["G-1"]), *repo_lessons(1)])
    sessions = FakeSessions()
    report = await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    seen = {
        request.specialist: [x["id"] for x in supplied(request)] for request in sessions.requests
    }
    assert seen == {"graph_maintenance": ["G-1"], "repository_maintenance": ["L-1"]}
    assert report.specialists["graph_maintenance"].kept == 1


@pytest.mark.asyncio
async def test_report_json_has_the_spec_fields_and_usage_totals(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(2))
    record = run_record(tmp_path, ["L-1"], timeouts=True)
    report = await run_postmortem(
        record, config(), store, sessions=FakeSessions(), journal_dir=tmp_path
    )
    data = report.to_json()
    assert {"run_id", "outcome", "dry_run", "specialists", "published", "conflicts"} <= set(data)
    assert list(data["specialists"]) == [
        "graph_maintenance",
        "repository_maintenance",
        "graph_discovery",
        "repository_discovery",
    ]
    assert set(data["published"]) == {
        "created",
        "adapted",
        "retired",
        "deferred",
        "kept",
        "proposed",
    }
    asked = [e.usage.requests for e in report.specialists.values()]
    assert sum(asked) == report.usage.requests == 3  # repository maintenance + 2 discovery
    assert report.usage.input_tokens == 300 and report.usage.complete
    assert data["specialists"]["repository_maintenance"]["usage"]["input_tokens"] == 100


@pytest.mark.asyncio
async def test_progress_events_follow_each_specialist_and_a_broken_callback_is_harmless(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(30))
    record = run_record(tmp_path, [f"L-{n}" for n in range(1, 31)])
    events: list[ProgressEvent] = []

    def progress(event: ProgressEvent) -> None:
        events.append(event)
        raise RuntimeError("a display that breaks")

    report = await run_postmortem(
        record,
        config(),
        store,
        sessions=FakeSessions({"repository_maintenance": adapt_all}),
        progress=progress,
        limits=PostmortemLimits(batch_bytes=2_000),
        journal_dir=tmp_path,
    )
    assert report.ok
    batches = [e for e in events if e.stage == "batch"]
    total = report.specialists["repository_maintenance"].batches
    assert [e.done for e in batches] == list(range(1, (total or 0) + 1))
    assert {e.total for e in batches} == {total}
    finished = {e.specialist: e.detail for e in events if e.stage == "finished"}
    assert finished["repository_maintenance"] == "reconciled"
    assert [e.stage for e in events][-2:] == ["publishing", "published"]


def test_config_from_record_resolves_the_run_s_own_plan(tmp_path: Path) -> None:
    record = run_record(tmp_path, [])
    runtime = {
        "harness": "codex",
        "provider": "openai",
        "size": "small",
        "nodes": {"worker": {"kind": "agent", "model": "gpt-5", "effort": "high"}},
    }
    resolved = config_from_record(record.model_copy(update={"runtime": runtime}))
    assert resolved.lane is not None
    assert (resolved.lane.harness, resolved.lane.model, resolved.lane.source_node) == (
        "codex",
        "gpt-5",
        "worker",
    )
    with pytest.raises(ConfigError, match="runtime"):
        config_from_record(record.model_copy(update={"runtime": None}))


def test_open_checkout_is_none_for_a_folder_outside_git(tmp_path: Path) -> None:
    record = run_record(tmp_path, [], checkout=tmp_path)
    assert open_checkout(record) is None
