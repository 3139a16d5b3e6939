"""Builders for the orchestrator tests: runtime configs, run records with deliveries, lessons
in a real store, and fake provider sessions (`FunctionSession`) behind a session factory."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from run_builder import RunBuilder, error, ok, software_change
from specialist_builders import NAMESPACE, with_graph_hash, write_record

from active_memory.config import RuntimeConfig, parse_runtime_settings, resolve_config
from active_memory.lessons import (
    Associations,
    Author,
    GraphScope,
    Lesson,
    RepositoryScope,
)
from active_memory.runlog.graph import Graph
from active_memory.runlog.record import RunRecord
from active_memory.specialists.kinds import SpecialistName
from active_memory.specialists.providers import ProviderSession, Usage
from active_memory.specialists.providers.base import Request
from active_memory.specialists.providers.function import FunctionSession
from active_memory.store.sqlite import SqliteStore

Answer = Callable[[Request], Awaitable[Any]]
PERSON = Author(specialist="person:test")
TURN_USAGE = Usage(input_tokens=100, output_tokens=10, requests=1)


def config(
    *,
    timeout_ms: int = 5_000,
    repository: bool = True,
    graph: bool = True,
    enabled: bool = True,
) -> RuntimeConfig:
    """A runtime config for `software_change()` whose worker is the source node."""
    settings = parse_runtime_settings(
        {
            "harness": "claude",
            "provider": "anthropic",
            "size": "standard",
            "nodes": {"worker": {"kind": "agent", "model": "claude-sonnet-5"}},
            "activeMemory": {"repository": repository, "graph": graph},
            "globalAgents": {"postmortem": {"enabled": enabled, "timeoutMs": timeout_ms}},
        }
    )
    return resolve_config(settings, Graph.from_json(software_change()))


def run_record(
    tmp_path: Path,
    delivered: Sequence[str] | None = (),
    *,
    run_id: str = "run-1",
    timeouts: bool = False,
    checkout: Path | None = None,
    name: str = "run.json",
) -> RunRecord:
    """A software-change run whose worker executed; `delivered` lesson IDs (None: no
    delivery evidence); `timeouts`: two worker timeouts (discovery evidence)."""
    run = RunBuilder(software_change(), run_id=run_id)
    if timeouts:
        first = run.visit("worker", error("timeout"))
        second = run.visit("worker", error("timeout"), attempt=2)
        run.visit("worker", ok(), attempt=3)
        run.completions = {first: "gave up reading the schema", second: "timed out"}
        run.receipt("Read", ["api/schema.json"], 0)
        run.receipt("Grep", ["src"], 2)
        run.receipt("Read", ["src/generated/client.ts"], 6)
    else:
        run.visit("worker", ok())
    data = with_graph_hash(run.build())
    if checkout is not None:
        data["repository"]["checkout"] = str(checkout)
    data["deliveries"] = (
        None
        if delivered is None
        else [{"session": "s-1", "lesson": i, "revision": 1} for i in delivered]
    )
    return write_record(tmp_path, data, name)


def repo_lessons(count: int, *, start: int = 1, pad: int = 0) -> list[Lesson]:
    """`count` repository lessons L-<n> (folder associations: no checkout needed);
    `pad` adds that many bytes to the recommendation of every seventh."""
    found = []
    for n in range(start, start + count):
        extra = "x" * pad if pad and n % 7 == 0 else ""
        found.append(
            Lesson(
                id=f"L-{n}",
                revision=1,
                scope=RepositoryScope(repository=NAMESPACE),
                title=f"Lesson {n} about the api client",
                recommendation=f"After editing `api/schema.json` run `make api-client`. {extra}",
                associations=Associations(folders=["api"]),
            )
        )
    return found


def graph_lessons(record: RunRecord, ids: Sequence[str]) -> list[Lesson]:
    """Graph lessons for the run's worker node."""
    assert record.graph is not None and record.graph.hash is not None
    return [
        Lesson(
            id=lesson_id,
            revision=1,
            scope=GraphScope(graph_hash=record.graph.hash, node="worker"),
            title=f"Graph lesson {lesson_id}",
            recommendation="Run `make lint` before finishing; reviewers reject lint errors.",
        )
        for lesson_id in ids
    ]


async def seed(store: SqliteStore, lessons: Sequence[Lesson]) -> None:
    """Put `lessons` in the store as they are (IDs and revisions kept)."""
    await store.import_lessons(list(lessons), PERSON)


async def snapshot(store: SqliteStore) -> list[Any]:
    """Everything the store holds, tombstones included, for before/after comparisons."""
    from active_memory.store import LessonQuery

    return [x.model_dump() for x in await store.select(LessonQuery(include_retired=True))]


def task_of(request: Request) -> dict[str, Any]:
    """The specialist's task a request asks about: its input, or for a repair turn the
    first input it carries under `task` (providers/repair.py)."""
    assert isinstance(request.input, dict)
    task = request.input["task"] if request.repair_of is not None else request.input
    assert isinstance(task, dict)
    return task


def supplied(request: Request) -> list[dict[str, Any]]:
    """The lessons a maintenance request supplied (its task's `lessons`)."""
    lessons = task_of(request)["lessons"]
    assert isinstance(lessons, list)
    return lessons


def evidence_ids(request: Request) -> list[str]:
    """The evidence IDs a discovery request offers."""
    items = task_of(request)["evidence"]
    assert isinstance(items, list)
    return [str(item["id"]) for item in items if isinstance(item, dict)]


def decisions(request: Request, action: str = "keep", **extra: Any) -> dict[str, Any]:
    """One `action` decision per supplied lesson."""
    return {
        "decisions": [
            {"id": x["id"], "revision": x["revision"], "action": action, "reason": "r", **extra}
            for x in supplied(request)
        ]
    }


async def keep_all(request: Request) -> Any:
    return decisions(request, "keep")


async def no_lessons(request: Request) -> Any:
    return {"lessons": []}


async def hang(request: Request) -> Any:
    await anyio.sleep_forever()


class FakeSessions:
    """A session factory of `FunctionSession`s; unlisted specialists keep / propose nothing."""

    def __init__(self, answers: dict[str, Answer] | None = None, *, latency: float = 0.0) -> None:
        self.answers = answers or {}
        self.latency = latency
        self.opened: list[str] = []
        self.requests: list[Request] = []

    def __call__(self, specialist: SpecialistName, *, deadline: float) -> ProviderSession:
        self.opened.append(specialist)
        default = keep_all if "maintenance" in specialist else no_lessons
        function = self.answers.get(specialist, default)

        async def answer(request: Request) -> Any:
            self.requests.append(request)
            if self.latency:
                await anyio.sleep(self.latency)
            return await function(request)

        return FunctionSession(
            specialist, answer, model="fake-model", deadline=deadline, usage_per_turn=TURN_USAGE
        )
