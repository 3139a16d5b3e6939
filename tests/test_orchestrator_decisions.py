"""Maintenance decisions through the orchestrator (SPEC §1, §6): a missing, duplicate,
unknown or foreign decision fails only that specialist and publishes nothing of it;
consolidation retires paraphrases into a canonical card with every ID still decided."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import (
    FakeSessions,
    config,
    decisions,
    graph_lessons,
    repo_lessons,
    run_record,
    seed,
    snapshot,
    supplied,
)

from active_memory.lessons import Lesson, Tombstone
from active_memory.orchestrator import PostmortemLimits, run_postmortem
from active_memory.specialists.providers.base import Request
from active_memory.store.sqlite import SqliteStore

GRAPH_CARD = {
    "title": "Lint before finishing",
    "recommendation": "Run `make lint` before you finish; reviewers reject lint errors.",
}


def _missing(answer: dict[str, Any]) -> None:
    answer["decisions"].pop()


def _duplicate(answer: dict[str, Any]) -> None:
    answer["decisions"].append(dict(answer["decisions"][0]))


def _unknown(answer: dict[str, Any]) -> None:
    answer["decisions"].append({"id": "L-999", "revision": 1, "action": "retire"})


def _foreign(answer: dict[str, Any]) -> None:
    answer["decisions"].append({"id": "G-1", "revision": 1, "action": "retire"})


@pytest.mark.parametrize(
    ("spoil", "words"),
    [
        (_missing, "has no decision"),
        (_duplicate, "a second decision"),
        (_unknown, "not supplied to you"),
        (_foreign, "not supplied to you"),
    ],
    ids=["missing", "duplicate", "unknown", "foreign"],
)
@pytest.mark.asyncio
async def test_a_bad_decision_fails_only_that_specialist(
    tmp_path: Path,
    store: SqliteStore,
    spoil: Callable[[dict[str, Any]], None],
    words: str,
) -> None:
    record = run_record(tmp_path, ["L-1", "L-2", "G-1"])
    await seed(store, [*repo_lessons(2), *graph_lessons(record, ["G-1"])])

    async def spoiled(request: Request) -> Any:
        answer = decisions(request, "defer")
        spoil(answer)
        return answer

    async def adapt_graph(request: Request) -> Any:
        return decisions(request, "adapt", lesson=GRAPH_CARD)

    sessions = FakeSessions({"repository_maintenance": spoiled, "graph_maintenance": adapt_graph})
    report = await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    failed = report.specialists["repository_maintenance"]
    assert failed.status == "failed" and words in (failed.reason or "")
    assert failed.decisions is None
    assert report.specialists["graph_maintenance"].status == "reconciled"
    assert report.published.adapted == 1 and report.published.deferred == 0
    for lesson_id in ("L-1", "L-2"):
        lesson = await store.get(lesson_id)
        assert lesson is not None and lesson.revision == 1 and lesson.status == "active"
    graph = await store.get("G-1")
    assert graph is not None and graph.revision == 2
    assert not report.ok


@pytest.mark.asyncio
async def test_a_failed_later_batch_publishes_nothing_of_the_earlier_ones(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(20))
    record = run_record(tmp_path, [f"L-{n}" for n in range(1, 21)])
    asked = 0

    async def second_batch_bad(request: Request) -> Any:
        nonlocal asked
        asked += 1
        answer = decisions(request, "defer")
        if asked in (2, 3):  # the second batch, and its repair turn
            answer["decisions"].pop()
        return answer

    sessions = FakeSessions({"repository_maintenance": second_batch_bad})
    before = await snapshot(store)
    report = await run_postmortem(
        record,
        config(),
        store,
        sessions=sessions,
        limits=PostmortemLimits(batch_bytes=1_500),
        journal_dir=tmp_path,
    )
    entry = report.specialists["repository_maintenance"]
    assert (entry.batches or 0) > 2
    assert entry.status == "failed" and (entry.reason or "").startswith("batch 2 of")
    assert "after one repair turn" in (entry.reason or "")
    assert asked == 3  # the remaining batches are not asked: nothing of them could publish
    assert report.mutations == [] and await snapshot(store) == before


@pytest.mark.asyncio
async def test_consolidation_retires_paraphrases_into_a_canonical_card(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(4))
    record = run_record(tmp_path, ["L-1", "L-2", "L-3"])

    async def consolidate(request: Request) -> Any:
        found = []
        for lesson in supplied(request):
            if lesson["id"] == "L-1":
                found.append({"id": "L-1", "revision": 1, "action": "keep", "reason": "canonical"})
            else:  # L-2 into a card of the batch, L-3 into one outside it (L-4)
                target = "L-1" if lesson["id"] == "L-2" else "L-4"
                found.append(
                    {
                        "id": lesson["id"],
                        "revision": 1,
                        "action": "retire",
                        "reason": "paraphrase",
                        "canonical": target,
                    }
                )
        return {"decisions": found}

    sessions = FakeSessions({"repository_maintenance": consolidate})
    report = await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "reconciled"
    assert {d.id: (d.action, d.canonical) for d in entry.decisions or []} == {
        "L-1": ("keep", None),
        "L-2": ("retire", "L-1"),
        "L-3": ("retire", "L-4"),
    }
    assert report.published.retired == 2 and report.published.kept == 1
    l2, l3 = await store.get("L-2"), await store.get("L-3")
    assert isinstance(l2, Tombstone) and l2.canonical == "L-1" and l2.revision == 2
    assert isinstance(l3, Tombstone) and l3.canonical == "L-4"
    l1 = await store.get("L-1")
    assert isinstance(l1, Lesson) and l1.revision == 1


@pytest.mark.asyncio
async def test_consolidation_into_another_scope_fails_the_specialist(
    tmp_path: Path, store: SqliteStore
) -> None:
    record = run_record(tmp_path, ["L-1", "L-2"])
    await seed(store, [*repo_lessons(2), *graph_lessons(record, ["G-1"])])

    async def across_scopes(request: Request) -> Any:
        return {
            "decisions": [
                {"id": "L-1", "revision": 1, "action": "keep"},
                {"id": "L-2", "revision": 1, "action": "retire", "canonical": "G-1"},
            ]
        }

    sessions = FakeSessions({"repository_maintenance": across_scopes})
    report = await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "failed" and "canonical" in (entry.reason or "")
    l2 = await store.get("L-2")
    assert isinstance(l2, Lesson) and l2.revision == 1
