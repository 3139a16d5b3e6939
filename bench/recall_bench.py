"""Recall benchmark: generations, matching bounded by the budget, the hook process, serve.

    .venv/bin/python bench/recall_bench.py                       # everything, 100k lessons
    .venv/bin/python bench/recall_bench.py --sizes 1000 10000 --store-lessons 10000 --runs 10
    .venv/bin/python bench/recall_bench.py --hooks-only --runs 21 --compare /tmp/main-copy
    .venv/bin/python bench/recall_bench.py --hooks-only --bash   # the hooks on a Bash call
    .venv/bin/python bench/recall_bench.py --hooks-only --bash-words   # and 24 bare words
    .venv/bin/python bench/recall_bench.py --matching-only       # the in-process table

Three corpora, side by side:

- `spread`: the old corpus, ten lessons per folder and per keyword group: every tool call
  matches a handful of cards, whatever the size;
- `hot`: what real repositories look like: 10% of the lessons filed under `src/`
  itself, every keyword group sharing the popular term `checkout`, so one `Read` under
  `src/` matches a tenth of the store and one search thousands of keyword groups;
- `core`: the hard case of issue 28 (bench/hot_corpus.py): 30% of the lessons under
  `src/core`, shared keywords, card sizes mixed so that the budget left lies between the
  store's smallest card and the cards a call matches (`Read`s of four of its files).

Figures (every one next to a baseline from the same run, as a ratio):

1. in-process matching per tool call, resident generation, fresh 2 KB session: the
   bounded walk (what hooks and `serve` do) against listing every match (the old way);
2. hook processes over a real SQLite store of --store-lessons `hot` lessons: the first
   call of a new run (pins the current generation) and a warm call, each as median wall
   time and peak RSS against a bare `python -c pass`; the lean entry (as `hook install`
   writes it), pip's console script and `python -m` side by side; the first call when
   `CURRENT` holds no usable stamp (it reads the store, docs/recall.md "Stamps"); the
   first call after a publish (read from the store while the builder catches up) and
   with no generation at all (read from the store; the complete build runs in the
   background builder); the first and a warm call whose path holds an AWS key (the
   credential screen's hard case: the full screen loads to mask the receipt; with
   `--compare`, the other copy's too, interleaved). Every
   ratio is against bare start-ups interleaved with the figure's own calls
   (`--hooks-only`: this section alone);
3. `serve` over the same store: round trips of matching calls of 32 runs (p50/p99) and
   the server's RSS as runs are added.

Never a timed test: nothing here fails a build.
"""

from __future__ import annotations

import argparse
import http.client
import json
import marshal
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from active_memory.recall.build_from_rows import build  # noqa: E402
from active_memory.recall.frame import select  # noqa: E402
from active_memory.recall.harness import parse_payload  # noqa: E402
from active_memory.recall.index import SnapshotIndex  # noqa: E402
from active_memory.recall.ledger import stale_marker  # noqa: E402
from active_memory.recall.match import iter_matches, match  # noqa: E402
from active_memory.recall.signals import extract_signals  # noqa: E402

NAMESPACE = "repo:github.com/acme/api"
ROOT = "/work/checkout"
BUDGET = 2048
RECOMMENDATION = "Run the generator before editing; the checked-in copy is derived. " * 3


def associations(corpus: str, n: int) -> dict[str, Any]:
    """One lesson's associations in `corpus`."""
    if corpus == "spread":
        group = n // 10
        return {"files": [f"src/pkg{group}/mod{n}.py"], "folders": [f"src/pkg{group}"],
                "identifiers": [f"HandlerNumber{n}"],
                "keywords": [[f"alpha{group}", f"beta{group}"]]}  # fmt: skip
    module = n % 500
    return {"files": [f"src/mod{module}/file{n}.py"],
            "folders": ["src"] if n % 10 == 0 else [f"src/mod{module}"],
            "identifiers": [f"Handler{n}", "ApiClient"] if n % 100 == 0 else [f"Handler{n}"],
            "keywords": [["checkout", f"term{n % 50}"]]}  # fmt: skip


def rows(corpus: str, count: int) -> list[tuple[Any, ...]]:
    """Store change rows (store/changes.py shape) of `count` lessons."""
    if corpus == "core":  # the hard case of issue 28 (bench/hot_corpus.py)
        import hot_corpus

        found = []
        for n in range(count):
            given = hot_corpus.lesson(n)
            found.append((f"L-{n + 1}", 1, "active", given["title"], given["recommendation"],
                          json.dumps(given["associations"])))  # fmt: skip
        return found
    return [
        (f"L-{n + 1}", 1, "active", f"Lesson {n} about module {n % 500}", RECOMMENDATION,
         json.dumps(associations(corpus, n)))
        for n in range(count)
    ]  # fmt: skip


def tool_calls(corpus: str) -> list[dict[str, Any]]:
    """Claude Code payloads; in `hot` the first three match thousands of cards."""
    base = {"session_id": "bench", "cwd": ROOT, "hook_event_name": "PreToolUse"}
    if corpus == "core":
        inputs = [("Read", {"file_path": f"{ROOT}/src/core/mod{n}.py"}) for n in (7, 33, 54, 91)]
    elif corpus == "spread":
        inputs = [("Read", {"file_path": f"{ROOT}/src/pkg7/mod71.py"}),
                  ("Bash", {"command": "cd src/pkg12 && rg -n HandlerNumber123 ."}),
                  ("Grep", {"pattern": r"alpha42_beta42\(", "path": "src"}),
                  ("Read", {"file_path": f"{ROOT}/README.md"})]  # fmt: skip
    else:
        inputs = [("Read", {"file_path": f"{ROOT}/src/mod7/file7.py"}),
                  ("Bash", {"command": "cd src && rg -n ApiClient ."}),
                  ("Grep", {"pattern": "checkout_term3", "path": "docs"}),
                  ("Read", {"file_path": f"{ROOT}/README.md"})]  # fmt: skip
    return [{**base, "tool_name": tool, "tool_input": given} for tool, given in inputs]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_matching(corpus: str, size: int, repeat: int, work: Path) -> dict[str, float]:
    """p50/p99 µs of the bounded walk and of listing every match; cards matched."""
    path = work / f"{corpus}-{size}.gen"
    build(None, rows(corpus, size), {}, matched=True, path=str(path))
    index = SnapshotIndex.open(str(path))
    prepared = [extract_signals(parse_payload("claude", call), ROOT)
                for call in tool_calls(corpus)]  # fmt: skip
    matched = sum(len(match(index, signals)) for signals in prepared)  # warms the shards
    # Two separate loops: interleaved, the listing's garbage would trigger collections
    # that land in the bounded walk's samples.
    bounded: list[float] = []
    listed: list[float] = []
    mark = stale_marker(ROOT)  # as delivery asks it (these cards cite nothing)
    for _ in range(repeat):
        for signals in prepared:
            start = time.perf_counter()
            select(iter_matches(index, signals), set(), BUDGET, floor=index.min_card, mark=mark)
            bounded.append(time.perf_counter() - start)
    for _ in range(max(1, repeat // 4)):
        for signals in prepared:
            start = time.perf_counter()
            select(match(index, signals), set(), BUDGET)
            listed.append(time.perf_counter() - start)
    return {"p50": pct(bounded, 0.5) * 1e6, "p99": pct(bounded, 0.99) * 1e6,
            "all_p50": pct(listed, 0.5) * 1e6, "all_p99": pct(listed, 0.99) * 1e6,
            "matched": matched / len(prepared)}  # fmt: skip


def seed_store(path: Path, count: int) -> float:
    """A SQLite store of `count` hot lessons; seconds it took."""
    import anyio

    from active_memory.lessons import Associations, Author, Card, CreateLesson, RepositoryScope
    from active_memory.store.sqlite import SqliteStore

    author = Author(specialist="bench")
    scope = RepositoryScope(repository=NAMESPACE)
    mutations = [
        CreateLesson(scope=scope, author=author, card=Card(
            title=f"Lesson {n} about module {n % 500}", recommendation=RECOMMENDATION,
            associations=Associations(**associations("hot", n))))
        for n in range(count)
    ]  # fmt: skip

    async def seed() -> None:
        store = await SqliteStore.open(path)
        try:
            for start in range(0, count, 20_000):
                await store.publish(mutations[start : start + 20_000])
        finally:
            await store.aclose()

    began = time.perf_counter()
    anyio.run(seed)
    return time.perf_counter() - began


def publish_more(path: Path, count: int, tag: str, state: Path | None = None) -> float:
    """Publish `count` lessons; with `state`, through `open_store` with recall's refresh
    subscribed, as every command does (so it refreshes that state dir's generations);
    seconds it took."""
    import anyio

    from active_memory.commands.common import refresh_recall
    from active_memory.lessons import Associations, Author, Card, CreateLesson, RepositoryScope
    from active_memory.store import on_store_change, open_store
    from active_memory.store.sqlite import SqliteStore

    async def seed() -> None:
        if state is not None:
            os.environ["ZEROSHOT_STATE_DIR"] = str(state)
            unsubscribe = on_store_change(refresh_recall)
            try:
                async with open_store(str(path)) as opened:
                    await opened.publish(mutations())
            finally:
                unsubscribe()
            return
        store = await SqliteStore.open(path)
        try:
            await store.publish(mutations())
        finally:
            await store.aclose()

    def mutations() -> list[CreateLesson]:
        return [
                CreateLesson(scope=RepositoryScope(repository=NAMESPACE),
                             author=Author(specialist="bench"),
                             card=Card(title=f"{tag} {n}", recommendation=RECOMMENDATION,
                                       associations=Associations(folders=["src"])))
                for n in range(count)
            ]  # fmt: skip

    began = time.perf_counter()
    anyio.run(seed)
    return time.perf_counter() - began


# A small launcher process starts each measured process: a child's peak RSS counts the
# memory of the process it was forked from, so forking from this (large) bench would
# report the bench's size. The launcher is a bare interpreter, as is the baseline.
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
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "rss": usage.ru_maxrss,
                  "code": os.waitstatus_to_exitcode(status),
                  "out": base64.b64encode(out).decode()}))
"""


def run_child(command: list[str], data: bytes, env: dict[str, str]) -> tuple[float, int, bytes]:
    """Wall seconds, peak RSS (KiB) and stdout of one process, started by the launcher."""
    import base64

    job = {"command": command, "env": env, "cwd": str(REPO),
           "data": base64.b64encode(data).decode()}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", LAUNCHER], input=json.dumps(job).encode(),
                          capture_output=True, check=True)  # fmt: skip
    result = json.loads(done.stdout)
    if result["code"]:
        raise SystemExit(f"{command}: exit {result['code']}")
    return result["seconds"], result["rss"], base64.b64decode(result["out"])


BASH_COMMAND = "cd src/mod7 && timeout 60 pytest file7.py -q"
BARE_WORDS_COMMAND = "bd update " + " ".join(f"bead-{n}.{n}" for n in range(24))
"""The hard case of shell_paths' rule: bare words that name nothing, each looked up until
the per-call bound (types.MAX_LOOKUPS)."""


def bench_hooks(
    count: int,
    runs: int,
    work: Path,
    *,
    serve: bool = True,
    compare: str = "",
    bash: bool = False,
    bash_words: bool = False,
) -> None:
    from active_memory.hooks.installers.command_path import install_hook_entry
    from active_memory.hooks.lean import compile_hook_path

    compile_hook_path()
    checkout = work / "api"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/api.git\n', encoding="utf-8"
    )
    store = work / "lessons.sqlite3"
    print(f"\nseeding a SQLite store with {count:,} hot lessons: "
          f"{seed_store(store, count):.1f} s")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(ZEROSHOT_STATE_DIR=str(work / "state"), ACTIVE_MEMORY_STORE=str(store))
    payload = tool_calls("hot")[0]
    payload["cwd"] = str(checkout)
    payload["tool_input"] = {"file_path": str(checkout / "src/mod7/file7.py")}
    if bash:
        # A shell call: its command family is read too (a file match still delivers).
        payload["tool_name"] = "Bash"
        payload["tool_input"] = {"command": BASH_COMMAND}
        if bash_words:
            payload["tool_input"] = {"command": f"{BASH_COMMAND} && {BARE_WORDS_COMMAND}"}
    python = sys.executable
    # The entry exactly as `hook install` writes it (under the state dir), and by its path.
    entry, note = install_hook_entry(None, write=True, env=env)
    if note:
        raise SystemExit(note)
    lean = str(entry)
    module = [python, "-m", "active_memory.hooks.command", "claude"]
    console = str(Path(python).with_name("active-memory-hook"))

    def call(command: list[str], run: str, session: str, code: str = "") -> tuple[float, int]:
        payload["session_id"] = session
        extra = {"PYTHONPATH": code} if code else {}
        seconds, rss, out = run_child(command, json.dumps(payload).encode(),
                                      {**env, "ACTIVE_MEMORY_RUN_ID": run, **extra})  # fmt: skip
        if b"additionalContext" not in out:
            raise SystemExit(f"{command}: no card delivered: {out!r}")
        return seconds, rss

    bare = [run_child([python, "-c", "pass"], b"", env) for _ in range(runs)]
    bare_s = statistics.median(b[0] for b in bare)
    bare_rss = statistics.median(b[1] for b in bare) / 1024
    print(f"  {'python -c pass (baseline)':<52} {bare_s * 1000:8.1f} ms {bare_rss:7.1f} MiB")

    from active_memory.recall.generations import read_current, scope_dir
    from active_memory.store.changes import ScopeKey

    folder = scope_dir(str(work / "state" / "active-memory" / "recall"), str(store),
                       ScopeKey("repository", repository=NAMESPACE))  # fmt: skip
    payload["session_id"] = "cold"
    began = time.perf_counter()
    cold, cold_rss, out = run_child([lean, "claude"], json.dumps(payload).encode(),
                                    {**env, "ACTIVE_MEMORY_RUN_ID": "cold"})  # fmt: skip
    print(f"  {'first call, no generation yet (read from the store)':<52} {cold * 1000:8.1f} ms "
          f"{cold_rss / 1024:7.1f} MiB {cold / bare_s:7.1f} x bare  "
          f"(answered {'a card' if b'additionalContext' in out else 'nothing'})")  # fmt: skip
    while read_current(folder) is None:
        time.sleep(0.05)
    built = time.perf_counter() - began
    print(f"  {'  the background complete build, until CURRENT':<52} {built * 1000:8.1f} ms")

    def bare_call() -> float:
        return run_child([python, "-c", "pass"], b"", env)[0]

    def row(label: str, values: list[float], bares: list[float], rss: str, note: str) -> None:
        # Each call against the bare start-up just before it (the median of those
        # ratios): the load of a shared machine moves both alike.
        median = statistics.median(values)
        ratio = statistics.median(value / bare for value, bare in zip(values, bares, strict=True))
        print(f"  {label:<52} {median * 1000:8.1f} ms {rss:>11} {ratio:7.2f} x bare"
              f"{note}")  # fmt: skip

    variants = [("lean entry", [lean, "claude"], ""),
                ("pip console script", [console, "claude"], ""),
                ("python -m", module, "")]  # fmt: skip
    if compare:
        # The same entry running another copy of the package (PYTHONPATH wins over the
        # editable install), right after ours: same store, its own interleaved bares.
        variants.insert(1, (f"lean entry, {Path(compare).name}", [lean, "claude"], compare))
    for name, command, code in variants:
        call(command, f"{name}-warm", f"{name}-w", code)  # pins the warm run
        firsts, warms, bares = [], [], []
        for n in range(runs):
            bares.append(bare_call())
            firsts.append(call(command, f"{name}-first-{n}", f"{name}-f{n}", code))
            warms.append(call(command, f"{name}-warm", f"{name}-w{n}", code))
        for label, values in (("first call of a run", firsts), ("warm call", warms)):
            rss = f"{max(v[1] for v in values) / 1024:7.1f} MiB"
            row(f"{label}, {name}", [v[0] for v in values], bares, rss, "")
    # The hard case of the credential screen (issue 27): a path that holds a key, so the
    # lean gate says yes and the full screen (`re` and its compiled rules) loads to mask
    # the receipt before it is written.
    # With `--compare`, the other copy's screen runs the same calls, interleaved with
    # ours (each against the bare start-up just before it).
    plain = payload["tool_input"]
    payload["tool_input"] = {"file_path": str(checkout / "src/mod7/AKIAIOSFODNN7EXAMPLE.py")}
    keyed = [("lean entry", "")] + ([(f"lean entry, {Path(compare).name}", compare)]
                                    if compare else [])  # fmt: skip
    timings: dict[str, tuple[list[tuple[float, int]], list[tuple[float, int]], list[float]]] = {}
    for name, code in keyed:
        call([lean, "claude"], f"secret-warm-{name}", f"secret-w-{name}", code)  # pins it
        timings[name] = ([], [], [])
    for n in range(runs):
        for name, code in keyed:
            firsts, warms, bares = timings[name]
            bares.append(bare_call())
            firsts.append(call([lean, "claude"], f"secret-first-{name}-{n}", f"sf{name}{n}",
                               code))  # fmt: skip
            warms.append(call([lean, "claude"], f"secret-warm-{name}", f"sw{name}{n}", code))
    for name, (firsts, warms, bares) in timings.items():
        for label, values in (("first call of a run", firsts), ("warm call", warms)):
            rss = f"{max(v[1] for v in values) / 1024:7.1f} MiB"
            row(f"{label}, {name}, a path holding a key", [v[0] for v in values], bares, rss,
                "")  # fmt: skip
    payload["tool_input"] = plain
    # The same first call when CURRENT holds no usable stamp (store written less than
    # STAMP_QUIET_SECONDS before it was last checked, or the stamp expired): it reads the
    # store's version and changes through sqlite3, then stamps CURRENT again.
    unstamped, bares = [], []
    for n in range(runs):
        pointer = marshal.loads((Path(folder) / "CURRENT").read_bytes())
        pointer.pop("stamp", None)
        (Path(folder) / "CURRENT").write_bytes(marshal.dumps(pointer))
        bares.append(bare_call())
        unstamped.append(call([lean, "claude"], f"unstamped-{n}", f"unstamped-{n}")[0])
    row("first call of a run, lean entry, reads the store", unstamped, bares, "", "")
    after, bares = [], []
    for n in range(3):
        publish_more(store, 10, f"Published {n}")
        bares.append(bare_call())
        after.append(call([lean, "claude"], f"after-publish-{n}", f"after-{n}")[0])
    row("first call, 10 published bypassing the refresh", after, bares, "",
        "  (read from the store; built in the background)")  # fmt: skip
    sessions, after, bares = [], [], []
    for n in range(3):
        sessions.append(publish_more(store, 10, f"Refreshed {n}", state=work / "state"))
        bares.append(bare_call())
        after.append(call([lean, "claude"], f"after-refresh-{n}", f"refresh-{n}")[0])
    writer = statistics.median(sessions) * 1000
    row("first call, 10 published through open_store", after, bares, "",
        f"  (the writer built it: publish + refresh {writer:.0f} ms)")  # fmt: skip
    again = statistics.median(run_child([python, "-c", "pass"], b"", env)[0] for _ in range(runs))
    print(f"  {'python -c pass (baseline, again)':<52} {again * 1000:8.1f} ms")
    if serve:
        bench_serve(store, checkout, env, work)


def serve_only(count: int, work: Path) -> None:
    """The `serve` section alone: a seeded store, its generation built in this process."""
    from active_memory.recall.building import refresh
    from active_memory.recall.sources import source_for
    from active_memory.store.changes import ScopeKey

    checkout = work / "api"
    (checkout / ".git").mkdir(parents=True)
    (checkout / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/api.git\n', encoding="utf-8"
    )
    store = work / "lessons.sqlite3"
    print(f"\nseeding a SQLite store with {count:,} hot lessons: "
          f"{seed_store(store, count):.1f} s")  # fmt: skip
    scope = ScopeKey("repository", repository=NAMESPACE)
    recall_dir = str(work / "state" / "active-memory" / "recall")
    refresh(recall_dir, str(store), scope, source_for(str(store), scope))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env.update(ZEROSHOT_STATE_DIR=str(work / "state"), ACTIVE_MEMORY_STORE=str(store))
    bench_serve(store, checkout, env, work)
    serve_breakdown(env, checkout)


def bench_serve(store: Path, checkout: Path, env: dict[str, str], work: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", "from active_memory.cli import run; run()", "serve", "--port",
         "0", "--store", str(store)], env=env, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert server.stderr is not None
        banner = server.stderr.readline()
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+) ", banner)
        if not found:
            raise SystemExit(f"server did not start: {banner}")
        token = (work / "state" / "active-memory" / "server.token").read_text().strip()
        conn = http.client.HTTPConnection("127.0.0.1", int(found.group(1)), timeout=120)

        def post(run: str, session: str, path: str, card: bool = True) -> float:
            body = json.dumps(
                {
                    "session_id": session,
                    "cwd": str(checkout),
                    "hook_event_name": "PreToolUse",
                    "tool_name": "Read",
                    "tool_input": {"file_path": str(checkout / path)},
                }
            ).encode()
            headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                       "X-Active-Memory-Env-ACTIVE_MEMORY_RUN_ID": run}  # fmt: skip
            start = time.perf_counter()
            conn.request("POST", "/active-memory/v1/hook/claude", body, headers)
            answer = conn.getresponse().read()
            if card and b"additionalContext" not in answer:
                raise SystemExit(f"serve: no card: {answer!r}")
            return time.perf_counter() - start

        def health() -> float:
            start = time.perf_counter()
            conn.request("GET", "/active-memory/v1/health")
            conn.getresponse().read()
            return time.perf_counter() - start

        def rss() -> float:
            status = Path(f"/proc/{server.pid}/status").read_text()
            return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]

        print(f"\nserve over the same store ({'run count':>9}: RSS)")
        firsts: list[float] = []
        samples: list[float] = []
        later: list[float] = []
        marks = {1, 8, 16, 32}
        for run in range(32):
            firsts.append(post(f"run-{run}", f"run-{run}-first", f"src/mod{run}/x.py"))
            for n in range(40):
                samples.append(post(f"run-{run}", f"run-{run}-s{n}", f"src/mod{n}/x.py"))
            # The first session again: it matches as many cards, its budget already spent.
            for n in range(40):
                later.append(post(f"run-{run}", f"run-{run}-first", f"src/mod{n}/y.py", False))
            if run + 1 in marks:
                print(f"  {run + 1:>9} runs: {rss():7.1f} MiB")
        baseline = [health() for _ in range(400)]
        print(f"  health (baseline)     p50 {pct(baseline, 0.5) * 1000:7.2f} ms   "
              f"p99 {pct(baseline, 0.99) * 1000:7.2f} ms")  # fmt: skip
        print(f"  first call of a run   p50 {pct(firsts, 0.5) * 1000:7.2f} ms   "
              f"p99 {pct(firsts, 0.99) * 1000:7.2f} ms")  # fmt: skip
        print(
            f"  matching call         p50 {pct(samples, 0.5) * 1000:7.2f} ms   "
            f"p99 {pct(samples, 0.99) * 1000:7.2f} ms   ({len(samples)} calls, 32 runs)"
        )
        print(f"  later call, budget spent p50 {pct(later, 0.5) * 1000:7.2f} ms   "
              f"p99 {pct(later, 0.99) * 1000:7.2f} ms   (same matches, no card left)")  # fmt: skip
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def serve_breakdown(env: dict[str, str], checkout: Path, calls: int = 1280) -> None:
    """Where a `serve` matching call's time goes: the engine in this process, as the
    server's worker runs it (resident generation, a fresh session per call), each stage
    timed by a wrapper; HTTP and the server's own work are the rest of the round trip."""
    import active_memory.recall.engine as engine
    import active_memory.recall.ledger as ledger
    from active_memory.recall import SnapshotCache, answer_hook

    spent: dict[str, list[float]] = {}
    call_spent: dict[str, list[float]] = {}

    def timed(label: str, function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                call_spent.setdefault(label, []).append(time.perf_counter() - start)

        return wrapper

    cache = SnapshotCache()
    patched = [(engine, "resolve_context"), (engine, "extract_signals"),
               (engine, "record_receipt"), (ledger, "record_deliveries"),
               (ledger, "write_state"), (engine, "admit"), (os, "fdatasync")]  # fmt: skip
    saved = [(module, name, getattr(module, name)) for module, name in patched]
    labels = {"resolve_context": "context (identity, settings)", "extract_signals": "signals",
              "record_receipt": "receipt append", "record_deliveries": "delivery append",
              "write_state": "ledger replace", "admit": "admit (all ledger work)",
              "fdatasync": "  of which fdatasync"}  # fmt: skip
    for module, name, function in saved:
        setattr(module, name, timed(labels[name], function))
    cache.repository_index = timed("generation lookup", cache.repository_index)  # type: ignore[method-assign]
    base = {**env, "ACTIVE_MEMORY_RUN_ID": ""}
    totals: list[float] = []
    try:
        for n in range(calls + 32):
            run = f"breakdown-{n // 41}"
            target = str(checkout / f"src/mod{n % 41}/x.py")
            payload = {"session_id": f"{run}-s{n}", "cwd": str(checkout),
                       "hook_event_name": "PreToolUse", "tool_name": "Read",
                       "tool_input": {"file_path": target}}  # fmt: skip
            call_spent.clear()
            start = time.perf_counter()
            answer = answer_hook("claude", payload, {**base, "ACTIVE_MEMORY_RUN_ID": run},
                                 cache=cache)  # fmt: skip
            if n % 41 == 0:  # a run's first call (it pins): not a matching call
                continue
            totals.append(time.perf_counter() - start)
            for label, values in call_spent.items():
                spent.setdefault(label, []).append(sum(values))
            if "hookSpecificOutput" not in answer:
                raise SystemExit(f"breakdown: no card: {answer!r}")
    finally:
        for module, name, function in saved:
            setattr(module, name, function)
    print(f"\nwhere a matching call's time goes (engine in-process, {len(totals)} calls; ms)")
    print(f"  {'stage':<34} {'p50':>7} {'p99':>7} {'mean':>7}")
    for label in [*labels.values(), "generation lookup"]:
        values = spent.get(label, [])
        if values:
            print(f"  {label:<34} {pct(values, 0.5) * 1000:7.3f} {pct(values, 0.99) * 1000:7.3f}"
                  f" {statistics.mean(values) * 1000:7.3f}")  # fmt: skip
    print(f"  {'whole answer':<34} {pct(totals, 0.5) * 1000:7.3f} {pct(totals, 0.99) * 1000:7.3f}"
          f" {statistics.mean(totals) * 1000:7.3f}")  # fmt: skip


def sub_folder_calls(root: str, cwd: str) -> list[dict[str, object]]:
    """Calls an agent makes from `cwd` inside a real checkout: relative paths that name a
    file from the working directory, from the root only, or not at all."""
    base = {"session_id": "bench", "cwd": cwd, "hook_event_name": "PreToolUse"}
    return [
        {**base, "tool_name": "Read", "tool_input": {"file_path": "pkg7/mod71.py"}},
        {**base, "tool_name": "Read", "tool_input": {"file_path": "src/pkg7/mod71.py:40"}},
        {**base, "tool_name": "Bash",
         "tool_input": {"command": "pytest tests/pkg3/test_mod31.py::test_one -q"}},
        {**base, "tool_name": "Write", "tool_input": {"file_path": "pkg9/new.py"}},
        {**base, "tool_name": "Read", "tool_input": {"file_path": f"{root}/README.md"}},
    ]  # fmt: skip


def bench_signals(repeat: int) -> list[tuple[str, float]]:
    """p50 µs of reading the signals of five calls, from the root and from `src/`."""
    with tempfile.TemporaryDirectory() as folder:
        root = os.path.join(folder, "checkout")
        for name in ("src/pkg7/mod71.py", "tests/pkg3/test_mod31.py", "README.md"):
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            Path(root, name).write_text("x\n")
        figures = []
        for label, cwd in (("cwd = root", root), ("cwd = root/src", os.path.join(root, "src"))):
            calls = [parse_payload("claude", p) for p in sub_folder_calls(root, cwd)]
            times: list[float] = []
            for _ in range(repeat):
                start = time.perf_counter()
                for call in calls:
                    extract_signals(call, root)
                times.append(time.perf_counter() - start)
            figures.append((label, pct(times, 0.5) * 1e6))
        # The hard case of shell_paths' rule alone: 24 bare words, 16 of them looked up.
        base = {"session_id": "bench", "cwd": root, "hook_event_name": "PreToolUse"}
        bash = {"tool_name": "Bash", "tool_input": {"command": BARE_WORDS_COMMAND}}
        words = parse_payload("claude", {**base, **bash})
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            extract_signals(words, root)
            times.append(time.perf_counter() - start)
        figures.append(("one Bash call of 24 bare words", pct(times, 0.5) * 1e6))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=200, help="match rounds per size")
    parser.add_argument("--store-lessons", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=15, help="processes per command")
    parser.add_argument(
        "--signals-only", action="store_true", help="only the signals from a sub-folder"
    )
    parser.add_argument(
        "--hooks-only", action="store_true", help="only the hook processes (no serve)"
    )
    parser.add_argument(
        "--compare", default="", metavar="DIR",
        help="also time the lean entry running the package in DIR (e.g. `git archive` of "
        "main), interleaved with this one",
    )  # fmt: skip
    parser.add_argument(
        "--serve-only", action="store_true", help="only `serve` over --store-lessons hot lessons"
    )
    parser.add_argument(
        "--matching-only", action="store_true", help="only the in-process matching table"
    )
    parser.add_argument(
        "--bash", action="store_true",
        help="the hook calls are a Bash call (`cd src/mod7 && timeout 60 pytest …`), not a Read",
    )  # fmt: skip
    parser.add_argument(
        "--bash-words", action="store_true",
        help="with --bash: the call also runs `bd update` with 24 bare words (existence checks)",
    )  # fmt: skip
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} CPUs, "
          f"load {' '.join(f'{n:.2f}' for n in os.getloadavg())}")  # fmt: skip
    if args.serve_only:
        work = Path(tempfile.mkdtemp(prefix="recall-bench-"))
        try:
            serve_only(args.store_lessons, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    if args.hooks_only:
        work = Path(tempfile.mkdtemp(prefix="recall-bench-"))
        try:
            print(f"\nhook processes, {args.store_lessons:,} hot lessons "
                  f"(median of {args.runs}; RSS: peak)")  # fmt: skip
            bench_hooks(args.store_lessons, args.runs, work, serve=False, compare=args.compare,
                        bash=args.bash or args.bash_words, bash_words=args.bash_words)  # fmt: skip
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    print("\nsignals of 5 calls in a real checkout (relative paths, pytest node IDs)")
    figures = bench_signals(args.repeat * 5)
    for label, micros in figures:
        print(f"  {label:<46} {micros:7.1f} µs  {micros / figures[0][1]:5.2f} x root")
    if args.signals_only:
        return
    work = Path(tempfile.mkdtemp(prefix="recall-bench-"))
    try:
        print(f"\nin-process matching per tool call, {BUDGET} B session budget, resident "
              "generation (µs)")  # fmt: skip
        print(f"  {'corpus':<7} {'lessons':>8} {'matches':>8} {'p50':>8} {'p99':>8} "
              f"{'all p50':>9} {'all p99':>9} {'all/bounded p50':>16}")  # fmt: skip
        for corpus in ("spread", "hot", "core"):
            for size in args.sizes:
                r = bench_matching(corpus, size, args.repeat, work)
                print(f"  {corpus:<7} {size:>8,} {r['matched']:>8.0f} {r['p50']:>8.1f} "
                      f"{r['p99']:>8.1f} {r['all_p50']:>9.1f} {r['all_p99']:>9.1f} "
                      f"{r['all_p50'] / r['p50']:>16.1f}")  # fmt: skip
        if args.matching_only:
            return
        print(f"\nhook processes, {args.store_lessons:,} hot lessons "
              f"(median of {args.runs}; RSS: peak)")  # fmt: skip
        bench_hooks(args.store_lessons, args.runs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
