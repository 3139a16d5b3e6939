"""A refused near-duplicate becomes an adaptation candidate of the lesson it repeats:
stored by the postmortem (never in a dry run), shown to the next maintenance task for
that lesson, and consumed by the decision published on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import FakeSessions, config, evidence_ids, run_record, supplied

from active_memory.lessons import Associations, Author, GraphScope, Lesson
from active_memory.orchestrator import run_postmortem
from active_memory.runlog.record import RunRecord
from active_memory.specialists.providers.base import Request
from active_memory.store.sqlite import SqliteStore

PROPOSED = "Read the schema before the generated client"


async def _repeating_proposal(request: Request) -> Any:
    return {
        "lessons": [
            {
                "title": PROPOSED,
                "recommendation": "Open `api/schema.json` first; `make api-client` rebuilds it.",
                "associations": {"files": ["api/schema.json"]},
                "evidence": evidence_ids(request),
                "citations": [],
                "why_recurs": "the worker timed out twice reading generated code",
                "node": "worker",
            }
        ]
    }


async def _seed(store: SqliteStore, record: RunRecord) -> None:
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


@pytest.mark.asyncio
async def test_a_duplicate_refused_in_one_run_reaches_the_next_maintenance_of_its_lesson(
    tmp_path: Path, store: SqliteStore
) -> None:
    first = run_record(tmp_path, [], run_id="run-1", timeouts=True, name="run-1.json")
    await _seed(store, first)
    sessions = FakeSessions({"graph_discovery": _repeating_proposal})
    report = await run_postmortem(first, config(), store, sessions=sessions, journal_dir=tmp_path)
    [rejected] = report.specialists["graph_discovery"].rejected or []
    assert rejected.duplicate_of == "L-40" and report.published.created == 0
    [stored] = (await store.candidates(["L-40"]))["L-40"]
    assert (stored.run_id, stored.specialist, stored.title) == (
        "run-1",
        "graph_discovery",
        PROPOSED,
    )
    assert stored.score > 60

    second = run_record(tmp_path, ["L-40"], run_id="run-2", name="run-2.json")
    sessions = FakeSessions()
    report = await run_postmortem(second, config(), store, sessions=sessions, journal_dir=tmp_path)
    [task] = [r for r in sessions.requests if r.specialist == "graph_maintenance"]
    [lesson] = supplied(task)
    assert lesson["id"] == "L-40"
    assert [(c["run_id"], c["title"]) for c in lesson["candidates"]] == [("run-1", PROPOSED)]
    assert any("Adaptation candidates" in m.content for m in task.messages) or (
        task.system is not None and "Adaptation candidates" in task.system
    )
    # The keep decision published on L-40 consumed the candidate it was shown.
    assert report.published.kept == 1
    assert await store.candidates(["L-40"]) == {}


@pytest.mark.asyncio
async def test_an_adapt_decision_consumes_the_candidates_and_a_lesson_without_any_shows_none(
    tmp_path: Path, store: SqliteStore
) -> None:
    first = run_record(tmp_path, [], run_id="run-1", timeouts=True, name="run-1.json")
    await _seed(store, first)
    sessions = FakeSessions({"graph_discovery": _repeating_proposal})
    await run_postmortem(first, config(), store, sessions=sessions, journal_dir=tmp_path)

    async def adapt(request: Request) -> Any:
        [lesson] = supplied(request)
        merged = {
            "title": PROPOSED,
            "recommendation": lesson["recommendation"],
            "associations": lesson["associations"],
        }
        decision = {"id": lesson["id"], "revision": lesson["revision"], "action": "adapt"}
        return {"decisions": [{**decision, "reason": "merged", "lesson": merged}]}

    second = run_record(tmp_path, ["L-40"], run_id="run-2", name="run-2.json")
    sessions = FakeSessions({"graph_maintenance": adapt})
    report = await run_postmortem(second, config(), store, sessions=sessions, journal_dir=tmp_path)
    assert report.published.adapted == 1
    assert await store.candidates(["L-40"]) == {}
    adapted = await store.get("L-40")
    assert adapted is not None and adapted.revision == 2

    third = run_record(tmp_path, ["L-40"], run_id="run-3", name="run-3.json")
    sessions = FakeSessions()
    await run_postmortem(third, config(), store, sessions=sessions, journal_dir=tmp_path)
    [task] = [r for r in sessions.requests if r.specialist == "graph_maintenance"]
    assert supplied(task)[0]["candidates"] == []


@pytest.mark.asyncio
async def test_a_dry_run_stores_no_candidate(tmp_path: Path, store: SqliteStore) -> None:
    record = run_record(tmp_path, [], run_id="run-1", timeouts=True)
    await _seed(store, record)
    sessions = FakeSessions({"graph_discovery": _repeating_proposal})
    report = await run_postmortem(
        record, config(), store, sessions=sessions, journal_dir=tmp_path, dry_run=True
    )
    assert (report.specialists["graph_discovery"].rejected or [])[0].duplicate_of == "L-40"
    assert await store.candidates(["L-40"]) == {}


@pytest.mark.asyncio
async def test_a_failed_maintenance_consumes_no_candidate(
    tmp_path: Path, store: SqliteStore
) -> None:
    first = run_record(tmp_path, [], run_id="run-1", timeouts=True, name="run-1.json")
    await _seed(store, first)
    sessions = FakeSessions({"graph_discovery": _repeating_proposal})
    await run_postmortem(first, config(), store, sessions=sessions, journal_dir=tmp_path)

    async def decide_nothing(request: Request) -> Any:
        return {"decisions": []}

    second = run_record(tmp_path, ["L-40"], run_id="run-2", name="run-2.json")
    sessions = FakeSessions({"graph_maintenance": decide_nothing})
    report = await run_postmortem(second, config(), store, sessions=sessions, journal_dir=tmp_path)
    assert report.specialists["graph_maintenance"].status == "failed"
    assert [c.run_id for c in (await store.candidates(["L-40"]))["L-40"]] == ["run-1"]
