"""Child processes for the store's multi-process tests; run as a script, never imported.

`adapt`: revision-checked updates of shared lessons, retried on `RevisionConflict`,
each success appended to a result file as `<id> <revision> <worker> <update>`; a
"doomed" lesson may be added to an update's targets and is dropped once it is retired.
`retire`: retires the doomed lessons one by one while the adapt workers run.
The store is a SQLite path or a `postgresql://` URL.
`batches`: large publishes tagged `batch <k>`, announced on stdout before and after
each publish so the parent can kill the process in the middle of one.

A `StoreBusy` (or any other error) is deliberately not caught: it ends the worker with
a traceback and a non-zero exit code, which the parent test reports as a failure.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import anyio

from active_memory.errors import RevisionConflict
from active_memory.lessons import (
    AdaptLesson,
    Associations,
    Author,
    Card,
    CreateLesson,
    Evidence,
    Lesson,
    PublishReceipt,
    RepositoryScope,
    RetireLesson,
    Tombstone,
)
from active_memory.store import LessonStore
from active_memory.store.location import is_postgres_url
from active_memory.store.sqlite import SqliteStore

CRASH_SCOPE = RepositoryScope(repository="repo:crash-test")


def _say(line: str) -> None:
    """One line to the parent, flushed at once (a kill may follow any moment)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def open_store_at(location: str) -> LessonStore:
    """Open an existing store: a SQLite path or a PostgreSQL URL."""
    if is_postgres_url(location):
        from active_memory.store.postgres import PostgresStore

        return await PostgresStore.open(location, create=False)
    return await SqliteStore.open(location, create=False)


async def _decide(
    store: LessonStore, targets: list[str], worker: int, update: int, doomed: set[str]
) -> list[AdaptLesson]:
    """Read each target now and adapt it on the revision just read (skip retired doomed)."""
    mutations = []
    for lesson_id in targets:
        current = await store.get(lesson_id)
        if isinstance(current, Tombstone) and lesson_id in doomed:
            continue
        if not isinstance(current, Lesson):
            raise AssertionError(f"{lesson_id} is not a living lesson: {current}")
        mutations.append(
            AdaptLesson(
                id=lesson_id,
                base_revision=current.revision,
                card=Card(
                    title=f"w{worker} u{update} on r{current.revision}",
                    recommendation=f"Worker {worker} wrote update {update}.",
                    associations=Associations(files=[f"src/{lesson_id}.py"]),
                ),
                author=Author(specialist=f"worker-{worker}", run_id=f"run-{worker}"),
                reason=f"worker {worker} update {update}",
            )
        )
    return mutations


async def _publish_until_accepted(
    store: LessonStore, targets: list[str], worker: int, update: int, doomed: set[str]
) -> tuple[PublishReceipt, list[AdaptLesson], int]:
    """Decide and publish; on a conflict re-read and decide again. Returns the conflicts met."""
    conflicts = 0
    while True:
        mutations = await _decide(store, targets, worker, update, doomed)
        try:
            return await store.publish(mutations), mutations, conflicts
        except RevisionConflict as exc:
            conflicts += 1
            sent = {m.id: m.base_revision for m in mutations}
            if any(sent.get(c.lesson_id) != c.expected_revision for c in exc.conflicts):
                raise AssertionError(f"conflict names what we did not send: {exc}") from exc


async def adapt_worker(
    store_path: str, results: Path, worker: int, ids: list[str], updates: int, seed: int,
    doomed: list[str],
) -> None:  # fmt: skip
    """Publish `updates` revision-checked adapts of one or two of `ids` each (and, now and
    then, of one of `doomed` while it lives)."""
    rng = random.Random(seed)
    conflicts = 0
    store = await open_store_at(store_path)
    try:
        _say("ready")
        # Start together, so that every worker contends from its first update.
        sys.stdin.readline()
        with results.open("a", encoding="utf-8") as out:
            for update in range(updates):
                targets = rng.sample(ids, rng.choice((1, 1, 2)))
                if doomed and rng.random() < 0.25:
                    targets.append(rng.choice(doomed))
                receipt, mutations, met = await _publish_until_accepted(
                    store, targets, worker, update, set(doomed)
                )
                conflicts += met
                expected = sorted((m.id, m.base_revision + 1) for m in mutations)
                if sorted(receipt.adapted) != expected or receipt.total() != len(mutations):
                    raise AssertionError(f"receipt {receipt} does not match {expected}")
                for lesson_id, revision in receipt.adapted:
                    out.write(f"{lesson_id} {revision} {worker} {update}\n")
                out.flush()
    finally:
        await store.aclose()
    _say(f"done conflicts={conflicts}")


async def retire_worker(store_path: str, results: Path, doomed: list[str], seed: int) -> None:
    """Retire each of `doomed` on the revision just read, retrying on conflicts."""
    rng = random.Random(seed)
    conflicts = 0
    store = await open_store_at(store_path)
    try:
        _say("ready")
        sys.stdin.readline()
        with results.open("a", encoding="utf-8") as out:
            for lesson_id in doomed:
                await anyio.sleep(rng.uniform(0.05, 0.5))  # let adapts land on it first
                while True:
                    current = await store.get(lesson_id)
                    assert isinstance(current, Lesson), f"{lesson_id} is {current!r}"
                    try:
                        receipt = await store.publish(
                            [
                                RetireLesson(
                                    id=lesson_id,
                                    base_revision=current.revision,
                                    author=Author(specialist="retirer"),
                                    reason="doomed",
                                )
                            ]
                        )
                    except RevisionConflict:
                        conflicts += 1
                        continue
                    [(retired, revision)] = receipt.retired
                    out.write(f"{retired} {revision}\n")
                    out.flush()
                    break
    finally:
        await store.aclose()
    _say(f"done conflicts={conflicts}")


def _batch(
    k: int, rng: random.Random, pool: dict[str, int]
) -> tuple[str, list[CreateLesson] | list[AdaptLesson]]:
    """Batch `k`: 300-1000 new lessons, or adapts of up to that many lessons of `pool`."""
    size = rng.randint(300, 1000)
    author = Author(specialist="crash-worker", run_id=f"batch-{k}")
    evidence = Evidence(run_ids=[f"batch {k}"])  # the same tag as the reason
    if len(pool) < size or rng.random() < 0.5:
        return "create", [
            CreateLesson(
                scope=CRASH_SCOPE,
                card=Card(title=f"b{k} new {i}", recommendation=f"Created by batch {k}."),
                evidence=evidence,
                author=author,
                reason=f"batch {k}",
            )
            for i in range(size)
        ]
    chosen = rng.sample(sorted(pool), size)
    return "adapt", [
        AdaptLesson(
            id=lesson_id,
            base_revision=pool[lesson_id],
            card=Card(title=f"b{k} adapt {i}", recommendation=f"Adapted by batch {k}."),
            evidence=evidence,
            author=author,
            reason=f"batch {k}",
        )
        for i, lesson_id in enumerate(chosen)
    ]


async def batch_worker(store_path: Path, first: int, count: int, seed: int) -> None:
    """Publish `count` large batches numbered from `first`, announcing each one."""
    rng = random.Random(seed)
    pool: dict[str, int] = {}  # lessons this worker created, at their current revision
    store = await SqliteStore.open(store_path, create=False)
    try:
        _say("ready")
        for k in range(first, first + count):
            kind, mutations = _batch(k, rng, pool)
            # Models are built before the announcement, so "start" is followed at once
            # by BEGIN IMMEDIATE: a kill after it lands inside (or just before) the publish.
            _say(f"start {k} {kind} {len(mutations)}")
            began = time.perf_counter()
            receipt = await store.publish(mutations)
            elapsed = time.perf_counter() - began
            pool.update(receipt.created)
            pool.update(receipt.adapted)
            _say(f"commit {k} {elapsed:.4f}")
    finally:
        await store.aclose()
    _say("finished")


def main(argv: list[str] | None = None) -> None:
    """Parse the subcommand and run its worker on the asyncio backend."""
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    adapt = sub.add_parser("adapt")
    adapt.add_argument("store")
    adapt.add_argument("results", type=Path)
    adapt.add_argument("--worker", type=int, required=True)
    adapt.add_argument("--ids", required=True, help="comma-separated lesson IDs")
    adapt.add_argument("--updates", type=int, required=True)
    adapt.add_argument("--seed", type=int, required=True)
    adapt.add_argument("--doomed", default="", help="comma-separated lesson IDs")
    retire = sub.add_parser("retire")
    retire.add_argument("store")
    retire.add_argument("results", type=Path)
    retire.add_argument("--doomed", required=True, help="comma-separated lesson IDs")
    retire.add_argument("--seed", type=int, required=True)
    batches = sub.add_parser("batches")
    batches.add_argument("store", type=Path)
    batches.add_argument("--first", type=int, required=True)
    batches.add_argument("--count", type=int, required=True)
    batches.add_argument("--seed", type=int, required=True)
    args = parser.parse_args(argv)
    if args.command == "adapt":
        anyio.run(
            adapt_worker,
            args.store,
            args.results,
            args.worker,
            args.ids.split(","),
            args.updates,
            args.seed,
            [d for d in args.doomed.split(",") if d],
        )
    elif args.command == "retire":
        anyio.run(retire_worker, args.store, args.results, args.doomed.split(","), args.seed)
    else:
        anyio.run(batch_worker, args.store, args.first, args.count, args.seed)


if __name__ == "__main__":
    main()
