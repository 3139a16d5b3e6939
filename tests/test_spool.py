"""Nothing lost when the store is away (issue 29 item 8): a session end the hook cannot
queue waits in a local spool (bounded, owner-only, screened) and is queued by the next
hook, worker or `queue` that reaches the store."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest
from queue_support import claude_end, quiet_transcript

from active_memory.cli import main
from active_memory.store import SessionEnd, open_store, spool

HOOK = Path(sys.executable).with_name("active-memory-hook")
KEY = "sk-ant-api03-SPOOLTESTkey0123456789abcdefABCDEF"


def hook(store: Path | str, payload: dict[str, object], state: Path) -> None:
    done = subprocess.run(
        [str(HOOK), "session-end", "claude", "--store", str(store)],
        input=json.dumps(payload), capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "ZEROSHOT_STATE_DIR": str(state)},
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def queued(store: Path) -> list[str]:
    with sqlite3.connect(store) as raw:
        return [r[0] for r in raw.execute("SELECT session_id FROM postmortem_queue ORDER BY id")]


def create_store(store: Path) -> None:
    async def make() -> None:
        async with open_store(str(store)):
            pass

    anyio.run(make, backend="asyncio")


def hold_the_write_lock(store: Path, release: threading.Event) -> threading.Thread:
    """Another writer holds the SQLite store's lock until `release` (past the hook's bound)."""
    locked = threading.Event()

    def hold() -> None:
        raw = sqlite3.connect(store, isolation_level=None)
        raw.execute("BEGIN EXCLUSIVE")
        locked.set()
        release.wait(30)
        raw.execute("ROLLBACK")
        raw.close()

    thread = threading.Thread(target=hold)
    thread.start()
    locked.wait(10)
    return thread


def test_a_session_end_the_store_cannot_take_is_spooled_then_queued_by_the_next_hook(
    tmp_path: Path,
) -> None:
    store, state = tmp_path / "q.sqlite3", tmp_path / "state"
    create_store(store)
    first = quiet_transcript(tmp_path / "a.jsonl", "a", str(tmp_path))
    release = threading.Event()
    holder = hold_the_write_lock(store, release)
    try:
        hook(store, claude_end("a", first, str(tmp_path)), state)  # the store stays locked
    finally:
        release.set()
        holder.join()
    folder = Path(spool.spool_dir(str(store)))
    (kept,) = folder.glob("*.json")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert json.loads(kept.read_text())["session_id"] == "a"
    assert queued(store) == []
    log = (state / "active-memory" / "recall" / "hook.log").read_text()
    assert "waits in the spool (1 waiting)" in log
    second = quiet_transcript(tmp_path / "b.jsonl", "b", str(tmp_path))
    hook(store, claude_end("b", second, str(tmp_path)), state)
    assert queued(store) == ["b", "a"]  # the new end first, then what waited
    assert list(folder.glob("*.json")) == []


def test_queue_enqueues_what_the_spool_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "q.sqlite3"  # not even created yet
    end = SessionEnd("claude", "kept", str(tmp_path / "t.jsonl"), str(tmp_path), "SessionEnd")
    spool.spool(str(store), end)
    assert spool.spooled(str(store)) == 1
    assert main(["queue", "--store", str(store), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [e["session_id"] for e in report["entries"]] == ["kept"]
    assert report["spooled"] == {"queued_now": 1, "waiting": 0}


def test_the_spool_is_bounded_and_screened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = str(tmp_path / "q.sqlite3")
    secret_cwd = f"/work/{KEY}"
    spool.spool(store, SessionEnd("claude", "s-1", "", secret_cwd, "SessionEnd"))
    (path,) = Path(spool.spool_dir(store)).glob("*.json")
    assert KEY not in path.read_text() and "REDACTED" in path.read_text()
    monkeypatch.setattr(spool, "MAX_SPOOLED", 1)
    with pytest.raises(spool.SpoolFull, match="holds 1 session ends already"):
        spool.spool(store, SessionEnd("claude", "s-2", "", "/w", "SessionEnd"))


def test_a_full_spool_says_the_session_end_is_lost_in_one_log_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.hooks import session_end

    state = tmp_path / "state"
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(state))
    monkeypatch.setattr(spool, "MAX_SPOOLED", 0)
    folder = tmp_path / "a-folder"  # a store path that is a folder: never writable
    folder.mkdir()
    payload = json.dumps(claude_end("lost", None, "/w")).encode()
    monkeypatch.setattr(sys, "stdin", _Stdin(payload))
    assert session_end.main(["claude", "--store", str(folder)]) == 0
    (line,) = (state / "active-memory" / "recall" / "hook.log").read_text().splitlines()
    assert "could not be spooled either" in line and "it is lost" in line


class _Stdin:
    def __init__(self, data: bytes) -> None:
        import io

        self.buffer = io.BytesIO(data)
