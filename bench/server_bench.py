"""Benchmark of the resident recall server, with baselines measured in the same run.

Run: `.venv/bin/python bench/server_bench.py` (options: --lessons N, --requests N).

A store of --lessons repository lessons (default 10,000) is frozen into one run's
snapshot by the server's first call; then --requests hook calls are timed one after the
other over one keep-alive connection, as Claude Code's HTTP hook client sends them.
Figures are percentiles of single round trips, printed next to two baselines from the
same run: a raw TCP echo round trip on loopback, and the server's own trivial health
request (same HTTP stack, no recall). The command hook's whole process is timed too,
with the server and alone, next to a bare `python -c pass`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from active_memory.hooks.client import ask_server
from active_memory.hooks.recall_answer import make_answer
from active_memory.lessons import Associations, Author, Card, CreateLesson, RepositoryScope
from active_memory.store.sqlite import SqliteStore

REPOSITORY = "repo:github.com/acme/bench"
AUTHOR = Author(specialist="repository_discovery", run_id="run-bench", model="bench-model")
RECOMMENDATION = (
    "After editing the schema, regenerate the client with `make api-client` and commit the "
    "generated files in the same change; CI compares them and fails the build otherwise."
)
CLI = [sys.executable, "-c", "from active_memory.cli import run; run()"]
# The console script the installers write (bench/README.md, "Recall"); -m if missing.
_SCRIPT = Path(sys.executable).with_name("active-memory-hook")
HOOK = (
    [str(_SCRIPT), "claude"]
    if _SCRIPT.exists()
    else [sys.executable, "-m", "active_memory.hooks.command", "claude"]
)
RUN_ID = "bench-run"


def creates(n: int) -> list[CreateLesson]:
    """`n` repository lessons of realistic size: two files, a folder, an identifier, a group."""
    scope = RepositoryScope(repository=REPOSITORY)
    return [
        CreateLesson(
            scope=scope,
            card=Card(
                title=f"Lesson {i}: regenerate the api client",
                recommendation=RECOMMENDATION,
                associations=Associations(
                    files=[f"api/schema_{i}.json", f"clients/gen_{i}.py"],
                    folders=[f"services/svc_{i}"],
                    identifiers=[f"ApiClient{i}"],
                    keywords=[["openapi", f"schema{i}"]],
                ),
            ),
            author=AUTHOR,
        )
        for i in range(n)
    ]


async def fill_store(path: Path, n: int) -> None:
    store = await SqliteStore.open(path)
    try:
        await store.publish(creates(n))
    finally:
        await store.aclose()


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    """p50, p90, p99 of `samples` (seconds)."""
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return statistics.median(ordered), pick(0.90), pick(0.99)


def sample(action: Callable[[], object], n: int) -> list[float]:
    """Seconds of each of `n` calls of `action` (after 50 warm-up calls)."""
    for _ in range(50):
        action()
    times = []
    for _ in range(n):
        began = time.perf_counter()
        action()
        times.append(time.perf_counter() - began)
    return times


def sample_pair(
    first: Callable[[], object], second: Callable[[], object], n: int
) -> tuple[list[float], list[float]]:
    """Like `sample` for two actions, alternated call by call, so that both meet the same
    machine and the same state (a session ledger costs more while its folder is young)."""
    for _ in range(50):
        first()
        second()
    a: list[float] = []
    b: list[float] = []
    for _ in range(n):
        for action, times in ((first, a), (second, b)):
            began = time.perf_counter()
            action()
            times.append(time.perf_counter() - began)
    return a, b


def echo_server() -> tuple[int, Callable[[], None]]:
    """A raw TCP echo server on loopback (the floor of any round trip); port, stopper."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stopping = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while not stopping.is_set() and (data := conn.recv(65536)):
                conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()

    def stop() -> None:
        stopping.set()
        listener.close()

    return listener.getsockname()[1], stop


def checkout(root: Path) -> Path:
    repo = root / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/bench.git\n'
    )
    return repo


def hook_body(repo: Path, session: str, path: str) -> bytes:
    return json.dumps(
        {
            "session_id": session,
            "cwd": str(repo),
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": str(repo / path)},
        }
    ).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=2_000)
    parser.add_argument("--processes", type=int, default=30, help="command hook runs timed")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        store = root / "lessons.sqlite3"
        began = time.perf_counter()
        anyio.run(fill_store, store, args.lessons, backend="asyncio")
        print(f"store of {args.lessons:,} lessons built in {time.perf_counter() - began:.1f} s")
        repo = checkout(root)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
        env["ZEROSHOT_STATE_DIR"] = str(root / "state")
        server = subprocess.Popen(
            [*CLI, "serve", "--port", "0", "--store", str(store)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stderr is not None
            banner = server.stderr.readline()
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+) ", banner)
            if not found:
                raise SystemExit(f"server did not start: {banner}")
            port = int(found.group(1))
            token = (root / "state" / "active-memory" / "server.token").read_text().strip()
            measure(args, port, token, repo, env, store)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=10)
            server.stderr and server.stderr.close()


def measure(
    args: argparse.Namespace, port: int, token: str, repo: Path, env: dict[str, str], store: Path
) -> None:
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "X-Active-Memory-Env-ACTIVE_MEMORY_RUN_ID": RUN_ID,
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def post(body: bytes) -> dict[str, object]:
        conn.request("POST", "/active-memory/v1/hook/claude", body, headers)
        response = conn.getresponse()
        answer: dict[str, object] = json.loads(response.read())
        return answer

    # The run's first call freezes the 10,000-lesson snapshot: timed alone.
    began = time.perf_counter()
    first = post(hook_body(repo, "first", "api/schema_1.json"))
    freeze = time.perf_counter() - began
    assert "hookSpecificOutput" in first, first

    def health() -> None:
        conn.request("GET", "/active-memory/v1/health")
        conn.getresponse().read()

    echo_port, stop_echo = echo_server()
    echo = socket.create_connection(("127.0.0.1", echo_port))
    echo.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    probe = hook_body(repo, "x", "api/schema_1.json")

    def tcp_round_trip() -> None:
        echo.sendall(probe)
        received = 0
        while received < len(probe):
            received += len(echo.recv(65536))

    counter = iter(range(10**9))

    def matching_new_session() -> None:
        i = next(counter)
        answer = post(hook_body(repo, f"s-{i}", f"api/schema_{i % args.lessons}.json"))
        assert "hookSpecificOutput" in answer

    def matching_same_session() -> None:
        post(hook_body(repo, "s-same", "api/schema_7.json"))  # delivered once, then {}

    def unmatched() -> None:
        assert post(hook_body(repo, "s-none", "docs/README.md")) == {}

    client_env = {**env, "ACTIVE_MEMORY_RUN_ID": RUN_ID}

    def thin_client() -> None:
        i = next(counter)
        body = hook_body(repo, f"c-{i}", f"api/schema_{i % args.lessons}.json")
        assert ask_server("claude", body, client_env)

    # The same answers without HTTP: the recall engine alone, in this process, with its
    # own resident cache over the same frozen snapshot (what the server adds is the rest).
    answer = make_answer(env, str(store))
    forwarded = {"ACTIVE_MEMORY_RUN_ID": RUN_ID}
    answer("claude", json.loads(hook_body(repo, "warm", "api/schema_2.json")), forwarded)

    def direct_new_session() -> None:
        i = next(counter)
        body = hook_body(repo, f"d-{i}", f"api/schema_{i % args.lessons}.json")
        assert answer("claude", json.loads(body), forwarded)

    def direct_unmatched() -> None:
        answer("claude", json.loads(hook_body(repo, "d-none", "docs/README.md")), forwarded)

    n = args.requests
    delivered, delivered_direct = sample_pair(matching_new_session, direct_new_session, n)
    unmatched_http, unmatched_direct = sample_pair(unmatched, direct_unmatched, n)
    rows = [
        ("raw TCP echo round trip (baseline)", sample(tcp_round_trip, n)),
        ("GET health, same server (baseline)", sample(health, n)),
        ("hook: card delivered (new session)", delivered),
        ("hook: match already delivered", sample(matching_same_session, n)),
        ("hook: nothing matches", unmatched_http),
        ("thin client ask_server (new conn.)", sample(thin_client, n)),
        ("no HTTP: engine alone, card delivered", delivered_direct),
        ("no HTTP: engine alone, nothing matches", unmatched_direct),
    ]
    echo.close()
    stop_echo()
    conn.close()

    health_p50 = percentiles(rows[1][1])[0]
    print(f"first call of the run (freezes {args.lessons:,} lessons)  {freeze * 1000:9.1f} ms")
    print(f"{'':38} {'p50':>9} {'p90':>9} {'p99':>9}   p50 / health")
    for name, samples in rows:
        p50, p90, p99 = percentiles(samples)
        print(
            f"{name:38} {p50 * 1e3:7.3f}ms {p90 * 1e3:7.3f}ms {p99 * 1e3:7.3f}ms"
            f"   {p50 / health_p50:5.2f} x"
        )
    hook_processes(args.processes, repo, client_env, store)


def hook_processes(n: int, repo: Path, env: dict[str, str], store: Path) -> None:
    """Whole command-hook processes: with the server, alone, and a bare interpreter."""

    def run(command: list[str], body: bytes, run_env: dict[str, str]) -> tuple[float, bytes]:
        began = time.perf_counter()
        done = subprocess.run(command, input=body, env=run_env, capture_output=True, check=True)
        return time.perf_counter() - began, done.stdout

    counter = iter(range(10**9))

    def hook(run_env: dict[str, str], prefix: str) -> float:
        i = next(counter)
        body = hook_body(repo, f"{prefix}-{i}", f"api/schema_{i}.json")
        seconds, output = run(HOOK, body, run_env)
        assert b"additionalContext" in output, (prefix, output)  # a real answer was timed
        return seconds

    # Alone: the discovery file moved aside, so the hook opens the run's frozen snapshot
    # itself. Runs alternate (bare, served, alone) so that machine noise hits all three.
    alone_env = {**env, "ACTIVE_MEMORY_STORE": str(store)}
    state = Path(env["ZEROSHOT_STATE_DIR"]) / "active-memory"
    discovery, hidden = state / "server.json", state / "server.json.hidden"
    bare: list[float] = []
    served: list[float] = []
    alone: list[float] = []
    for _ in range(n):
        bare.append(run([sys.executable, "-c", "pass"], b"", env)[0])
        served.append(hook(env, "p"))
        discovery.rename(hidden)
        try:
            alone.append(hook(alone_env, "a"))
        finally:
            hidden.rename(discovery)
    base = statistics.median(bare)
    print(f"\ncommand hook process, median of {n} (a card delivered each time)")
    print(f"  {'python -c pass (baseline)':38} {base * 1e3:7.1f} ms")
    for name, times in (("hook, server running", served), ("hook, alone (no server)", alone)):
        med = statistics.median(times)
        print(f"  {name:38} {med * 1e3:7.1f} ms   {med / base:5.2f} x start-up")


if __name__ == "__main__":
    main()
