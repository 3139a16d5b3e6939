"""Benchmark of the postmortem orchestrator, with baselines measured in the same run.

Run: `.venv/bin/python bench/orchestrator_bench.py` (options: --latency S, --lessons N,
--repeat N).

1. Concurrency: every specialist's fake provider answers after a fixed latency (a
   different one per specialist). Each specialist is timed alone (the other three answer
   at once), then all four together: the ratio of "all four" to "the slowest alone"
   should be at most 1.15, far from the sum.
2. Overhead: a manifest of N (10,000) repository lessons through an instant fake provider,
   end to end (freeze, batches, tasks, checks, one publish), keep-all (nothing to publish)
   and adapt-all (N adaptations in one transaction). Baselines from the same run: reading
   the N lessons from the store, and publishing the same N adaptations directly.

Fake providers are `FunctionSession`s: the same ask loop as every real lane.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

from active_memory.config import RuntimeConfig, parse_runtime_settings, resolve_config
from active_memory.lessons import (
    AdaptLesson,
    Associations,
    Author,
    Card,
    GraphScope,
    Lesson,
    RepositoryScope,
)
from active_memory.orchestrator import (
    DEFAULT_BATCH_BYTES,
    PostmortemLimits,
    PostmortemReport,
    run_postmortem,
)
from active_memory.runlog.canonical import graph_hash
from active_memory.runlog.graph import Graph
from active_memory.runlog.record import RunRecord, parse_run_record
from active_memory.specialists.kinds import SPECIALISTS, SpecialistName
from active_memory.specialists.providers import ProviderSession, Usage
from active_memory.specialists.providers.base import Request
from active_memory.specialists.providers.function import FunctionSession
from active_memory.store import LessonQuery
from active_memory.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE = "repo:github.com/acme/bench"
PERSON = Author(specialist="person:bench")
T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def card(lesson_id: str) -> dict[str, Any]:
    """The adapted card of `lesson_id`: its own text (a check cannot have seen it before)."""
    return {
        "title": f"Regenerate the api client after schema edits ({lesson_id})",
        "recommendation": (
            f"After editing `api/schema.json` run `make api-client` and commit both ({lesson_id})."
        ),
        "associations": {"folders": ["api"]},
    }


Answer = Callable[[Request], Awaitable[Any]]


# --- the run and its lessons ---------------------------------------------------------


def graph_json() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ROOT / "software-change.graph.json").read_text())
    return data


def record(lesson_ids: list[str]) -> RunRecord:
    """A run whose worker timed out twice (discovery evidence) and that delivered the ids."""
    events: list[dict[str, Any]] = [{"kind": "run_started"}]
    for n, code in enumerate(("timeout", "timeout", None), start=1):
        ref = {
            "runId": "run-b",
            "node": "worker",
            "nodeInstance": f"ex-{n}",
            "execution": f"ex-{n}",
        }
        events.append(
            {
                "kind": "node_started",
                "reference": ref,
                "occurrence": {"node": "worker", "mapIndices": []},
                "attempt": n,
                "input": None,
            }
        )
        outcome: dict[str, Any] = (
            {"status": "error", "code": code, "reason": "declared_failure"}
            if code
            else {"status": "verified", "output": None, "artifacts": []}
        )
        events.append(
            {"kind": "node_completed", "completion": {"reference": ref, "outcome": outcome}}
        )
    events.append({"kind": "terminal", "result": {"status": "succeeded", "output": None}})
    ir = graph_json()
    receipts = [
        {
            "node": "worker",
            "tool": tool,
            "at": (T0 + timedelta(minutes=m)).isoformat(),
            "paths": [p],
        }
        for tool, m, p in (("Read", 0, "api/schema.json"), ("Grep", 2, "src"), ("Read", 6, "x.ts"))
    ]
    return parse_run_record(
        {
            "schema": "active-memory/run@1",
            "run_id": "run-b",
            "outcome": "succeeded",
            "repository": {"namespace": NAMESPACE},
            "graph": {"name": "software-change", "hash": graph_hash(Graph.from_json(ir)), "ir": ir},
            "events": [
                {"sequence": i, "at": (T0 + timedelta(seconds=i)).isoformat(), "event": e}
                for i, e in enumerate(events, start=1)
            ],
            "completions": {"ex-1": "gave up", "ex-2": "timed out"},
            "receipts": receipts,
            "deliveries": [{"session": "s", "lesson": i, "revision": 1} for i in lesson_ids],
        },
        "bench-run",
    )


def config() -> RuntimeConfig:
    settings = parse_runtime_settings(
        {
            "harness": "claude",
            "provider": "anthropic",
            "size": "standard",
            "nodes": {"worker": {"kind": "agent", "model": "bench-model"}},
            "globalAgents": {"postmortem": {"timeoutMs": 600_000}},
        }
    )
    return resolve_config(settings, Graph.from_json(graph_json()))


def repository_lessons(count: int, start: int = 1) -> list[Lesson]:
    return [
        Lesson(
            id=f"L-{n}",
            revision=1,
            scope=RepositoryScope(repository=NAMESPACE),
            title=f"Lesson {n} about the api client",
            recommendation=f"After editing `api/schema.json` run `make api-client` ({n}).",
            associations=Associations(folders=["api"], identifiers=[f"client_{n}"]),
        )
        for n in range(start, start + count)
    ]


def graph_lessons(run: RunRecord, count: int) -> list[Lesson]:
    assert run.graph is not None and run.graph.hash is not None
    return [
        Lesson(
            id=f"G-{n}",
            revision=1,
            scope=GraphScope(graph_hash=run.graph.hash, node="worker"),
            title=f"Graph lesson {n}",
            recommendation="Run `make lint` before finishing; reviewers reject lint errors.",
        )
        for n in range(1, count + 1)
    ]


# --- fake providers --------------------------------------------------------------------


def keep(request: Request) -> Any:
    assert isinstance(request.input, dict)
    lessons = request.input["lessons"]
    assert isinstance(lessons, list)
    return {
        "decisions": [
            {"id": x["id"], "revision": x["revision"], "action": "keep"}
            for x in lessons
            if isinstance(x, dict)
        ]
    }


def adapt(request: Request) -> Any:
    answer = keep(request)
    for decision in answer["decisions"]:
        decision.update(action="adapt", lesson=card(decision["id"]))
    return answer


def propose(request: Request) -> Any:
    return {"lessons": []}


class Fake:
    """A session factory: per specialist a latency and an answer function."""

    def __init__(self, latency: dict[str, float], maintenance: Callable[[Request], Any]) -> None:
        self.latency = latency
        self.maintenance = maintenance

    def __call__(self, specialist: SpecialistName, *, deadline: float) -> ProviderSession:
        delay = self.latency.get(specialist, 0.0)
        function = self.maintenance if "maintenance" in specialist else propose

        async def answer(request: Request) -> Any:
            if delay:
                await anyio.sleep(delay)
            return function(request)

        return FunctionSession(
            specialist, answer, deadline=deadline, usage_per_turn=Usage(requests=1)
        )


# --- measurements ------------------------------------------------------------------------


async def fresh_store(folder: Path, lessons: list[Lesson]) -> SqliteStore:
    store = await SqliteStore.open(folder / f"s-{time.monotonic_ns()}.sqlite3")
    if lessons:
        await store.import_lessons(lessons, PERSON)
    return store


BATCH_BYTES = [DEFAULT_BATCH_BYTES]


CPU: dict[str, list[float]] = {}
"""CPU seconds (`time.process_time()`: every thread of the process) per measured row:
on a shared machine wall time also counts other jobs' turns, CPU time does not."""


async def timed_postmortem(
    run: RunRecord, store: SqliteStore, fake: Fake, folder: Path, row: str = ""
) -> tuple[float, PostmortemReport]:
    limits = PostmortemLimits(batch_bytes=BATCH_BYTES[0])
    cpu = time.process_time()
    started = time.perf_counter()
    report = await run_postmortem(
        run, config(), store, sessions=fake, journal_dir=folder / "j", limits=limits
    )
    seconds = time.perf_counter() - started
    if row:
        CPU.setdefault(row, []).append(time.process_time() - cpu)
    return seconds, report


async def concurrency(latency: float, repeat: int, folder: Path) -> None:
    run = record(["L-1", "G-1"])
    lessons = [*repository_lessons(1), *graph_lessons(run, 1)]
    latencies: dict[str, float] = {
        name: latency * (1 + 0.1 * i) for i, name in enumerate(SPECIALISTS)
    }
    alone: dict[str, float] = {}
    for name, delay in latencies.items():
        samples = []
        for _ in range(repeat):
            store = await fresh_store(folder, lessons)
            seconds, report = await timed_postmortem(run, store, Fake({name: delay}, keep), folder)
            await store.aclose()
            assert report.specialists[name].status == "reconciled", report.to_json()
            samples.append(seconds)
        alone[name] = statistics.median(samples)
    together = []
    for _ in range(repeat):
        store = await fresh_store(folder, lessons)
        seconds, report = await timed_postmortem(run, store, Fake(latencies, keep), folder)
        await store.aclose()
        assert {e.status for e in report.specialists.values()} == {"reconciled"}
        together.append(seconds)
    slowest = max(alone.values())
    both = statistics.median(together)
    print(f"concurrency (median of {repeat}; fixed latency per specialist)")
    for specialist, seconds in alone.items():
        latency_ms = latencies[specialist] * 1000
        print(
            f"  {specialist:<24} alone       {seconds * 1000:8.1f} ms (latency {latency_ms:.0f} ms)"
        )
    print(f"  {'all four':<24} together    {both * 1000:8.1f} ms")
    print(f"  sum of the four alone             {sum(alone.values()) * 1000:8.1f} ms")
    print(f"  ratio together / slowest alone    {both / slowest:8.3f}  (goal <= 1.15)")


async def overhead(count: int, repeat: int, folder: Path) -> None:
    lessons = repository_lessons(count)
    run = record([x.id for x in lessons])
    rows: dict[str, list[float]] = {"read": [], "publish": [], "keep": [], "adapt": []}
    batches = 0
    for _ in range(repeat):
        store = await fresh_store(folder, lessons)
        cpu = time.process_time()
        started = time.perf_counter()
        found = await store.select(LessonQuery(kind="repository", repository=NAMESPACE))
        rows["read"].append(time.perf_counter() - started)
        CPU.setdefault("read", []).append(time.process_time() - cpu)
        assert len(found) == count
        seconds, report = await timed_postmortem(run, store, Fake({}, keep), folder, "keep")
        rows["keep"].append(seconds)
        entry = report.specialists["repository_maintenance"]
        assert entry.status == "reconciled" and entry.kept == count, entry.reason
        batches = entry.batches or 0
        seconds, report = await timed_postmortem(run, store, Fake({}, adapt), folder, "adapt")
        rows["adapt"].append(seconds)
        assert report.published.adapted == count, report.publish_error
        await store.aclose()
        store = await fresh_store(folder, lessons)
        direct = [
            AdaptLesson(
                id=x.id, base_revision=1, card=Card.model_validate(card(x.id)), author=PERSON
            )
            for x in lessons
        ]
        cpu = time.process_time()
        started = time.perf_counter()
        await store.publish(direct)
        rows["publish"].append(time.perf_counter() - started)
        CPU.setdefault("publish", []).append(time.process_time() - cpu)
        await store.aclose()
    med = {k: statistics.median(v) for k, v in rows.items()}
    cpus = {k: statistics.median(v) for k, v in CPU.items()}
    print(
        f"overhead: {count:,} delivered repository lessons, instant fake provider "
        f"(median of {repeat}; {batches} batches of <= {BATCH_BYTES[0]:,} bytes)"
    )
    print(f"  {'':<46}{'wall':>10}{'CPU':>10}")
    lines = (
        ("read", f"baseline: store.select of the {count:,} lessons", ""),
        ("publish", f"baseline: store.publish of {count:,} adaptations", ""),
        ("keep", "postmortem, keep all (nothing to publish)", "x the read (CPU)"),
        ("adapt", "postmortem, adapt all (one publish)", "goal <= 3000 ms"),
    )
    for key, label, note in lines:
        tail = ""
        if key == "keep":
            tail = f"  {cpus['keep'] / cpus['read']:.1f}{note}"
        elif note:
            tail = f"  ({note})"
        print(f"  {label:<46}{med[key] * 1000:8.1f} ms{cpus[key] * 1000:8.1f} ms{tail}")


async def main(options: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if not options.skip_concurrency:
            await concurrency(options.latency, options.repeat, folder)
            print()
        await overhead(options.lessons, options.repeat, folder)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5, help="base provider latency (s)")
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch-bytes", type=int, default=DEFAULT_BATCH_BYTES)
    parser.add_argument("--skip-concurrency", action="store_true")
    arguments = parser.parse_args()
    BATCH_BYTES[0] = arguments.batch_bytes
    anyio.run(main, arguments)
