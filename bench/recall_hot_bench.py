"""Recall on the hard case, 100k and 1M lessons (issue 28): every file of the hot folder.

    .venv/bin/python bench/recall_hot_bench.py --lessons 100000 --dir /tmp/recall-hot-100k \\
        --sections build,hooks,serve,engine --rounds 5
    .venv/bin/python bench/recall_hot_bench.py --lessons 1000000 --dir /tmp/recall-hot-1m \\
        --sections build,hooks,rebuild

The store (bench/hot_corpus.py: a hot folder `src/core` with 30% of the lessons, keywords
shared, card sizes mixed) is seeded once into `--dir` and reused by later runs (a 1M
store takes minutes to seed); so is its generation, unless `--sections` names `build`.

Sections, each figure next to a baseline measured in the same run:

- `build`: the background builder (`python -m active_memory.recall.builder`) makes the
  scope's complete generation from the store: wall time and its peak RSS;
- `hooks`: for every one of the 97 files of the hot folder, `--rounds` times: a bare
  `python -c pass`, then the lean hook entry (as `hook install` writes it) making a new
  session's first call on that file (the session is a run of its own: it pins the
  generation, then walks the hot folder), then the same session's next call on the next
  file. Per file: the median over its rounds of each call's time over the bare
  start-up just before it (what a call met), and its fastest call over the run's median
  bare start-up (its own cost: a busy machine only adds); printed: the median file and
  the worst file by each, with the worst file's rounds;
- `serve`: `active-memory serve` over the same store, `--sessions` sessions of
  `--calls-per-session` `Read`s of hot files each, in runs of 10 sessions: p50/p99 of the
  calls that delivered a card (a run's first call apart: it pins the run and makes its
  files) and of those that did not, beside two baselines taken after every session, in
  the same seconds: `GET /health`, and one line appended and flushed (`fdatasync`) in the
  recall folder, which is what a delivering call must wait for; plus `GET /health` from
  a second client every 5 ms during the calls (how long the event loop is held); the
  server's RSS after the first tenth of the calls (warm-up) and at the end;
- `engine`: the same calls answered in this process as the server answers them, each
  call's flush timed: a delivering call's whole time, its `fdatasync`, and the rest;
- `rebuild`: lessons imported with IDs that sort in the middle force a complete build;
  the builder (started here, so its peak RSS is known) rebuilds the scope while hook
  calls run: warm calls of a run pinned before, and first calls of new sessions (which
  read their pinned version from the store until the generation exists): p50 and p99 of
  each, and the builder's time and peak RSS.

Never a timed test: nothing here fails a build.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import hot_corpus  # noqa: E402

LAUNCHER = """
import base64, json, os, subprocess, sys, time
job = json.loads(sys.stdin.read())
start = time.perf_counter()
child = subprocess.Popen(job["command"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=job["env"], cwd=job["cwd"])
child.stdin.write(base64.b64decode(job["data"]))
child.stdin.close()
out = child.stdout.read()
_, status, usage = os.wait4(child.pid, 0)
print(json.dumps({"seconds": time.perf_counter() - start, "rss": usage.ru_maxrss,
                  "code": os.waitstatus_to_exitcode(status),
                  "out": base64.b64encode(out).decode()}))
"""


def run_child(command: list[str], data: bytes, env: dict[str, str]) -> tuple[float, int, bytes]:
    """Wall seconds, peak RSS (KiB) and stdout of one process, started by a bare launcher
    (a child's peak RSS would otherwise count this large bench's)."""
    job = {"command": command, "env": env, "cwd": str(REPO),
           "data": base64.b64encode(data).decode()}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", LAUNCHER], input=json.dumps(job).encode(),
                          capture_output=True, check=True)  # fmt: skip
    result = json.loads(done.stdout)
    if result["code"]:
        raise SystemExit(f"{command}: exit {result['code']}")
    return result["seconds"], result["rss"], base64.b64decode(result["out"])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class World:
    """The store, its state folder, a checkout and the environment of hook processes."""

    def __init__(self, folder: Path, lessons: int) -> None:
        self.folder = folder
        self.store = folder / "lessons.sqlite3"
        self.state = folder / "state"
        self.recall = self.state / "active-memory" / "recall"
        self.checkout = folder / "api"
        (self.checkout / ".git").mkdir(parents=True, exist_ok=True)
        (self.checkout / ".git" / "config").write_text(
            '[remote "origin"]\n\turl = git@github.com:acme/api.git\n', encoding="utf-8"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(ZEROSHOT_STATE_DIR=str(self.state), ACTIVE_MEMORY_STORE=str(self.store))
        self.env = env
        self.lessons = lessons

    def seed(self) -> None:
        marker = self.folder / f"seeded-{self.lessons}"
        if marker.exists():
            print(f"store of {self.lessons:,} lessons reused from {self.store}")
            return
        for stale in self.folder.glob("lessons.sqlite3*"):
            stale.unlink()
        print(f"seeding {self.lessons:,} lessons into {self.store} ...", flush=True)
        seconds = hot_corpus.seed(self.store, self.lessons, progress=False)
        marker.write_text(str(seconds))
        print(f"  seeded in {seconds:.0f} s")

    def scope_folder(self) -> Path:
        from active_memory.recall.generations import scope_dir
        from active_memory.store.changes import ScopeKey

        scope = ScopeKey("repository", repository=hot_corpus.NAMESPACE)
        return Path(scope_dir(str(self.recall), str(self.store), scope))

    def builder(self) -> list[str]:
        return [sys.executable, "-m", "active_memory.recall.builder", str(self.recall),
                str(self.store), "repository", hot_corpus.NAMESPACE, "", ""]  # fmt: skip

    def payload(self, session: str, path: str) -> bytes:
        call = {"session_id": session, "cwd": str(self.checkout),
                "hook_event_name": "PreToolUse", "tool_name": "Read",
                "tool_input": {"file_path": str(self.checkout / path)}}  # fmt: skip
        return json.dumps(call).encode()


def build_section(world: World) -> None:
    import shutil

    shutil.rmtree(world.recall, ignore_errors=True)  # generations, pins, ledgers: all of it
    seconds, rss, _ = run_child(world.builder(), b"", world.env)
    size = sum(p.stat().st_size for p in world.scope_folder().glob("*.gen"))
    print(f"\ncomplete build of {world.lessons:,} lessons (background builder process)")
    print(
        f"  {seconds:8.1f} s   peak RSS {rss / 1024:7.1f} MiB   generation {size / 2**20:.0f} MiB"
    )


def hooks_section(world: World, rounds: int, entry: str) -> None:
    python = sys.executable
    files = hot_corpus.hot_files()
    firsts: dict[str, list[float]] = {path: [] for path in files}
    laters: dict[str, list[float]] = {path: [] for path in files}
    first_times: dict[str, list[float]] = {path: [] for path in files}
    later_times: dict[str, list[float]] = {path: [] for path in files}
    bares: list[float] = []
    rss = 0
    delivered = 0
    for round_number in range(rounds):
        for number, path in enumerate(files):
            session = f"hot-{os.getpid()}-{round_number}-{number}"
            bare = run_child([python, "-c", "pass"], b"", world.env)[0]
            bares.append(bare)
            first, first_rss, out = run_child([entry, "claude"], world.payload(session, path),
                                              world.env)  # fmt: skip
            if b"additionalContext" not in out:
                raise SystemExit(f"{path}: the first call delivered nothing: {out!r}")
            later, _, out2 = run_child([entry, "claude"],
                                       world.payload(session, files[(number + 1) % len(files)]),
                                       world.env)  # fmt: skip
            delivered += b"additionalContext" in out2
            firsts[path].append(first / bare)
            laters[path].append(later / bare)
            first_times[path].append(first)
            later_times[path].append(later)
            rss = max(rss, first_rss)
    bare_ms = statistics.median(bares) * 1000
    print(
        f"\nhook processes over {world.lessons:,} lessons: every file of {hot_corpus.HOT} "
        f"({len(files)}), {rounds} rounds, lean entry; ratio = call / bare just before it"
    )
    print(f"  python -c pass (baseline)            {bare_ms:7.1f} ms")
    bare = statistics.median(bares)
    for label, table, times in (
        ("first call of a new session", firsts, first_times),
        ("later call, same session", laters, later_times),
    ):
        # Per file: the median over its rounds of each call over the bare start-up just
        # before it (what a call met), and its fastest call over the run's median bare
        # start-up (its own cost: a busy machine only adds); the median file and the
        # worst file by each.
        for how, per_file in (
            ("median of rounds", {path: statistics.median(v) for path, v in table.items()}),
            ("fastest / bare  ", {path: min(v) / bare for path, v in times.items()}),
        ):
            worst = max(per_file, key=lambda key: per_file[key])
            values = sorted(per_file.values())
            spread = " ".join(f"{value:.2f}" for value in table[worst])
            print(
                f"  {label:<28} {how}: median file {statistics.median(values):5.2f} x"
                f"   p90 {pct(values, 0.9):5.2f} x   worst file {per_file[worst]:5.2f} x "
                f"({worst}; its rounds {spread})"
            )
    print(
        f"  peak RSS of a first call             {rss / 1024:7.1f} MiB; later calls that "
        f"delivered a card: {delivered}/{len(files) * rounds}"
    )


def disk_sync(descriptor: int, n: int) -> float:
    """Seconds to append one line to an open file and flush it to the disk (`fdatasync`):
    what the durability rule costs a delivering call on this disk at this moment."""
    start = time.perf_counter()
    os.write(descriptor, f'{{"n": {n}}}\n'.encode())
    os.fdatasync(descriptor)
    return time.perf_counter() - start


PROBER = """
import http.client, json, select, sys, time
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=120)
times = []
while not select.select([sys.stdin], [], [], 0.005)[0]:
    start = time.perf_counter()
    conn.request("GET", "/active-memory/v1/health")
    conn.getresponse().read()
    times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


class Prober:
    """A second client, a process of its own, asking `GET /health` every 5 ms while the
    calls run: how long the server's event loop is held by other calls (a delivering
    call's flush, say)."""

    def __init__(self, port: int) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", PROBER, str(port)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip

    def stop(self) -> list[float]:
        """Its timings, once it stopped."""
        out, _ = self.process.communicate(b"stop\n", timeout=60)
        times: list[float] = json.loads(out)
        return times


def serve_section(world: World, sessions: int, per_session: int) -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", "from active_memory.cli import run; run()", "serve", "--port",
         "0", "--store", str(world.store), "--no-ui"], env=world.env, stderr=subprocess.PIPE,
        text=True)  # fmt: skip
    sync_path = world.recall / f"sync-baseline-{os.getpid()}.jsonl"
    descriptor = os.open(sync_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        assert server.stderr is not None
        banner = server.stderr.readline()
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+) ", banner)
        if not found:
            raise SystemExit(f"server did not start: {banner}")
        port = int(found.group(1))
        token = (world.state / "active-memory" / "server.token").read_text().strip()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        files = hot_corpus.hot_files()

        def rss() -> float:
            status = Path(f"/proc/{server.pid}/status").read_text()
            match = re.search(r"VmRSS:\s+(\d+)", status)
            return int(match.group(1)) / 1024 if match else 0.0

        def health() -> float:
            start = time.perf_counter()
            conn.request("GET", "/active-memory/v1/health")
            conn.getresponse().read()
            return time.perf_counter() - start

        # Per session of the measured part: its calls, then one health request and one
        # flushed line, so the baselines meet the same machine and disk as the calls.
        delivering: list[float] = []
        first_of_run: list[float] = []
        quiet: list[float] = []
        baseline: list[float] = []
        syncs: list[float] = []
        warm_rss: list[float] = []
        prober: Prober | None = None
        for session in range(sessions):
            measured = session >= sessions // 10  # the first tenth is warm-up
            if measured and prober is None:
                prober = Prober(port)
            run = f"serve-{os.getpid()}-{session // 10}"
            for call in range(per_session):
                body = world.payload(f"s{os.getpid()}-{session}",
                                     files[(session * 7 + call * 13) % len(files)])  # fmt: skip
                headers = {"Authorization": f"Bearer {token}",
                           "X-Active-Memory-Env-ACTIVE_MEMORY_RUN_ID": run}  # fmt: skip
                start = time.perf_counter()
                conn.request("POST", "/active-memory/v1/hook/claude", body, headers)
                answer = conn.getresponse().read()
                seconds = time.perf_counter() - start
                if not measured:
                    continue
                if b"additionalContext" not in answer:
                    quiet.append(seconds)
                elif call == 0 and session % 10 == 0:
                    first_of_run.append(seconds)  # pins the run, makes its files
                else:
                    delivering.append(seconds)
            if measured:
                baseline.append(health())
                syncs.append(disk_sync(descriptor, session))
                if session % 50 == 0:
                    warm_rss.append(rss())
        probes = prober.stop() if prober is not None else []
        total = sessions * per_session
        print(
            f"\nserve over {world.lessons:,} lessons: {sessions:,} sessions x {per_session} "
            f"calls on hot files ({total:,}; the first tenth is warm-up), a run per 10 "
            "sessions; the baselines are taken between sessions, in the same seconds"
        )
        rows = [
            ("health (baseline)", baseline),
            ("fdatasync of a line (baseline)", syncs),
            ("health from a second client", probes),
            ("calls that delivered a card", delivering + first_of_run),
            ("  of which a run's first call", first_of_run),
            ("  the others", delivering),
            ("calls that delivered none", quiet),
        ]
        for label, values in rows:
            if values:
                print(
                    f"  {label:<32} p50 {pct(values, 0.5) * 1000:6.2f} ms   "
                    f"p99 {pct(values, 0.99) * 1000:6.2f} ms   ({len(values):,})"
                )
        print(f"  RSS after warm-up: max {max(warm_rss):6.1f} MiB, at the end {rss():6.1f} MiB")
    finally:
        os.close(descriptor)
        sync_path.unlink(missing_ok=True)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


def engine_section(world: World, sessions: int, per_session: int) -> None:
    """The serve section's calls answered in this process (no HTTP), the way the server
    answers them, each call's flush timed: where a delivering call's time goes."""
    from active_memory.hooks.recall_answer import make_answer

    flushes: list[float] = []
    real_sync = os.fdatasync

    def timed_sync(fd: Any) -> None:
        start = time.perf_counter()
        real_sync(fd)
        flushes.append(time.perf_counter() - start)

    os.fdatasync = timed_sync  # every flush an answer makes is a delivery's
    answer = make_answer(world.env)
    files = hot_corpus.hot_files()
    rows: dict[str, list[tuple[float, float]]] = {"delivered": [], "first": [], "none": []}
    for session in range(sessions):
        run = f"engine-{os.getpid()}-{session // 10}"
        for call in range(per_session):
            path = files[(session * 7 + call * 13) % len(files)]
            payload = json.loads(world.payload(f"e{os.getpid()}-{session}", path))
            forwarded = {"ACTIVE_MEMORY_RUN_ID": run}
            flushes.clear()
            start = time.perf_counter()
            thunk = answer.quick("claude", payload, forwarded)
            if thunk is None:
                document = answer("claude", payload, forwarded)
            else:
                document, commit = thunk()
                if commit is not None:
                    commit()
            seconds = time.perf_counter() - start
            if session < sessions // 10:
                continue
            if "hookSpecificOutput" not in document:
                kind = "none"
            else:
                kind = "first" if call == 0 and session % 10 == 0 else "delivered"
            rows[kind].append((seconds, sum(flushes)))
    os.fdatasync = real_sync
    print("\nthe same calls answered in-process (no HTTP): where the time goes")
    for label, values in (("calls that delivered a card", rows["delivered"] + rows["first"]),
                          ("  of which a run's first call", rows["first"]),
                          ("  the others", rows["delivered"]),
                          ("calls that delivered none", rows["none"])):  # fmt: skip
        if not values:
            continue
        parts = (("whole", [v[0] for v in values]), ("its fdatasync", [v[1] for v in values]),
                 ("the rest", [v[0] - v[1] for v in values]))  # fmt: skip
        print(f"  {label:<30} " + "; ".join(
            f"{name} p50 {pct(part, 0.5) * 1000:5.2f} p99 {pct(part, 0.99) * 1000:6.2f} ms"
            for name, part in parts))  # fmt: skip


def rebuild_section(world: World, calls: int, entry: str) -> None:
    import anyio

    from active_memory.lessons import Associations, Author, Lesson, RepositoryScope
    from active_memory.store.sqlite import SqliteStore

    files = hot_corpus.hot_files()
    pinned_run = f"pinned-{os.getpid()}"
    run_child([entry, "claude"], world.payload(pinned_run, files[0]), world.env)

    def measure(label: str, keep_going: Any) -> None:
        bares: list[float] = []
        warm: list[float] = []
        first: list[float] = []
        number = 0
        while keep_going() and number < calls:
            path = files[number % len(files)]
            bares.append(run_child([sys.executable, "-c", "pass"], b"", world.env)[0])
            warm.append(run_child([entry, "claude"], world.payload(pinned_run, path),
                                  world.env)[0])  # fmt: skip
            session = f"{label[:5]}-{os.getpid()}-{number}"
            first.append(run_child([entry, "claude"], world.payload(session, path),
                                   world.env)[0])  # fmt: skip
            number += 1
        print(f"  {label}: {number} calls of each kind")
        if not number:
            return
        for name, values in (("python -c pass (baseline)", bares), ("warm call, pinned run", warm),
                             ("first call of a new session", first)):  # fmt: skip
            p50, p99 = pct(values, 0.5) * 1000, pct(values, 0.99) * 1000
            print(f"    {name:<29} p50 {p50:7.1f} ms   p99 {p99:7.1f} ms   p99/p50 "
                  f"{p99 / p50:5.2f}")  # fmt: skip
        both = warm + first
        print(f"    {'all hook calls':<29} p99/p50 {pct(both, 0.99) / pct(both, 0.5):5.2f}")

    print(
        f"\nhook calls over {world.lessons:,} lessons, without and then during a complete "
        "rebuild (3 lessons imported with IDs in the middle)"
    )
    measure("no build running", lambda: True)
    middle = world.lessons // 2
    scope = RepositoryScope(repository=hot_corpus.NAMESPACE)
    imported = [
        Lesson(id=f"L-{middle}x{os.getpid()}-{n}", revision=1, scope=scope, title=f"Imported {n}",
               recommendation="Imported in the middle of the IDs.",
               associations=Associations(folders=[hot_corpus.HOT]))
        for n in range(3)
    ]  # fmt: skip

    async def import_them() -> None:
        async with await SqliteStore.open(world.store) as store:
            await store.import_lessons(imported, Author(specialist="bench"))

    anyio.run(import_them)
    starting = world.scope_folder() / "starting"
    starting.write_text("bench")  # the bench starts the builder itself: its RSS is known
    result: dict[str, Any] = {}

    def build() -> None:
        result["seconds"], result["rss"], _ = run_child(world.builder(), b"", world.env)

    thread = threading.Thread(target=build)
    thread.start()
    time.sleep(1.0)
    measure("during the rebuild (new sessions read their version from the store)",
            thread.is_alive)  # fmt: skip
    thread.join()
    print(
        f"  the rebuild: {result['seconds']:.1f} s, builder peak RSS {result['rss'] / 1024:.1f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=100_000)
    parser.add_argument("--dir", type=Path, required=True, help="where the store is kept")
    parser.add_argument("--sections", default="build,hooks,serve,engine",
                        help="any of build, hooks, serve, engine, rebuild")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--calls-per-session", type=int, default=10)
    parser.add_argument("--rebuild-calls", type=int, default=300)
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    print(f"Python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} CPUs, "
          f"load {' '.join(f'{n:.2f}' for n in os.getloadavg())}")  # fmt: skip
    args.dir.mkdir(parents=True, exist_ok=True)
    world = World(args.dir, args.lessons)
    world.seed()
    from active_memory.hooks.installers.command_path import install_hook_entry
    from active_memory.hooks.lean import compile_hook_path

    compile_hook_path()
    entry, note = install_hook_entry(None, write=True, env=world.env)
    if note:
        raise SystemExit(note)
    if "build" in sections or not (world.scope_folder() / "CURRENT").exists():
        build_section(world)
    if "hooks" in sections:
        hooks_section(world, args.rounds, str(entry))
    if "serve" in sections:
        serve_section(world, args.sessions, args.calls_per_session)
    if "engine" in sections:
        engine_section(world, args.sessions, args.calls_per_session)
    if "rebuild" in sections:
        rebuild_section(world, args.rebuild_calls, str(entry))
    print(f"\nload at the end {' '.join(f'{n:.2f}' for n in os.getloadavg())}")


if __name__ == "__main__":
    main()
