"""What mounting the web view under /ui/ costs `serve`'s hook path, in the same run.

Run: `.venv/bin/python bench/ui_mount_bench.py` (options: --lessons N, --requests N).

Two `active-memory serve` processes over one store of --lessons repository lessons: one
with `--no-ui` (the baseline), one as `serve` starts by default (the web view mounted,
built at its first /ui/ request). Matching hook calls are timed one after the other over
a keep-alive connection per server, alternated call by call so both meet the same
machine. Then the mounted server's web view is opened (one page) and its hook calls are
timed again, against the baseline again. RSS of both servers is read after each phase.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from server_bench import CLI, checkout, fill_store, hook_body, percentiles, sample_pair


def start(store: Path, state: Path, *extra: str) -> tuple[subprocess.Popen[str], int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env["ZEROSHOT_STATE_DIR"] = str(state)
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--store", str(store), *extra],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    banner = process.stderr.readline()
    found = re.search(r"listening on http://127\.0\.0\.1:(\d+) ", banner)
    if not found:
        raise SystemExit(f"server did not start: {banner}")
    token = (state / "active-memory" / "server.token").read_text().strip()
    return process, int(found.group(1)), token


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def caller(port: int, token: str, repo: Path, session: str) -> Callable[[], None]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "X-Active-Memory-Env-ACTIVE_MEMORY_RUN_ID": f"run-{session}"}  # fmt: skip
    count = [0]

    def call() -> None:
        count[0] += 1
        # A new session every 20 calls: the budget never runs dry, cards keep coming.
        body = hook_body(repo, f"{session}-{count[0] // 20}", f"api/schema_{count[0] % 500}.json")
        conn.request("POST", "/active-memory/v1/hook/claude", body=body, headers=headers)
        answer = conn.getresponse()
        answer.read()
        assert answer.status == 200

    return call


def row(name: str, samples: list[float], baseline: float) -> str:
    p50, p90, p99 = percentiles(samples)
    return (
        f"{name:<40}{p50 * 1000:8.3f}ms{p90 * 1000:8.3f}ms{p99 * 1000:8.3f}ms"
        f"{p50 / baseline:8.2f} x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=2_000)
    parser.add_argument("--requests", type=int, default=1_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        store = root / "lessons.sqlite3"
        anyio.run(fill_store, store, args.lessons, backend="asyncio")
        repo = checkout(root)
        bare, bare_port, bare_token = start(store, root / "bare", "--no-ui")
        mounted, port, token = start(store, root / "mounted")
        try:
            plain = caller(bare_port, bare_token, repo, "bare")
            with_ui = caller(port, token, repo, "mounted")
            print(f"{args.lessons:,} lessons, {args.requests:,} calls per row, alternated")
            print(f"{'':<40}{'p50':>10}{'p90':>10}{'p99':>10}{'p50 ratio':>10}")
            a, b = sample_pair(plain, with_ui, args.requests)
            base = percentiles(a)[0]
            print(row("serve --no-ui (baseline)", a, base))
            print(row("serve, web view mounted, unused", b, base))
            rss = (rss_mib(bare.pid), rss_mib(mounted.pid))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            began = time.perf_counter()
            conn.request("GET", "/ui/api/lessons", headers={"Authorization": f"Bearer {token}"})
            answer = conn.getresponse()
            answer.read()
            first = time.perf_counter() - began
            assert answer.status == 200, answer.status
            a, b = sample_pair(plain, with_ui, args.requests)
            base = percentiles(a)[0]
            print(row("serve --no-ui (baseline, again)", a, base))
            print(row("serve, web view built and open", b, base))
            print(f"first /ui/api/lessons (imports, store open, {args.lessons:,} lessons): "
                  f"{first * 1000:.0f} ms")  # fmt: skip
            print(f"RSS after hook calls: --no-ui {rss[0]:.1f} MiB, mounted unused "
                  f"{rss[1]:.1f} MiB; mounted after the view opened "
                  f"{rss_mib(mounted.pid):.1f} MiB")  # fmt: skip
        finally:
            for process in (bare, mounted):
                process.terminate()
                process.wait(timeout=20)


if __name__ == "__main__":
    main()
