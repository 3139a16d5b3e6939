"""A publisher killed with SIGKILL at random moments leaves a sound store and whole batches."""

from __future__ import annotations

import queue
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from active_memory.lessons import (
    AdaptLesson,
    Author,
    Card,
    CreateLesson,
    Evidence,
    Mutation,
    RepositoryScope,
)
from active_memory.store.sqlite import SqliteStore

TRIALS = 36
BATCHES_PER_CHILD = 4
SEED = 20261129
WORKER_SCRIPT = Path(__file__).with_name("store_workers.py")
MODES = ("after-spawn", "after-ready", "in-publish")


@dataclass
class Child:
    """One publisher process and the lines it printed (None marks its end)."""

    process: subprocess.Popen[str]
    store_path: Path
    first: int
    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)

    def wait_for(self, wanted: Callable[[str], bool], timeout: float = 120.0) -> bool:
        """Wait for a line matching `wanted`; False if the child ended first.

        The timeout only guards against a hung child; a loaded CI machine can be slow.
        """
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line is None:
                return False
            self.seen.append(line)
            if wanted(line):
                return True

    def drain(self) -> None:
        """Collect every line printed before the child ended."""
        while True:
            line = self.lines.get(timeout=120.0)
            if line is None:
                return
            self.seen.append(line)


def _spawn(store_path: Path, first: int, seed: int) -> Child:
    process = subprocess.Popen(
        [
            sys.executable,
            str(WORKER_SCRIPT),
            "batches",
            str(store_path),
            f"--first={first}",
            f"--count={BATCHES_PER_CHILD}",
            f"--seed={seed}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    child = Child(process, store_path, first)

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            child.lines.put(line.strip())
        child.lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return child


def _write_lock_held(store_path: Path) -> bool:
    """True if another connection is inside a write transaction right now."""
    probe = sqlite3.connect(store_path, timeout=0, isolation_level=None)
    try:
        probe.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        assert "locked" in str(exc), exc
        return True
    finally:
        if probe.in_transaction:
            probe.execute("ROLLBACK")
        probe.close()
    return False


@dataclass
class Counts:
    """What the store holds, counted per batch tag (a history row's reason)."""

    history: dict[str, int]
    evidence: dict[str, int]
    lessons: int
    creates: int
    next_number: int
    inconsistent: list[str]


def _counts(store_path: Path) -> Counts:
    db = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)
    try:
        history = dict(db.execute("SELECT reason, count(*) FROM lesson_history GROUP BY reason"))
        evidence = dict(
            db.execute(
                "SELECT value, count(*) FROM lesson_evidence WHERE kind = 'run' GROUP BY value"
            )
        )
        (lessons,) = db.execute("SELECT count(*) FROM lessons").fetchone()
        (creates,) = db.execute(
            "SELECT count(*) FROM lesson_history WHERE action = 'create'"
        ).fetchone()
        (next_number,) = db.execute(
            "SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'next_lesson_number'"
        ).fetchone()
        # A lesson row must be its history's last revision, with no gap and the same card.
        inconsistent = [
            row[0]
            for row in db.execute(
                "SELECT l.id FROM lessons AS l LEFT JOIN ("
                "  SELECT lesson_id, count(*) AS n, max(revision) AS top FROM lesson_history"
                "  GROUP BY lesson_id) AS h ON h.lesson_id = l.id "
                "LEFT JOIN lesson_history AS last "
                "  ON last.lesson_id = l.id AND last.revision = l.revision "
                "WHERE h.n IS NULL OR h.n != l.revision OR h.top != l.revision "
                "  OR json_extract(last.card, '$.title') IS NOT l.title"
            )
        ]
    finally:
        db.close()
    return Counts(history, evidence, lessons, creates, next_number, inconsistent)


async def _create(store_path: Path) -> None:
    await (await SqliteStore.open(store_path)).aclose()


async def _integrity(store_path: Path) -> list[str]:
    # Opening recovers the WAL the killed writer left behind.
    async with await SqliteStore.open(store_path, create=False) as store:
        return await store.integrity_check()


async def _publish_after(store_path: Path, trial: int, previous: tuple[str, int] | None) -> str:
    """A small publish after the kill (a create, and an adapt of the last one): it must land."""
    reason = f"after trial {trial}"
    author = Author(specialist="crash-test")
    evidence = Evidence(run_ids=[reason])
    mutations: list[Mutation] = [
        CreateLesson(
            scope=RepositoryScope(repository="repo:crash-test"),
            card=Card(title=f"after {trial}", recommendation="Written after a kill."),
            evidence=evidence,
            author=author,
            reason=reason,
        )
    ]
    if previous is not None:
        lesson_id, revision = previous
        mutations.append(
            AdaptLesson(
                id=lesson_id,
                base_revision=revision,
                card=Card(title=f"after {trial} adapt", recommendation="Adapted after a kill."),
                evidence=evidence,
                author=author,
                reason=reason,
            )
        )
    async with await SqliteStore.open(store_path, create=False) as store:
        receipt = await store.publish(mutations)
        assert receipt.total() == len(mutations)
        [(created, _)] = receipt.created
        return created


def _kill_at_random(child: Child, mode: str, rng: random.Random, publish_time: float) -> bool:
    """Kill the child at a moment chosen by `mode`; True if it held the write lock then."""
    if mode == "after-spawn":  # may land in start-up, opening, or any publish
        time.sleep(rng.uniform(0.0, 0.5 + BATCHES_PER_CHILD * publish_time))
    elif mode == "after-ready":
        if child.wait_for(lambda line: line == "ready"):
            time.sleep(rng.uniform(0.0, BATCHES_PER_CHILD * publish_time * 1.5))
    else:  # aim inside one publish: after its announcement, within its usual duration
        target = f"start {child.first + rng.randrange(BATCHES_PER_CHILD)} "
        if child.wait_for(lambda line: line.startswith(target)):
            time.sleep(rng.uniform(0.0, publish_time))
    held = child.process.poll() is None and _write_lock_held(child.store_path)
    child.process.send_signal(signal.SIGKILL)
    child.process.wait()
    return held


def _close_pipes(process: subprocess.Popen[str]) -> str:
    """Close a finished child's pipes; return what it wrote to stderr."""
    assert process.stdout is not None and process.stderr is not None
    err = process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    return err


@pytest.mark.slow
def test_killed_publishes_are_all_or_nothing(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    store_path = tmp_path / "lessons.sqlite3"
    anyio.run(_create, store_path)
    expected: dict[str, int] = {}  # tag -> rows of every publish that must be present
    publish_times = [0.05]
    killed_mid_transaction = 0
    previous: tuple[str, int] | None = None

    for trial in range(TRIALS):
        mode = MODES[trial % len(MODES)]
        child = _spawn(store_path, first=trial * 100, seed=SEED + trial)
        held = _kill_at_random(child, mode, rng, statistics.median(publish_times))
        child.drain()
        err = _close_pipes(child.process)
        # Killed by us, or finished on its own before the kill: never an error of its own.
        assert child.process.returncode in (0, -signal.SIGKILL), err

        started = {int(p[1]): int(p[3]) for p in map(str.split, child.seen) if p[0] == "start"}
        committed = {int(p[1]) for p in map(str.split, child.seen) if p[0] == "commit"}
        publish_times += [float(p[2]) for p in map(str.split, child.seen) if p[0] == "commit"]
        in_flight = sorted(set(started) - committed)
        assert len(in_flight) <= 1, child.seen

        assert anyio.run(_integrity, store_path) == ["ok"], f"trial {trial} ({mode})"
        counts = _counts(store_path)
        for k in committed:
            expected[f"batch {k}"] = started[k]
        for k in in_flight:
            present = counts.history.get(f"batch {k}", 0)
            # All or nothing: the killed publish left every row or none.
            assert present in (0, started[k]), f"trial {trial}: batch {k} has {present} rows"
            if present:
                expected[f"batch {k}"] = started[k]
            elif held:
                killed_mid_transaction += 1
        assert counts.history == expected, f"trial {trial} ({mode}): {child.seen}"
        assert counts.evidence == expected, f"trial {trial} ({mode})"
        assert counts.lessons == counts.creates == counts.next_number - 1
        assert counts.inconsistent == []

        created = anyio.run(_publish_after, store_path, trial, previous)
        expected[f"after trial {trial}"] = 1 if previous is None else 2
        previous = (created, 1)

    final = _counts(store_path)
    assert final.history == expected and final.inconsistent == []
    # Some kills must have hit a publish between BEGIN and COMMIT, or the test proved little.
    assert killed_mid_transaction >= 3, killed_mid_transaction
