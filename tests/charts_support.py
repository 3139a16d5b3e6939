"""A store and journal with N data points for the charts (5, 50, 500): N postmortems on N
days, and N runs observing L-1 and L-2 on those days.

Observations go through the store's own publish; only their dates are moved into the
past afterwards (a publish stamps events with its own time, and a chart over time needs
time to have passed). Deterministic: the same N gives the same store.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from ui_support import publish, seed_mutations

from active_memory.orchestrator.journal import Journal, store_journal_dir
from active_memory.orchestrator.report import UsageReport
from active_memory.store import open_store
from active_memory.store.effectiveness import RunObservation

FIRST_DAY = datetime(2025, 6, 2, 9, 30, tzinfo=UTC)
SPECIALISTS = ("graph_maintenance", "repository_maintenance", "graph_discovery",
               "repository_discovery")  # fmt: skip


def _day(n: int) -> datetime:
    return FIRST_DAY + timedelta(days=n)


def seed_charts(store: str, env: dict[str, str], points: int) -> None:
    """`points` postmortems (journal) and `points` runs observing L-1 and L-2 (store),
    one a day from `FIRST_DAY`: delivered cards make the costly evidence recur less."""
    chance = random.Random(points)
    publish(store, seed_mutations())
    observations = []
    for n in range(points):
        delivered = chance.random() < 0.6
        recurred = chance.random() < (0.15 if delivered else 0.55)
        if n < 5:  # the first runs fixed: a few points already show both kinds and rates
            delivered = n % 5 in (1, 2, 4)
            recurred = n in (0, 2, 3)
        other = chance.random() < 0.5
        observations.append((f"run-{n:04d}", delivered, recurred, other))

    async def observe() -> None:
        async with open_store(store) as opened:
            for run, delivered, recurred, other in observations:
                await opened.publish([], [
                    RunObservation(lesson_id="L-1", run_id=run, delivered=delivered,
                                   recurred=recurred),
                    RunObservation(lesson_id="L-2", run_id=run, delivered=other,
                                   recurred=not other),
                ])  # fmt: skip

    anyio.run(observe)
    with sqlite3.connect(store) as raw:  # the dates only: as if each run were a day apart
        raw.executemany(
            "UPDATE lesson_effectiveness_events SET at = ? WHERE run_id = ?",
            [(_day(n).isoformat(), run) for n, (run, *_) in enumerate(observations)],
        )
        raw.execute("UPDATE store_meta SET value = ? WHERE key = 'effectiveness_events_since'",
                    (str(int(FIRST_DAY.timestamp())),))  # fmt: skip
    journal = Journal(store_journal_dir(store, env))
    for n, (run, *_) in enumerate(observations):
        entry = journal.started(run, "succeeded")
        failed = {name: "failed" for name in SPECIALISTS[: chance.choice((0, 0, 0, 1, 3))]}
        usage = UsageReport(input_tokens=chance.randint(8_000, 60_000),
                            output_tokens=chance.randint(500, 6_000),
                            requests=chance.randint(4, 14), cost_usd=None)  # fmt: skip
        journal.write(entry.model_copy(update={
            "state": "finished", "started_at": _day(n).isoformat(),
            "ended_at": (_day(n) + timedelta(minutes=2)).isoformat(),
            "statuses": {name: failed.get(name, "reconciled") for name in SPECIALISTS},
            "usage": usage,
            "specialist_usage": {name: usage for name in SPECIALISTS[:1]},
        }))  # fmt: skip


def journal_env(tmp_path: Path) -> dict[str, str]:
    """A state folder of the test's own."""
    return {"ZEROSHOT_STATE_DIR": str(tmp_path / "state")}
