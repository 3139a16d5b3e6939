"""What a file lock costs the hook: `active_memory.file_lock` beside the `filelock` library.

Run: `.venv/bin/python bench/lock_bench.py` (options: --runs N, --locks N). `filelock` is
not a dependency; install it into the venv to compare (`.venv/bin/pip install filelock`),
else only our lock is measured.

A command hook is a new interpreter per tool call and takes the session's ledger lock on
every call that may deliver a card, so what the lock's module imports is paid on each of
them. Measured, in this order:

1. **Import in a new interpreter**: wall time of `python -c pass` (the baseline), `python
   -c "import active_memory.file_lock"` and `python -c "import filelock"`, started
   alternately (one of each per round, `--runs` rounds), median and min-max.
2. **What the import loads**: modules beyond a bare interpreter's, and which of them the
   hook's warm path must not import (the list of tests/test_hook_command.py, `HEAVY`).
3. **Acquire and release, uncontended**, in process: `--locks` cycles of each lock on a
   file that exists, alternated in blocks, median per cycle.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# tests/test_hook_command.py: what the hook's warm path must never import.
HOOK_FORBIDDEN = ("pydantic", "anyio", "rich", "sqlite3", "aiosqlite", "json", "re", "typing",
                  "dataclasses", "pathlib", "shlex", "asyncio")  # fmt: skip

IMPORTS = {
    "python -c pass (baseline)": "pass",
    "import active_memory.file_lock": "import active_memory.file_lock",
    "import filelock": "import filelock",
}

_LOADED = """
import sys
before = set(sys.modules)
{statement}
new = sorted(set(sys.modules) - before)
print(" ".join(new))
"""


def has_filelock() -> bool:
    done = subprocess.run([sys.executable, "-c", "import filelock"], capture_output=True)
    return done.returncode == 0


def start_once(statement: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True, cwd=REPO)
    return time.perf_counter() - started


def loaded_by(statement: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED.format(statement=statement)],
        capture_output=True, text=True, check=True, cwd=REPO,
    )  # fmt: skip
    return done.stdout.split()


def filelock_version() -> str:
    done = subprocess.run(
        [sys.executable, "-c", "import filelock; print(filelock.__version__)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def cycle_ours(path: str) -> Callable[[], None]:
    from active_memory.file_lock import FileLock

    def run() -> None:
        with FileLock(path):
            pass

    return run


def cycle_filelock(path: str) -> Callable[[], None]:
    import filelock  # type: ignore[import-not-found, unused-ignore]  # compared when installed

    def run() -> None:
        # A new object per cycle, as a hook process makes one; the lock file kept, as
        # ours is (creating a file per cycle would measure the file system, not the lock).
        with filelock.FileLock(path, timeout=5, preserve_lock_file=True):
            pass

    return run


def per_cycle(run: Callable[[], None], count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        run()
    return (time.perf_counter() - started) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="interpreter starts per row")
    parser.add_argument("--locks", type=int, default=2000, help="lock cycles per block")
    args = parser.parse_args()
    library = has_filelock()
    rows = {name: stmt for name, stmt in IMPORTS.items() if library or stmt != "import filelock"}
    print(f"Python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} CPUs; load "
          f"{os.getloadavg()[0]:.2f}; filelock "
          f"{filelock_version() if library else 'not installed'}")  # fmt: skip

    for statement in rows.values():  # warm the bytecode caches and the page cache
        start_once(statement)
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.runs):
        for name, statement in rows.items():
            times[name].append(start_once(statement))
    bare = statistics.median(times["python -c pass (baseline)"])
    print(f"\nimport in a new interpreter (wall, {args.runs} alternated rounds)")
    print(f"  {'':34}{'median':>10}{'min':>9}{'max':>9}{'over bare':>12}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"  {name:<34}{median * 1000:8.1f}ms{min(samples) * 1000:7.1f}ms"
              f"{max(samples) * 1000:7.1f}ms{(median - bare) * 1000:+10.1f}ms")  # fmt: skip

    print("\nmodules the import loads beyond a bare interpreter")
    for name, statement in rows.items():
        if statement == "pass":
            continue
        new = loaded_by(statement)
        ours = [m for m in new if m.split(".")[0] in ("active_memory", "filelock")]
        forbidden = [m for m in HOOK_FORBIDDEN if m in new]
        print(f"  {name:<34}{len(new) - len(ours):4} standard-library / other, {len(ours)} own")
        print(f"  {'':34}forbidden on the hook path: {', '.join(forbidden) or 'none'}")

    print(f"\nacquire + release, uncontended, in process ({args.locks} cycles x 5 blocks)")
    with tempfile.TemporaryDirectory() as folder:
        cycles = {"active_memory.file_lock.FileLock": cycle_ours(os.path.join(folder, "a.lock"))}
        if library:
            cycles["filelock.FileLock"] = cycle_filelock(os.path.join(folder, "b.lock"))
        per: dict[str, list[float]] = {name: [] for name in cycles}
        for run in cycles.values():
            per_cycle(run, 100)  # warm-up, creates the file
        for _ in range(5):
            for name, run in cycles.items():
                per[name].append(per_cycle(run, args.locks))
        for name, samples in per.items():
            print(f"  {name:<34}{statistics.median(samples) * 1e6:8.1f} µs per cycle")


if __name__ == "__main__":
    main()
