"""Recall benchmark: match latency by snapshot size, and the hook process end to end.

    .venv/bin/python bench/recall_bench.py                 # 1k / 10k / 100k lessons
    .venv/bin/python bench/recall_bench.py --sizes 1000 10000 --runs 60

Prints figures with ratios to baselines measured in the same run (see bench/README.md,
"Recall"). Never a timed test: nothing here fails a build.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from active_memory.recall.environment import resolve_context  # noqa: E402
from active_memory.recall.frame import render_card  # noqa: E402
from active_memory.recall.harness import parse_payload  # noqa: E402
from active_memory.recall.index import (  # noqa: E402
    IndexCard,
    SnapshotIndex,
    build_index,
    write_index,
)
from active_memory.recall.match import match  # noqa: E402
from active_memory.recall.signals import extract_signals  # noqa: E402
from active_memory.recall.snapshot import repository_dir  # noqa: E402

NAMESPACE = "repo:github.com/acme/api"
ROOT = "/work/checkout"
PER_GROUP = 10  # lessons sharing a folder or keyword group, whatever the total


def lessons(count: int) -> list[IndexCard]:
    """Realistic cards; each tool call below matches about the same few, at any size."""
    cards = []
    for n in range(count):
        group = n // PER_GROUP
        lesson_id = f"L-{n + 1}"
        text = render_card(lesson_id, 1, f"Lesson {n} about module {group}",
                           "Run the generator before editing; the checked-in copy is derived. "
                           * 3)  # fmt: skip
        cards.append(
            IndexCard(
                lesson_id,
                1,
                text,
                files=[f"src/pkg{group}/mod{n}.py", f"tests/pkg{group}/test_mod{n}.py"],
                folders=[f"src/pkg{group}"],
                identifiers=[f"HandlerNumber{n}"],
                keywords=[[f"alpha{group}", f"beta{group}"]],
            )
        )
    return cards


def tool_calls(count: int) -> list[dict[str, object]]:
    """Claude Code and Codex payloads touching keys that exist at every size."""
    last = min(count, 1000) - 1
    patch = (
        "*** Begin Patch\n"
        f"*** Update File: src/pkg{last // PER_GROUP}/mod{last}.py\n@@\n-a\n+b\n"
        "*** Add File: docs/new.md\n+x\n"
        f"*** Delete File: tests/pkg3/test_mod31.py\n*** End Patch\n"
    )
    base = {"session_id": "bench", "cwd": ROOT, "hook_event_name": "PreToolUse"}
    return [
        {**base, "tool_name": "Read", "tool_input": {"file_path": f"{ROOT}/src/pkg7/mod71.py"}},
        {**base, "tool_name": "Bash",
         "tool_input": {"command": "cd src/pkg12 && rg -n HandlerNumber123 . --glob '*.py'"}},
        {**base, "tool_name": "Grep",
         "tool_input": {"pattern": r"alpha42_beta42\(", "path": "src"}},
        {**base, "tool_name": "apply_patch", "tool_input": {"command": patch}},
        {**base, "tool_name": "Read", "tool_input": {"file_path": f"{ROOT}/README.md"}},
    ]  # fmt: skip


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_match(sizes: list[int], repeat: int) -> dict[int, tuple[float, float, float, int]]:
    """Per size: p50 and p95 of match only, p50 of signals + match (µs), cards matched."""
    results: dict[int, tuple[float, float, float, int]] = {}
    for size in sizes:
        index = SnapshotIndex.from_built(build_index(lessons(size)))
        index.preload()
        calls = [parse_payload("claude", payload) for payload in tool_calls(size)]
        prepared = [extract_signals(call, ROOT) for call in calls]
        matched = sum(len(match(index, signals)) for signals in prepared)
        only: list[float] = []
        full: list[float] = []
        for _ in range(repeat):
            for call, signals in zip(calls, prepared, strict=True):
                start = time.perf_counter()
                match(index, signals)
                only.append(time.perf_counter() - start)
                start = time.perf_counter()
                match(index, extract_signals(call, ROOT))
                full.append(time.perf_counter() - start)
        results[size] = (
            percentile(only, 0.5) * 1e6,
            percentile(only, 0.95) * 1e6,
            percentile(full, 0.5) * 1e6,
            matched,
        )
    return results


def prepare_hook_state(state: Path, checkout: Path, size: int) -> dict[str, str]:
    """A frozen `size`-lesson snapshot for run `bench-run` (none for 0), and the env."""
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/api.git\n', encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # cached bytecode, as an installed package has
    env.update(
        ZEROSHOT_STATE_DIR=str(state),
        ACTIVE_MEMORY_RUN_ID="bench-run",
        ACTIVE_MEMORY_STORE=str(state / "no-store.sqlite3"),
    )
    call = parse_payload("claude", {"tool_name": "Read", "tool_input": {}, "session_id": "x",
                                    "cwd": str(checkout)})  # fmt: skip
    folder = repository_dir(resolve_context(call, env))
    assert folder is not None
    if size:
        write_index(build_index(lessons(size)), folder)
    return env


def bench_process(runs: int, size: int, compare: Path | None = None) -> dict[str, list[float]]:
    """Wall time of a bare interpreter and of hook processes, interleaved."""
    compileall.compile_dir(str(REPO / "active_memory"), quiet=1)
    work = Path(tempfile.mkdtemp(prefix="recall-bench-"))
    try:
        checkout = work / "api"
        env = prepare_hook_state(work / "state", checkout, size)
        payload = tool_calls(size)[1]
        payload["cwd"] = str(checkout)
        python = sys.executable
        script = Path(python).with_name("active-memory-hook")
        commands: dict[str, list[str]] = {
            "python -c pass": [python, "-c", "pass"],
            "hook: python -m active_memory.hooks.command": [
                python, "-m", "active_memory.hooks.command", "claude"],
            "hook: full CLI (active-memory hook claude)": [
                python, "-c", "import sys; from active_memory.cli import main; "
                "sys.exit(main(['hook', 'claude']))"],
        }  # fmt: skip
        if script.exists():
            commands["hook: active-memory-hook (console script)"] = [str(script), "claude"]
        # The same hook in a checkout that commits `.active-memory.toml` (settings.py):
        # after the first call the parsed file comes from its marshal cache.
        settled = work / "api-with-settings"
        shutil.copytree(checkout, settled)
        (settled / ".active-memory.toml").write_text("budgetBytes = 16384\n", encoding="utf-8")
        with_settings = "hook: python -m …, .active-memory.toml present"
        commands[with_settings] = [python, "-m", "active_memory.hooks.command", "claude"]
        # Another checkout of the package (e.g. main before a change), interleaved with
        # this one so both see the same machine load.
        other_env = dict(env)
        compared = f"hook: python -m …, code from {compare}" if compare else ""
        if compare is not None:
            compileall.compile_dir(str(compare / "active_memory"), quiet=1)
            other_env["PYTHONPATH"] = str(compare)
            commands[compared] = [python, "-m", "active_memory.hooks.command", "claude"]
        times: dict[str, list[float]] = {name: [] for name in commands}
        counter = 0
        for _ in range(runs):
            for name, command in commands.items():
                counter += 1
                payload["session_id"] = f"session-{counter}"  # a fresh budget: cards delivered
                payload["cwd"] = str(settled if name == with_settings else checkout)
                data = json.dumps(payload).encode()
                start = time.perf_counter()
                done = subprocess.run(command, input=data, capture_output=True,
                                      env=other_env if name == compared else env,
                                      cwd=str(REPO), check=True)  # fmt: skip
                times[name].append(time.perf_counter() - start)
                if name != "python -c pass" and b"additionalContext" not in done.stdout:
                    raise SystemExit(f"{name}: no card delivered: {done.stdout!r}")
        log = work / "state" / "active-memory" / "recall" / "hook.log"
        if log.exists():
            raise SystemExit(f"the hook logged errors:\n{log.read_text()}")
        return times
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_formats(size: int, repeat: int = 100) -> list[tuple[str, float, int]]:
    """Cost of loading what one lookup needs, by format: (name, µs per load, bytes)."""
    import marshal
    import pickle

    built = build_index(lessons(size))
    shard = built.key_shards[0]
    as_lists = {key: list(value) for key, value in shard.items()}
    whole: dict[str, object] = {}
    for part in built.key_shards:
        whole.update(part)
    candidates: list[tuple[str, bytes, Callable[[bytes], object]]] = [
        ("one key shard, marshal (chosen)", marshal.dumps(shard), marshal.loads),
        ("one key shard, pickle", pickle.dumps(shard, protocol=5), pickle.loads),
        ("one key shard, JSON", json.dumps(as_lists).encode(), json.loads),
        ("whole key index, marshal (no shards)", marshal.dumps(whole), marshal.loads),
    ]
    results = []
    for name, data, load in candidates:
        rounds = []
        for _ in range(5):  # the best of five rounds: what a load costs, not the noise
            start = time.perf_counter()
            for _ in range(repeat):
                load(data)
            rounds.append((time.perf_counter() - start) / repeat * 1e6)
        results.append((name, min(rounds), len(data)))
    return results


def bench_freeze(size: int) -> tuple[float, float]:
    """A run's first call with `size` lessons in a real store: (hook seconds, bare seconds)."""
    import anyio

    from active_memory.lessons import Associations, Author, Card, CreateLesson, RepositoryScope
    from active_memory.store.sqlite import SqliteStore

    work = Path(tempfile.mkdtemp(prefix="recall-freeze-"))
    try:
        store_path = work / "lessons.sqlite3"
        author = Author(specialist="bench")
        mutations = [
            CreateLesson(
                scope=RepositoryScope(repository=NAMESPACE),
                card=Card(
                    title=f"Lesson {n}",
                    recommendation="Run the generator before editing the derived copy.",
                    associations=Associations(
                        files=[f"src/pkg{n // PER_GROUP}/mod{n}.py"],
                        identifiers=[f"HandlerNumber{n}"],
                        keywords=[[f"alpha{n // PER_GROUP}", f"beta{n // PER_GROUP}"]],
                    ),
                ),
                author=author,
            )
            for n in range(size)
        ]

        async def seed() -> None:
            store = await SqliteStore.open(store_path)
            try:
                await store.publish(mutations)
            finally:
                await store.aclose()

        anyio.run(seed)
        checkout = work / "api"
        env = prepare_hook_state(work / "state", checkout, 0)
        env.update(ACTIVE_MEMORY_RUN_ID="first-call", ACTIVE_MEMORY_STORE=str(store_path))
        payload = tool_calls(size)[0]
        payload["cwd"] = str(checkout)
        payload["tool_input"] = {"file_path": str(checkout / "src/pkg7/mod71.py")}
        script = Path(sys.executable).with_name("active-memory-hook")
        command = [str(script), "claude"] if script.exists() else [
            sys.executable, "-m", "active_memory.hooks.command", "claude"]  # fmt: skip
        start = time.perf_counter()
        done = subprocess.run(command, input=json.dumps(payload).encode(), capture_output=True,
                              env=env, cwd=str(REPO), check=True)  # fmt: skip
        hook = time.perf_counter() - start
        if b"additionalContext" not in done.stdout:
            raise SystemExit(f"first call delivered nothing: {done.stdout!r}")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        return hook, time.perf_counter() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=400, help="match rounds per size")
    parser.add_argument("--runs", type=int, default=40, help="processes per command")
    parser.add_argument("--hook-lessons", type=int, default=10_000)
    parser.add_argument("--compare", type=Path, default=None, metavar="DIR",
                        help="also time the hook from another checkout (e.g. main)")  # fmt: skip
    args = parser.parse_args()

    print(f"Python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} CPUs")
    print("\nin-process match per tool call (resident index, 5 realistic calls)")
    print(f"  {'lessons':>8} {'p50 µs':>8} {'p95 µs':>8} {'+signals p50 µs':>16} "
          f"{'cards':>6} {'p50 / p50@first':>16}")  # fmt: skip
    results = bench_match(args.sizes, args.repeat)
    first = results[args.sizes[0]][0]
    for size, (p50, p95, full, matched) in results.items():
        print(f"  {size:>8,} {p50:>8.1f} {p95:>8.1f} {full:>16.1f} {matched:>6} "
              f"{p50 / first:>16.2f}")  # fmt: skip

    print(f"\nloading what one lookup needs ({args.hook_lessons:,} lessons, best of 5)")
    for name, micros, size in bench_formats(args.hook_lessons):
        print(f"  {name:<46} {micros:9.1f} µs {size:>10,} bytes")

    print(f"\nhook process end to end ({args.hook_lessons:,} lessons, median of {args.runs})")
    times = bench_process(args.runs, args.hook_lessons, args.compare)
    bare = statistics.median(times["python -c pass"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<46} {median * 1000:7.2f} ms   {median / bare:5.2f} x bare")

    print(f"\na run's first call: freezes {args.hook_lessons:,} lessons from a SQLite store")
    hook, bare_once = bench_freeze(args.hook_lessons)
    print(f"  {'first hook call (read store, build, publish)':<46} {hook * 1000:7.1f} ms "
          f"  {hook / bare_once:5.1f} x bare")  # fmt: skip


if __name__ == "__main__":
    main()
