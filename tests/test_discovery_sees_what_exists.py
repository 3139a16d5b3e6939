"""Discovery sees what exists (issue 25, item 6): the active lessons of its scope with
their recommendations and associations, bounded; the ones this run delivered first, with
when each was delivered relative to the run's failures (failed tool calls, timed-out or
crashed executions), so that a delivered card that did not prevent a failure, or led
into it, can be corrected with `adapts`."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import FakeSessions, config, seed
from run_builder import T0, RunBuilder, error, ok, software_change
from specialist_builders import graph_lesson, make_repo, repo_lesson, with_graph_hash, write_record

from active_memory.checkout import Checkout
from active_memory.lessons import Lesson
from active_memory.orchestrator import run_postmortem
from active_memory.runlog.record import RunRecord
from active_memory.specialists.providers.base import Request
from active_memory.specialists.tasks import TaskLimits, build_discovery
from active_memory.store.sqlite import SqliteStore

SQLITE_ONLY = True


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


def failed(minutes: float, command: str, family: str) -> dict[str, Any]:
    """One failed call, shaped as SPEC §3 `tool_failures`."""
    return {
        "node": "worker", "execution": "ex-1", "tool": "Bash", "at": at(minutes),
        "command": command, "family": family, "cwd": "", "exit_code": 1,
        "error": "failed", "paths": [],
    }  # fmt: skip


def delivered(lesson: str, minutes: float | None, session: str = "s-1") -> dict[str, Any]:
    found: dict[str, Any] = {"session": session, "lesson": lesson, "revision": 1}
    if minutes is not None:
        found["at"] = at(minutes)
    return found


def record_of(tmp_path: Path, repo: Path, *, timeouts: bool = False, **extra: Any) -> RunRecord:
    run = RunBuilder(software_change())
    if timeouts:
        run.visit("worker", error("timeout"))
        run.visit("worker", error("timeout"), attempt=2)
    run.visit("worker", ok(), attempt=3 if timeouts else 1)
    for minute, path in enumerate(["api/schema.json", "src", "src/generated/client.ts"]):
        run.receipt("Read", [path], minute * 3)
    data = with_graph_hash(run.build())
    data["repository"]["checkout"] = str(repo)
    data.update(extra)
    return write_record(tmp_path, data)


def lessons() -> list[Lesson]:
    found = [repo_lesson(f"L-{n}", files=("docs/none.md",)) for n in range(1, 7)]
    return [
        x.model_copy(update={"recommendation": f"Run `make check-{x.id.lower()}` first."})
        for x in found
    ]


def test_discovery_sees_each_lessons_recommendation_and_associations(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    record = record_of(tmp_path, repo)
    living = lessons()
    task = build_discovery("repository_discovery", record, checkout=Checkout(repo), living=living)
    shown = {x.id: x for x in task.lessons}
    assert set(shown) == {x.id for x in living}
    for lesson in living:
        assert shown[lesson.id].recommendation == lesson.recommendation
        assert shown[lesson.id].associations == lesson.associations
        assert shown[lesson.id].deliveries == ()
    assert "deliveries" not in task.to_json()["lessons"][0]  # none: not in the task


def test_delivered_lessons_come_first_placed_among_the_runs_failures(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    record = record_of(
        tmp_path,
        repo,
        deliveries=[
            delivered("L-5", 10),
            delivered("L-3", 2),
            delivered("L-3", 11, session="s-2"),
            delivered("L-6", None),  # a delivery without a time cannot be placed
            delivered("L-99", 1),  # not a lesson of the scope: nothing to show
        ],
        tool_failures=[
            failed(5, "mix test", "mix test"),
            failed(12, "git push", "git push"),
            failed(13, "mix test test/app_test.exs", "mix test"),
        ],
    )
    task = build_discovery(
        "repository_discovery", record, checkout=Checkout(repo), living=lessons()
    )
    assert [x.id for x in task.lessons] == ["L-3", "L-5", "L-6", "L-1", "L-2", "L-4"]
    first, second = task.lessons[0].deliveries
    assert (first.session, first.at) == ("s-1", at(2))
    assert (first.failures_before, first.failures_after) == (0, 3)
    assert first.failed_after == ("mix test", "git push")
    assert (second.session, second.failures_before, second.failures_after) == ("s-2", 1, 2)
    [late] = task.lessons[1].deliveries
    assert (late.failures_before, late.failures_after, late.failed_after) == (
        1,
        2,
        ("git push", "mix test"),
    )
    [untimed] = task.lessons[2].deliveries
    assert untimed.at is None and untimed.failures_before is None and untimed.failed_after == ()
    data = task.to_json()["lessons"][0]["deliveries"][0]
    assert data["failed_after"] == ["mix test", "git push"] and data["failures_after"] == 3


def test_timeouts_and_crashes_are_failures_a_delivery_is_placed_among(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    # RunBuilder's events are a second apart from T0: both timeouts settle after 0 minutes.
    record = record_of(
        tmp_path, repo, timeouts=True, deliveries=[delivered("L-1", 0), delivered("L-2", 1)]
    )
    task = build_discovery(
        "repository_discovery", record, checkout=Checkout(repo), living=lessons()
    )
    by_id = {x.id: x for x in task.lessons}
    [early] = by_id["L-1"].deliveries
    assert early.failures_after == 2 and early.failed_after == ("timeout worker",)
    [late] = by_id["L-2"].deliveries
    assert (late.failures_before, late.failures_after, late.failed_after) == (2, 0, ())


def test_the_scope_lessons_are_bounded_the_delivered_ones_kept_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    record = record_of(tmp_path, repo, deliveries=[delivered("L-40", 3)])
    living = [
        repo_lesson(f"L-{n:02d}", files=("docs/none.md",)).model_copy(
            update={"recommendation": f"Run `make target-{n}`. " + "Then check it. " * 20}
        )
        for n in range(1, 41)
    ]
    limits = TaskLimits(scope_lessons_bytes=4_000)
    task = build_discovery(
        "repository_discovery", record, checkout=Checkout(repo), living=living, limits=limits
    )
    shown = [x.id for x in task.lessons]
    assert shown[0] == "L-40" and 2 <= len(shown) < 40
    assert task.lessons_omitted == 40 - len(shown)
    assert task.to_json()["lessons_omitted"] == 40 - len(shown)
    size = sum(len(x.model_dump_json().encode()) + 1 for x in task.lessons)
    assert size <= 4_000
    everything = build_discovery(
        "repository_discovery", record, checkout=Checkout(repo), living=living
    )
    assert everything.lessons_omitted == 0 and "lessons_omitted" not in everything.to_json()


def test_graph_discovery_sees_the_graph_lessons_the_run_delivered(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    record = record_of(tmp_path, repo, timeouts=True)
    assert record.graph is not None and record.graph.hash is not None
    graph_hash = record.graph.hash
    record = record_of(
        tmp_path, repo, timeouts=True, deliveries=[delivered("G-2", 0, session="s-worker-1")]
    )
    living = [graph_lesson("G-1", graph=graph_hash), graph_lesson("G-2", graph=graph_hash)]
    task = build_discovery("graph_discovery", record, living=living)
    assert [x.id for x in task.lessons] == ["G-2", "G-1"]
    assert task.lessons[0].recommendation == living[1].recommendation
    assert task.lessons[0].deliveries[0].failed_after == ("timeout worker",)


@pytest.mark.asyncio
async def test_the_postmortem_gives_discovery_the_delivered_lessons_and_their_failures(
    tmp_path: Path, store: SqliteStore
) -> None:
    repo = make_repo(tmp_path)
    await seed(store, lessons())
    record = record_of(
        tmp_path,
        repo,
        deliveries=[delivered("L-4", 1)],
        tool_failures=[failed(4, "make api-client", "make api-client")],
    )
    sessions = FakeSessions()
    await run_postmortem(
        record,
        config(timeout_ms=60_000),
        store,
        checkout=Checkout(repo),
        sessions=sessions,
        journal_dir=tmp_path,
        dry_run=True,
    )
    [asked] = [r for r in sessions.requests if r.specialist == "repository_discovery"]
    assert isinstance(asked, Request)
    task: Any = asked.input
    first = task["lessons"][0]
    assert first["id"] == "L-4" and first["recommendation"] == "Run `make check-l-4` first."
    assert first["deliveries"][0]["failed_after"] == ["make api-client"]
