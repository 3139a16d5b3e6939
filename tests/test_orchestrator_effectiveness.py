"""The postmortem adds the run's effectiveness observations in its one publish."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import (
    FakeSessions,
    config,
    decisions,
    keep_all,
    repo_lessons,
    run_record,
    seed,
    supplied,
)

from active_memory.orchestrator import run_postmortem
from active_memory.specialists.providers.base import Request


@pytest.mark.asyncio
async def test_a_postmortem_counts_a_delivered_and_a_touched_lesson(
    tmp_path: Path, store: Any
) -> None:
    await seed(store, repo_lessons(2))
    # L-1 was delivered; L-2 (same folder `api`) was touched through api/schema.json only.
    record = run_record(tmp_path, ["L-1"], timeouts=True)
    sessions = FakeSessions({"repository_maintenance": keep_all})
    await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    counters = await store.effectiveness(["L-1", "L-2"])
    assert (counters["L-1"].runs_delivered, counters["L-1"].runs_touched_not_delivered) == (1, 0)
    assert (counters["L-2"].runs_delivered, counters["L-2"].runs_touched_not_delivered) == (0, 1)
    assert counters["L-1"].last_run_id == counters["L-2"].last_run_id == "run-1"


@pytest.mark.asyncio
async def test_a_dry_run_postmortem_counts_nothing(tmp_path: Path, store: Any) -> None:
    await seed(store, repo_lessons(2))
    record = run_record(tmp_path, ["L-1"], timeouts=True)
    sessions = FakeSessions({"repository_maintenance": keep_all})
    await run_postmortem(
        record, config(), store, sessions=sessions, journal_dir=tmp_path, dry_run=True
    )
    assert await store.effectiveness(["L-1", "L-2"]) == {}


@pytest.mark.asyncio
async def test_a_record_without_delivery_evidence_counts_nothing(
    tmp_path: Path, store: Any
) -> None:
    await seed(store, repo_lessons(2))
    record = run_record(tmp_path, None, timeouts=True)
    sessions = FakeSessions({"repository_maintenance": keep_all})
    await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    assert await store.effectiveness(["L-1", "L-2"]) == {}


@pytest.mark.asyncio
async def test_maintenance_judges_a_lesson_with_the_counters_of_earlier_runs(
    tmp_path: Path, store: Any
) -> None:
    await seed(store, repo_lessons(1))
    seen: list[dict[str, Any]] = []

    async def remember(request: Request) -> Any:
        seen.extend(supplied(request))
        return decisions(request, "keep")

    sessions = FakeSessions({"repository_maintenance": remember})
    for run_id in ("run-1", "run-2"):
        record = run_record(tmp_path, ["L-1"], run_id=run_id, name=f"{run_id}.json")
        await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    first, second = (lesson["effectiveness"] for lesson in seen)
    assert first["runs_delivered"] == 0 and first["last_run_id"] is None
    assert second["runs_delivered"] == 1 and second["last_run_id"] == "run-1"
