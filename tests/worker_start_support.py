"""Session ends fired as harnesses fire them, for the tests of the automatic worker: the
real `active-memory-hook session-end claude` processes, a settings file, and readers of
what the worker left (the queue, its log, its spend ledger)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from queue_support import claude_end, costly_transcript

HOOK = Path(sys.executable).with_name("active-memory-hook")
CLI = Path(sys.executable).with_name("active-memory")
AUTO = "ACTIVE_MEMORY_AUTO_WORKER"


def settings(state: Path, text: str) -> Path:
    """Write the user's settings file of the state folder `state`."""
    path = state / "active-memory" / "settings.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def hook_environment(base: Mapping[str, str], state: Path, **extra: str) -> dict[str, str]:
    """A harness's environment for its hooks: the automatic worker allowed."""
    env = {k: v for k, v in base.items() if k != AUTO}
    return {**env, "ZEROSHOT_STATE_DIR": str(state), **extra}


def costly_ends(root: Path, count: int) -> list[dict[str, Any]]:
    """`count` Claude Code session ends, each of a costly session in its own folder."""
    ends = []
    for index in range(count):
        session = f"s-{index}"
        transcript = costly_transcript(root / f"{session}.jsonl", session, f"/w/{session}")
        ends.append(claude_end(session, transcript, f"/w/{session}"))
    return ends


def fire(ends: list[dict[str, Any]], store: Path | str, env: Mapping[str, str]) -> None:
    """Every session end at once, each through its own hook process, as harnesses do."""
    started = [
        subprocess.Popen(
            [str(HOOK), "session-end", "claude", "--store", str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
        )
        for _ in ends
    ]
    for process, end in zip(started, ends, strict=True):
        out, err = process.communicate(json.dumps(end).encode(), timeout=60)
        assert (process.returncode, out, err) == (0, b"", b""), err


def rows(store: Path) -> list[dict[str, Any]]:
    """The queue's entries, read beside whatever else uses the store."""
    with sqlite3.connect(store, timeout=30) as raw:
        raw.row_factory = sqlite3.Row
        found = raw.execute(
            "SELECT session_id, state, attempts, reason, result, host FROM postmortem_queue"
        ).fetchall()
    return [{**dict(row), "result": json.loads(row["result"] or "null")} for row in found]


def wait_for(store: Path, done: Any, timeout: float) -> list[dict[str, Any]]:
    """The entries once `done(entries)` holds (or the last seen, after `timeout`)."""
    deadline = time.monotonic() + timeout
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        if store.exists():
            try:
                found = rows(store)
            except sqlite3.OperationalError:
                found = []
            if found and done(found):
                return found
        time.sleep(0.5)
    return found


def worker_log(folder: Path) -> str:
    """Everything the automatic workers of `folder`'s stores said."""
    return "".join(p.read_text() for p in sorted(folder.glob("*.log")))


def workers_alive(folder: Path) -> list[int]:
    """Pids of the workers still holding a lock in `folder` (from their status files)."""
    alive = []
    for status in folder.glob("*.json"):
        pid = int(json.loads(status.read_text()).get("pid") or 0)
        try:
            os.kill(pid, 0)
        except OSError:
            continue
        alive.append(pid)
    return alive


def wait_until_gone(folder: Path, timeout: float) -> list[int]:
    """Wait for every worker of `folder` to exit; the pids still alive after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and workers_alive(folder):
        time.sleep(0.3)
    return workers_alive(folder)


def stop_workers(folder: Path) -> None:
    """A failed test must not leave its worker running."""
    import signal

    for pid in workers_alive(folder):
        os.kill(pid, signal.SIGKILL)
