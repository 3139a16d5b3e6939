"""`lessons list` at scale: a store of N lessons listed to a pipe, as a new process.

    .venv/bin/python bench/list_bench.py                # 10,000 lessons, median of 5
    .venv/bin/python bench/list_bench.py --lessons 2000 --runs 9

Baselines from the same run: a bare `python -c pass`, and `active-memory --help` (the
CLI's own start-up). Figures: `lessons list` to a pipe (plain lines), `--json` (whole
lessons), and a page (`--limit 50`). Never a timed test.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from active_memory.lessons import Associations, Author, Card, CreateLesson, RepositoryScope
from active_memory.store.sqlite import SqliteStore

CLI = [sys.executable, "-c", "from active_memory.cli import run; run()"]


async def seed(path: Path, count: int) -> None:
    store = await SqliteStore.open(path)
    scope = RepositoryScope(repository="repo:github.com/acme/api")
    try:
        await store.publish([
            CreateLesson(scope=scope, author=Author(specialist="bench"), card=Card(
                title=f"Regenerate client module {n} through the wrapper",
                recommendation="After editing the schema run `make api-client` and commit.",
                associations=Associations(files=[f"src/m{n % 100}/f{n}.py"],
                                          keywords=[["checkout", f"term{n % 50}"]])))
            for n in range(count)
        ])  # fmt: skip
    finally:
        await store.aclose()


def median_seconds(command: list[str], runs: int) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
        size = len(done.stdout)
    return statistics.median(times), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "lessons.sqlite3"
        anyio.run(seed, store, args.lessons)
        bare, _ = median_seconds([sys.executable, "-c", "pass"], args.runs)
        cli, _ = median_seconds([*CLI, "--help"], args.runs)
        print(f"{args.lessons:,} lessons, median of {args.runs} processes")
        print(f"  {'python -c pass (baseline)':<40} {bare * 1000:8.1f} ms")
        print(f"  {'active-memory --help (baseline)':<40} {cli * 1000:8.1f} ms")
        for name, extra in (("lessons list | (plain)", []), ("lessons list --limit 50 |", [
                "--limit", "50"]), ("lessons list --json |", ["--json"])):  # fmt: skip
            seconds, size = median_seconds(
                [*CLI, "lessons", "list", "--store", str(store), *extra], args.runs
            )
            print(f"  {name:<40} {seconds * 1000:8.1f} ms  {seconds / cli:5.2f} x --help"
                  f"  ({size:,} bytes)")  # fmt: skip


if __name__ == "__main__":
    main()
