"""Nothing lost when the shared store is away (issue 29 item 8): PostgreSQL stopped for
10 s while three sessions end and a worker runs. The session-end hooks keep their ends in
the spool; the worker says in one line that the store is unreachable and when it tries
again; after the restart it queues the spooled ends and finishes all three, and nothing
it printed is a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from pg_cluster import Cluster
from queue_support import claude_end, quiet_transcript

from active_memory.store import open_store
from active_memory.store.queue import QueueEntry

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

CLI = Path(sys.executable).with_name("active-memory")
HOOK = Path(sys.executable).with_name("active-memory-hook")
OUTAGE = 10.0


def entries(url: str) -> list[QueueEntry]:
    async def read() -> list[QueueEntry]:
        async with open_store(url) as store:
            return await store.queue.entries()

    return anyio.run(read, backend="asyncio")


def wait_for_line(path: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not in {path.read_text() if path.exists() else '(nothing)'}")


def test_three_sessions_ending_while_postgres_is_down_are_queued_and_done_after(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "ZEROSHOT_STATE_DIR": str(tmp_path / "state"), "CI": "true",
           "PATH": "/usr/bin:/bin"}  # fmt: skip
    with Cluster() as pg:
        assert entries(pg.url) == []  # the store is made
        stderr = tmp_path / "worker.err"
        with stderr.open("w") as err:
            worker = subprocess.Popen(
                [str(CLI), "worker", "--store", pg.url, "--poll", "0.2"],
                stdout=subprocess.DEVNULL, stderr=err, env=env,
            )  # fmt: skip
        try:
            wait_for_line(stderr, "worker: worker pid", 60)
            pg.stop()
            stopped = time.monotonic()
            for index in range(3):
                session = f"s-{index}"
                transcript = quiet_transcript(tmp_path / f"{session}.jsonl", session, "/w")
                done = subprocess.run(
                    [str(HOOK), "session-end", "claude", "--store", pg.url],
                    input=json.dumps(claude_end(session, transcript, "/w")), text=True,
                    capture_output=True, env=env, timeout=60, check=False,
                )  # fmt: skip
                assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
            wait_for_line(stderr, "store unreachable", 30)
            time.sleep(max(0.0, OUTAGE - (time.monotonic() - stopped)))
            pg.start()
            deadline = time.monotonic() + 120
            found: list[QueueEntry] = []
            while time.monotonic() < deadline:
                found = entries(pg.url)
                if len(found) == 3 and all(e.state == "done" for e in found):
                    break
                time.sleep(0.5)
        finally:
            worker.send_signal(signal.SIGTERM)
            code = worker.wait(timeout=60)
    said = stderr.read_text()
    assert sorted((e.session_id, e.state, e.attempts) for e in found) == [
        ("s-0", "done", 1), ("s-1", "done", 1), ("s-2", "done", 1),
    ], said  # fmt: skip
    assert code == 0, said
    assert "Traceback" not in said and "Exception" not in said, said
    lines = [line for line in said.splitlines() if "store unreachable" in line]
    assert lines and all(line.endswith(" s") and "retrying in" in line for line in lines), said
    assert "password" not in said
    assert "queued 3 session end(s) kept in the spool" in said
    assert "store reachable again" in said
    log = (tmp_path / "state" / "active-memory" / "recall" / "hook.log").read_text()
    assert log.count("waits in the spool") == 3
