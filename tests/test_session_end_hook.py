"""`active-memory-hook session-end claude|codex|opencode`: enqueue, idempotent, never fails.

Each test runs the installed console scripts as the harness would: a new process, the
payload on stdin, an isolated state dir.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from queue_support import claude_end, codex_stop, quiet_transcript

HOOK = Path(sys.executable).with_name("active-memory-hook")
CLI = Path(sys.executable).with_name("active-memory")


def run_hook(
    args: list[str],
    payload: Any,
    state: Path,
    *,
    cli: bool = False,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    command = [str(CLI), "hook", "session-end", *args] if cli else [str(HOOK), "session-end", *args]
    environment = {**os.environ, "ZEROSHOT_STATE_DIR": str(state), **(env or {})}
    environment.pop("ACTIVE_MEMORY_STORE", None)
    if env and "ACTIVE_MEMORY_STORE" in env:
        environment["ACTIVE_MEMORY_STORE"] = env["ACTIVE_MEMORY_STORE"]
    return subprocess.run(command, input=data, capture_output=True, text=True, env=environment,
                          timeout=60, check=False)  # fmt: skip


def rows(store: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(store) as raw:
        return raw.execute(
            "SELECT harness, session_id, transcript, cwd, event, final, ends, state, size, model "
            "FROM postmortem_queue ORDER BY id"
        ).fetchall()


def log_lines(state: Path) -> list[str]:
    log = state / "active-memory" / "recall" / "hook.log"
    return log.read_text().splitlines() if log.exists() else []


def test_a_claude_session_end_is_enqueued_in_the_default_store(tmp_path: Path) -> None:
    transcript = quiet_transcript(tmp_path / "s.jsonl", "s-1", str(tmp_path))
    done = run_hook(["claude"], claude_end("s-1", transcript, str(tmp_path)), tmp_path / "st")
    assert (done.returncode, done.stdout) == (0, "")
    store = tmp_path / "st" / "active-memory" / "lessons.sqlite3"
    size = transcript.stat().st_size
    assert rows(store) == [("claude", "s-1", str(transcript), str(tmp_path), "SessionEnd", 1, 1,
                            "pending", size, "")]  # fmt: skip
    assert log_lines(tmp_path / "st") == []


def test_a_duplicate_end_is_one_entry_through_either_command(tmp_path: Path) -> None:
    store = tmp_path / "q.sqlite3"
    payload = claude_end("s-1", tmp_path / "s.jsonl", str(tmp_path))
    for cli in (False, True, False):
        done = run_hook(["claude", "--store", str(store)], payload, tmp_path / "st", cli=cli)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert [(r[1], r[6]) for r in rows(store)] == [("s-1", 3)]


def test_the_store_comes_from_the_environment_when_no_option_names_one(tmp_path: Path) -> None:
    store = tmp_path / "env.sqlite3"
    payload = claude_end("s-2", None, str(tmp_path))
    run_hook(["claude"], payload, tmp_path / "st", env={"ACTIVE_MEMORY_STORE": str(store)})
    assert [r[1] for r in rows(store)] == ["s-2"]


def test_a_codex_stop_is_a_turn_end_with_its_model(tmp_path: Path) -> None:
    store = tmp_path / "q.sqlite3"
    done = run_hook(["codex", f"--store={store}"], codex_stop("th-1", None, "/w"), tmp_path / "st")
    assert done.returncode == 0
    assert rows(store) == [("codex", "th-1", "", "/w", "Stop", 0, 1, "pending", None,
                            "gpt-5.1-codex")]  # fmt: skip


def test_an_opencode_payload_is_enqueued(tmp_path: Path) -> None:
    store = tmp_path / "q.sqlite3"
    payload = {"sessionID": "ses_1", "cwd": "/w", "event": "session.idle"}
    run_hook(["opencode", "--store", str(store)], payload, tmp_path / "st")
    assert [(r[0], r[1], r[4], r[5]) for r in rows(store)] == [("opencode", "ses_1",
                                                                "session.idle", 0)]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "payload", "logged"),
    [
        (["claude"], "not json", "JSONDecodeError"),
        (["claude"], json.dumps([1, 2]), "not a JSON object"),
        (["claude"], json.dumps({"cwd": "/w"}), "no usable session id"),
        (
            ["claude"],
            json.dumps({"session_id": "s", "transcript_path": 3, "cwd": "/w"}),
            "transcript path is not a string",
        ),
        (["cursor"], json.dumps({"session_id": "s", "cwd": "/w"}), "unexpected argument"),
        ([], "{}", "name the harness"),
    ],
)
def test_bad_input_exits_0_silently_with_one_log_line(
    tmp_path: Path, args: list[str], payload: str, logged: str
) -> None:
    state = tmp_path / "st"
    done = run_hook([*args, "--store", str(tmp_path / "q.sqlite3")], payload, state)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    (line,) = log_lines(state)
    assert "session-end" in line and logged in line
    assert not (tmp_path / "q.sqlite3").exists()


@pytest.mark.parametrize("kind", ["folder", "not sqlite", "foreign sqlite"])
def test_a_broken_store_exits_0_silently_with_one_log_line(tmp_path: Path, kind: str) -> None:
    store = tmp_path / "broken.sqlite3"
    if kind == "folder":
        store.mkdir()
    elif kind == "not sqlite":
        store.write_text("hello")
    else:
        with sqlite3.connect(store) as raw:
            raw.execute("CREATE TABLE other (x)")
    done = run_hook(["claude", "--store", str(store)], claude_end("s", None, "/w"), tmp_path / "st")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    line = log_lines(tmp_path / "st")[-1]
    assert "session-end claude" in line and str(store) in line
    assert "waits in the spool (1 waiting)" in line  # kept, not lost


def test_an_unreachable_postgres_store_exits_0_with_one_log_line(tmp_path: Path) -> None:
    url = "postgresql://nobody:secret@127.0.0.1:9/none"
    done = run_hook(["claude", "--store", url], claude_end("s", None, "/w"), tmp_path / "st")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    (line,) = log_lines(tmp_path / "st")
    assert "secret" not in line and "127.0.0.1" in line


def test_the_enqueue_loads_neither_pydantic_nor_anyio_on_a_current_sqlite_store(
    tmp_path: Path,
) -> None:
    store = tmp_path / "q.sqlite3"
    run_hook(["claude", "--store", str(store)], claude_end("s-0", None, "/w"), tmp_path / "st")
    program = (
        "import io, json, sys\n"
        "from active_memory.hooks import command\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({json.dumps(claude_end('s-1', None, '/w'))!r}"
        ".encode()))\n"
        f"command.main(['session-end', 'claude', '--store', {str(store)!r}])\n"
        "print(json.dumps(sorted(m for m in ('pydantic', 'anyio', 'aiosqlite', 'rich') "
        "if m in sys.modules)))\n"
    )
    environment = {**os.environ, "ZEROSHOT_STATE_DIR": str(tmp_path / "st")}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=60, check=True, env=environment)  # fmt: skip
    assert json.loads(done.stdout) == []
    assert [r[1] for r in rows(store)] == ["s-0", "s-1"]


@pytest.mark.postgres
def test_a_session_end_is_enqueued_in_a_postgres_store(postgres_url: str, tmp_path: Path) -> None:
    import anyio

    from active_memory.store import open_store

    payload = claude_end("pg-1", None, "/w")
    for _ in range(2):
        done = run_hook(["claude", "--store", postgres_url], payload, tmp_path / "st")
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert log_lines(tmp_path / "st") == []

    async def read() -> list[Any]:
        async with open_store(postgres_url, create=False) as store:
            return await store.queue.entries()

    (entry,) = anyio.run(read, backend="asyncio")
    assert (entry.harness, entry.session_id, entry.ends, entry.final) == ("claude", "pg-1", 2, True)


@pytest.mark.parametrize(
    ("harness", "payload", "final"),
    [
        ("pi", {"sessionID": "p-1", "cwd": "/w", "event": "session_shutdown:quit"}, True),
        ("pi", {"sessionID": "p-2", "cwd": "/w", "event": "session_shutdown:new"}, True),
        ("pi", {"sessionID": "p-3", "cwd": "/w", "event": "session_shutdown:reload"}, False),
        ("pi", {"sessionID": "p-4", "cwd": "/w"}, True),
        ("copilot", {"sessionId": "c-1", "cwd": "/w", "reason": "complete"}, True),
        ("gemini", {"session_id": "g-1", "cwd": "/w", "hook_event_name": "SessionEnd"}, True),
    ],
)
def test_every_harness_final_end_is_final(
    tmp_path: Path, harness: str, payload: dict[str, Any], final: bool
) -> None:
    store = tmp_path / "q.sqlite3"
    done = run_hook([harness, "--store", str(store)], payload, tmp_path / "st")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    with sqlite3.connect(store) as raw:
        ((stored,),) = raw.execute("SELECT final FROM postmortem_queue").fetchall()
    assert bool(stored) is final
