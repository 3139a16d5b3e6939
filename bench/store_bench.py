"""Benchmark of the SQLite lesson store, with baselines measured in the same run.

Run: `.venv/bin/python bench/store_bench.py` (options: --lessons N, --repeat N, --profile,
--postgres URL to also compare publish and snapshot reads with a PostgreSQL store).

Every figure is the median of --repeat runs, each on a fresh store in a temporary folder,
and is printed next to a ratio against a baseline taken on the same machine in the same
run (bare interpreter start-up; raw sqlite3 executemany / fetchall on a similar table),
so that figures from noisy or slower machines can still be compared.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from active_memory.lessons import (
    AdaptLesson,
    Associations,
    Author,
    Card,
    Citation,
    CreateLesson,
    Evidence,
    RepositoryScope,
)
from active_memory.store.lesson_store import LessonStore
from active_memory.store.location import mask_url
from active_memory.store.models import LessonQuery
from active_memory.store.sqlite import SqliteStore

REPOSITORY = "repo:github.com/acme/bench"
LOOKUPS = 100  # single-lesson reads whose median is reported
AUTHOR = Author(specialist="repository_discovery", run_id="run-bench", model="bench-model")
RECOMMENDATION = (
    "After editing the schema, regenerate the client with `make api-client` and commit the "
    "generated files in the same change; CI compares them and fails the build otherwise."
)


def _card(i: int, generation: str) -> Card:
    """A card of realistic size: two files, one identifier, one keyword group."""
    return Card(
        title=f"{generation} lesson {i}: regenerate the api client",
        recommendation=RECOMMENDATION,
        associations=Associations(
            files=[f"api/schema_{i}.json", f"clients/gen_{i}.py"],
            identifiers=[f"ApiClient{i}"],
            keywords=[["openapi", f"schema{i}"]],
        ),
    )


def _evidence(i: int) -> Evidence:
    """One run, two evidence items, one citation: four evidence rows per lesson."""
    return Evidence(
        run_ids=[f"run-{i % 97}"],
        evidence_ids=[f"ev-{i}-a", f"ev-{i}-b"],
        citations=[Citation(path=f"api/schema_{i}.json", lines=(1, 20))],
    )


def creates(n: int) -> list[CreateLesson]:
    """`n` new lessons in one repository scope."""
    scope = RepositoryScope(repository=REPOSITORY)
    return [
        CreateLesson(scope=scope, card=_card(i, "first"), evidence=_evidence(i), author=AUTHOR)
        for i in range(n)
    ]


def adapts(created: list[tuple[str, int]]) -> list[AdaptLesson]:
    """An adapt of every created lesson, on the revision it was created at."""
    return [
        AdaptLesson(
            id=lesson_id,
            base_revision=revision,
            card=_card(i, "second"),
            evidence=_evidence(i + 1),
            author=AUTHOR,
            reason="benchmark",
        )
        for i, (lesson_id, revision) in enumerate(created)
    ]


def timed(action: Callable[[], object]) -> float:
    """Seconds one call of `action` takes."""
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


async def atimed(action: Callable[[], Awaitable[object]]) -> float:
    """Seconds one awaited call of `action` takes."""
    began = time.perf_counter()
    await action()
    return time.perf_counter() - began


# --- baselines ----------------------------------------------------------------------


def interpreter_startup(code: str = "pass") -> float:
    """`python -c pass`: what any command pays before it does anything."""
    return timed(lambda: subprocess.run([sys.executable, "-c", code], check=True))


def raw_sqlite(folder: Path, n: int) -> tuple[float, float, float]:
    """executemany of `n` rows into a lessons-like table in one transaction, fetchall of
    them, and the median of single-row lookups by key.

    Same journal mode and synchronous level as the store, no indexes beyond the key, no
    history or evidence rows and no models: the floor for writing and reading `n` rows.
    """
    db = sqlite3.connect(folder / "raw.sqlite3", isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute(
        "CREATE TABLE lessons (id TEXT PRIMARY KEY, revision INTEGER, status TEXT, "
        "repository TEXT, title TEXT, recommendation TEXT, associations TEXT) STRICT"
    )
    card = _card(0, "first")
    rows = [
        (f"L-{i}", 1, "active", REPOSITORY, card.title, card.recommendation,
         card.associations.model_dump_json())
        for i in range(n)
    ]  # fmt: skip

    def lookup(key: str) -> Any:
        return db.execute("SELECT * FROM lessons WHERE id = ?", (key,)).fetchone()

    def insert() -> None:
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT INTO lessons VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        db.execute("COMMIT")

    try:
        write = timed(insert)
        read = timed(
            lambda: db.execute(
                "SELECT * FROM lessons WHERE repository = ?", (REPOSITORY,)
            ).fetchall()
        )
        one = statistics.median(
            timed(partial(lookup, f"L-{i}")) for i in range(0, n, max(1, n // LOOKUPS))
        )
    finally:
        db.close()
    return write, read, one


# --- the store ----------------------------------------------------------------------


async def store_round(folder: Path, n: int) -> dict[str, float]:
    """One fresh store: publish `n` creates, `n` adapts, read the scope, reopen."""
    path = folder / "lessons.sqlite3"
    figures: dict[str, float] = {}
    new = creates(n)
    store = await SqliteStore.open(path)
    try:
        began = time.perf_counter()
        receipt = await store.publish(new)
        figures["publish creates"] = time.perf_counter() - began
        assert len(receipt.created) == n
        changed = adapts(receipt.created)
        began = time.perf_counter()
        receipt = await store.publish(changed)
        figures["publish adapts"] = time.perf_counter() - began
        assert len(receipt.adapted) == n

        snapshot: list[Any] = []

        async def snap() -> None:
            snapshot[:] = await store.read_snapshot(
                repository=REPOSITORY, graph_hash=None, node=None
            )

        figures["read_snapshot"] = await atimed(snap)
        assert len(snapshot) == n
        # The same read with the cyclic GC paused: the difference is what GC passes over a
        # heap of many small models cost (diagnostic only; the store never pauses GC).
        gc.disable()
        try:
            figures["read_snapshot, GC paused"] = await atimed(snap)
        finally:
            gc.enable()
        figures["select"] = await atimed(lambda: store.select(LessonQuery(repository=REPOSITORY)))
        figures["get one"] = statistics.median(
            [
                await atimed(partial(store.get, f"L-{i + 1}"))
                for i in range(0, n, max(1, n // LOOKUPS))
            ]
        )
    finally:
        await store.aclose()

    async def reopen() -> None:
        await (await SqliteStore.open(path, create=False)).aclose()

    figures["open (in process)"] = await atimed(reopen)
    return figures


def open_in_fresh_process(path: Path) -> float:
    """Start an interpreter that imports the store, opens it and closes it."""
    code = (
        "import anyio, sys\n"
        "from active_memory.store.sqlite import SqliteStore\n"
        "async def main():\n"
        "    await (await SqliteStore.open(sys.argv[1], create=False)).aclose()\n"
        "anyio.run(main)\n"
    )
    return timed(lambda: subprocess.run([sys.executable, "-c", code, str(path)], check=True))


def profile_publish(n: int, limit: int = 18) -> None:
    """Print where a publish of `n` creates and a read of them spend their time."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lessons.sqlite3"
        new = creates(n)

        async def run() -> None:
            async with await SqliteStore.open(path) as store:
                for name, action in (
                    ("publish creates", lambda: store.publish(new)),
                    ("read_snapshot", lambda: store.read_snapshot(
                        repository=REPOSITORY, graph_hash=None, node=None)),
                ):  # fmt: skip
                    profiler = cProfile.Profile()
                    profiler.enable()
                    await action()
                    profiler.disable()
                    print(f"--- profile: {name} (own time)")
                    pstats.Stats(profiler).sort_stats("tottime").print_stats(limit)

        anyio.run(run)


# --- SQLite beside PostgreSQL -------------------------------------------------------

BACKEND_FIGURES = ("publish creates", "publish adapts", "read_snapshot", "get one")


async def backend_round(store: LessonStore, n: int) -> dict[str, float]:
    """The operations both backends share, on a fresh store: publish, snapshot, get."""
    figures: dict[str, float] = {}
    new = creates(n)
    began = time.perf_counter()
    receipt = await store.publish(new)
    figures["publish creates"] = time.perf_counter() - began
    changed = adapts(receipt.created)
    began = time.perf_counter()
    await store.publish(changed)
    figures["publish adapts"] = time.perf_counter() - began
    began = time.perf_counter()
    snapshot = await store.read_snapshot(repository=REPOSITORY, graph_hash=None, node=None)
    figures["read_snapshot"] = time.perf_counter() - began
    assert len(snapshot) == n
    figures["get one"] = statistics.median(
        [await atimed(partial(store.get, f"L-{i + 1}")) for i in range(0, n, max(1, n // LOOKUPS))]
    )
    return figures


async def sqlite_backend_round(folder: Path, n: int) -> dict[str, float]:
    """`backend_round` on a new SQLite store in `folder`."""
    store = await SqliteStore.open(folder / "backends.sqlite3")
    try:
        return await backend_round(store, n)
    finally:
        await store.aclose()


async def postgres_backend_round(server: str, n: int) -> dict[str, float]:
    """`backend_round` on a new database of `server`, dropped afterwards."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import asyncpg

    from active_memory.store.postgres import PostgresStore

    name = f"am_bench_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(server)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        url = urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
        try:
            store = await PostgresStore.open(url)
            try:
                return await backend_round(store, n)
            finally:
                await store.aclose()
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def compare_backends(server: str, n: int, repeat: int) -> None:
    """Print SQLite's and PostgreSQL's figures side by side, measured in this run."""
    lite, pg = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            lite.append(anyio.run(sqlite_backend_round, Path(tmp), n, backend="asyncio"))
        pg.append(anyio.run(postgres_backend_round, server, n, backend="asyncio"))
    print(f"\nSQLite beside PostgreSQL ({mask_url(server)}), {n:,} lessons, median of {repeat}")
    print(f"  {'':<32}{'SQLite':>12}{'PostgreSQL':>14}{'PG / SQLite':>14}")
    for key in BACKEND_FIGURES:
        a = statistics.median(r[key] for r in lite)
        b = statistics.median(r[key] for r in pg)
        print(f"  {key:<32}{a:>10.6f} s{b:>12.6f} s{b / a:>12.2f} x")


def _line(
    name: str, seconds: float, n: int = 0, unit: str = "", base: float = 0.0, base_name: str = ""
) -> None:
    rate = f"{n / seconds:>10,.0f} {unit}/s" if unit else ""
    ratio = f"{seconds / base:8.2f} x {base_name}" if base else ""
    print(f"  {name:<40}{seconds:10.6f} s  {rate:<22}{ratio}".rstrip())


def main(argv: list[str] | None = None) -> None:
    """Measure, then print the baselines and the store's figures with their ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=10_000, help="lessons per publish")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--profile", action="store_true", help="also profile a publish and a read")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="also run publish and snapshot reads on PostgreSQL (a role that may create "
        "databases; each run uses a new database, dropped afterwards)",
    )
    args = parser.parse_args(argv)
    n, repeat = args.lessons, args.repeat

    startup = statistics.median(interpreter_startup() for _ in range(max(5, repeat)))
    imports = statistics.median(
        interpreter_startup("import aiosqlite, anyio, pydantic") for _ in range(max(5, repeat))
    )
    build = statistics.median(timed(lambda: creates(n)) for _ in range(repeat))
    raw: list[tuple[float, float, float]] = []
    rounds, fresh_opens = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            raw.append(raw_sqlite(Path(tmp), n))
            rounds.append(anyio.run(store_round, Path(tmp), n))
            fresh_opens.append(open_in_fresh_process(Path(tmp) / "lessons.sqlite3"))
    raw_write, raw_read, raw_one = (statistics.median(column) for column in zip(*raw, strict=True))
    fig = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}

    print(f"SQLite lesson store, {n:,} lessons, median of {repeat} runs")
    print(f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}", end=", ")
    print(f"{os.cpu_count()} cores")
    print("\nbaselines (same run)")
    _line("python -c pass (start-up)", startup)
    _line("import aiosqlite, anyio, pydantic", imports)
    _line("raw sqlite3 executemany insert", raw_write, n, "rows")
    _line("raw sqlite3 select + fetchall", raw_read, n, "rows")
    _line("raw sqlite3 select one row by id", raw_one)
    _line("build the create models (caller side)", build, n, "models")
    print("\nstore")
    _line("publish creates (one transaction)", fig["publish creates"], n, "mutations", raw_write,
          "raw insert")  # fmt: skip
    _line("publish adapts (one transaction)", fig["publish adapts"], n, "mutations", raw_write,
          "raw insert")  # fmt: skip
    _line("read_snapshot (whole scope)", fig["read_snapshot"], n, "lessons", raw_read, "raw select")
    _line("read_snapshot, cyclic GC paused", fig["read_snapshot, GC paused"], n, "lessons",
          raw_read, "raw select")  # fmt: skip
    _line("select (repository query)", fig["select"], n, "lessons", raw_read, "raw select")
    _line("get one lesson", fig["get one"], base=raw_one, base_name="raw select one")
    _line("open (in process)", fig["open (in process)"], base=startup, base_name="start-up")
    _line("open (fresh process, with imports)", statistics.median(fresh_opens), base=imports,
          base_name="dependency imports")  # fmt: skip
    if args.postgres:
        compare_backends(args.postgres, n, repeat)
    if args.profile:
        print()
        profile_publish(n)


if __name__ == "__main__":
    main()
