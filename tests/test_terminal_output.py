"""What people see on a real terminal (a pseudo-terminal): `init` prints a summary there
and JSON with `--json` or to a pipe; `init` and `lessons import` show progress on
stderr while they work (docs/init.md, docs/store.md)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
from init_support import History

ENTRY = "import sys; from active_memory.cli import run; sys.argv[0] = 'active-memory'; run()"


def on_terminal(args: list[str], env: dict[str, str], timeout: float = 120) -> tuple[int, str]:
    """Run `active-memory ARGS` with stdout and stderr on a pseudo-terminal; its exit
    code and everything it printed (ANSI codes and all)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-c", ENTRY, *args], stdin=subprocess.DEVNULL, stdout=follower,
        stderr=follower, env=env, close_fds=True,
    )  # fmt: skip
    os.close(follower)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], timeout)
            if not ready:
                process.kill()
                pytest.fail(f"no output for {timeout} s: {b''.join(chunks)[-2000:]!r}")
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is done
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    return process.wait(timeout=30), b"".join(chunks).decode("utf-8", errors="replace")


def _env(history: History, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}  # CI turns live displays off
    env.update(history.environ)
    env.update(COLUMNS="160", LINES="50", TERM="xterm", **extra)
    return env


def test_init_on_a_terminal_prints_a_summary_and_with_json_one_document(tmp_path: Path) -> None:
    history = History(tmp_path)
    store = str(tmp_path / "lessons.sqlite3")
    session = tmp_path / "session"
    args = ["init", "--directory", str(session), "--runs", str(history.runs),
            "--ignore-repos", "delta", "--ignore-graphs", "legacy", "--store", store]  # fmt: skip
    code, out = on_terminal(args, _env(history))
    assert code == 0, out
    assert "init: discovery" in out and f"session {session}" in out
    assert "Runs: 5 selected, 7 excluded" in out
    assert "Selected runs (5)" in out and "Excluded runs (7)" in out and "run-a1" in out
    assert "Tasks waiting for an answer" in out and ".task.json" in out
    assert "Next: answer every task" in out
    assert "reading the run history" in out  # the progress it showed while it worked
    assert '"phase"' not in out
    # The same call with --json: one JSON document, even on a terminal.
    code, out = on_terminal([*args[:3], "--json", "--store", store], _env(history))
    assert code == 0, out
    document = json.loads(out[out.index("{") : out.rindex("}") + 1].replace("\r\n", "\n"))
    assert document["phase"] == "discovery" and len(document["inventory"]["selected"]) == 5
    # To a pipe (an agent's shell, a script): JSON as before.
    piped = subprocess.run(
        [sys.executable, "-c", ENTRY, *args[:3], "--store", store], env=_env(history),
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(piped.stdout)["phase"] == "discovery"
    assert "reading the run history" not in piped.stderr  # no bar where nobody watches


def test_importing_ten_thousand_lessons_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    pack = tmp_path / "pack.jsonl"
    with pack.open("w", encoding="utf-8") as lines:
        for n in range(1, 10_001):
            lines.write(json.dumps({
                "id": f"L-{n}", "revision": 1, "status": "active",
                "scope": {"kind": "repository", "repository": "repo:github.com/acme/api"},
                "title": f"Regenerate module {n} before its tests",
                "recommendation": f"Run `make gen-{n}` after editing module {n}.",
                "associations": {"files": [f"src/mod{n}/gen.py"]},
            }) + "\n")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(COLUMNS="160", LINES="50", TERM="xterm", HOME=str(tmp_path / "home"),
               ZEROSHOT_STATE_DIR=str(tmp_path / "state"))  # fmt: skip
    store = str(tmp_path / "lessons.sqlite3")
    code, out = on_terminal(["lessons", "import", str(pack), "--store", store], env)
    assert code == 0, out[-2000:]
    assert "checking" in out and "importing" in out and "/10000" in out
    assert "Imported 10000 records: 10000 added" in out
