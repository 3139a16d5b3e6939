"""`defer` that comes back (SPEC §9, 2026-12): a deferred lesson is offered to the next
maintenance of its scope whatever the deliveries, with its deferral reason and age, and
can be kept (reactivated), adapted or retired; `lessons list --deferred` shows it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from orchestrator_support import FakeSessions, config, decisions, repo_lessons, run_record, seed

from active_memory.cli import main
from active_memory.lessons import Lesson, Tombstone
from active_memory.orchestrator import run_postmortem
from active_memory.specialists.providers.base import Request
from active_memory.store import open_store
from active_memory.store.sqlite import SqliteStore

SQLITE_ONLY = True  # the CLI half reads a store file
REASON = "the schema file was omitted from the task; cannot tell whether it still applies"


async def _defer_l2(tmp_path: Path, store: Any) -> None:
    """A first postmortem that delivers L-1 and L-2 and defers L-2."""
    await seed(store, repo_lessons(2))

    async def defer_l2(request: Request) -> Any:
        answer = decisions(request, "keep")
        for decision in answer["decisions"]:
            if decision["id"] == "L-2":
                decision.update(action="defer", reason=REASON)
        return answer

    sessions = FakeSessions({"repository_maintenance": defer_l2})
    first = run_record(tmp_path, ["L-1", "L-2"], run_id="run-1", name="first.json")
    await run_postmortem(first, config(), store, sessions=sessions, journal_dir=tmp_path)
    deferred = await store.get("L-2")
    assert isinstance(deferred, Lesson) and deferred.status == "deferred"


def _lessons(request: Request) -> list[Any]:
    assert isinstance(request.input, dict)
    lessons = request.input["lessons"]
    assert isinstance(lessons, list)
    return lessons


@pytest.mark.asyncio
@pytest.mark.parametrize("delivered", [[], None], ids=["nothing-delivered", "no-evidence"])
async def test_a_deferred_lesson_comes_back_without_a_delivery_with_its_reason(
    tmp_path: Path, store: SqliteStore, delivered: list[str] | None
) -> None:
    await _defer_l2(tmp_path, store)
    sessions = FakeSessions()
    second = run_record(tmp_path, delivered, run_id="run-2", name="second.json")
    report = await run_postmortem(second, config(), store, sessions=sessions, dry_run=True)
    entry = report.specialists["repository_maintenance"]
    assert entry.status == "reconciled" and entry.manifest == 1
    [request] = [r for r in sessions.requests if r.specialist == "repository_maintenance"]
    [offered] = _lessons(request)
    assert offered["id"] == "L-2" and offered["status"] == "deferred"
    assert offered["deliveries"] == []
    assert offered["deferral"]["reason"] == REASON
    assert offered["deferral"]["deferred_at"] is not None
    prompt = " ".join(request.messages[0].content.split())
    assert "`defer`: the lesson becomes inactive" in prompt and "`retire` it instead" in prompt


@pytest.mark.asyncio
async def test_without_delivery_evidence_and_nothing_deferred_maintenance_abstains(
    tmp_path: Path, store: SqliteStore
) -> None:
    await seed(store, repo_lessons(2))
    record = run_record(tmp_path, None)
    report = await run_postmortem(record, config(), store, sessions=FakeSessions(), dry_run=True)
    assert report.specialists["repository_maintenance"].status == "abstained"


@pytest.mark.asyncio
@pytest.mark.parametrize("action", ["keep", "adapt", "retire"])
async def test_a_deferred_lesson_can_be_kept_adapted_or_retired(
    tmp_path: Path, store: SqliteStore, action: str
) -> None:
    await _defer_l2(tmp_path, store)

    async def decide(request: Request) -> Any:
        answer = decisions(request, action)
        if action == "adapt":
            answer["decisions"][0]["lesson"] = {
                "title": "Regenerate the client after schema edits",
                "recommendation": "After editing `api/schema.json` run `make api-client`.",
                "associations": {"folders": ["api"]},
            }
        return answer

    sessions = FakeSessions({"repository_maintenance": decide})
    second = run_record(tmp_path, [], run_id="run-2", name="second.json")
    report = await run_postmortem(second, config(), store, sessions=sessions, journal_dir=tmp_path)
    assert report.specialists["repository_maintenance"].status == "reconciled"
    after = await store.get("L-2")
    if action == "retire":
        assert isinstance(after, Tombstone)
        return
    assert isinstance(after, Lesson) and after.status == "active" and after.revision == 3
    if action == "keep":  # reactivated, card unchanged
        assert after.title == repo_lessons(2)[1].title
    else:
        assert after.title == "Regenerate the client after schema edits"
    # Active again: the next run without a delivery does not offer it.
    third = run_record(tmp_path, [], run_id="run-3", name="third.json")
    again = await run_postmortem(third, config(), store, sessions=FakeSessions(), dry_run=True)
    assert again.specialists["repository_maintenance"].manifest == 0


def test_lessons_list_deferred_shows_the_reason_and_who_deferred(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    location = str(tmp_path / "lessons.sqlite3")

    async def setup() -> None:
        async with open_store(location, create=True) as store:
            await _defer_l2(tmp_path, store)

    anyio.run(setup)
    capsys.readouterr()
    assert main(["lessons", "list", "--deferred", "--store", location, "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["lessons"]
    assert row["id"] == "L-2" and row["deferral"]["reason"] == REASON
    assert row["deferral"]["by"]["specialist"] == "repository_maintenance"
    assert row["deferral"]["by"]["run_id"] == "run-1" and row["deferral"]["age_days"] == 0
    assert main(["lessons", "list", "--deferred", "--store", location]) == 0
    table = capsys.readouterr().out
    assert "L-2" in table and "L-1" not in table
