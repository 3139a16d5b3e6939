"""Bad input gets a clear error and exit 2, never an internal error (issue 27 item 6): a
session log line with a 5,000-digit integer (the importer and the queued session's
reason), a malformed `.active-memory.toml` under `active-memory mcp`, a store SQLite
cannot open beside it under `recall`, and `active-memory ui` stopped by SIGTERM."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import FakeSessions
from queue_support import FIXTURE
from recall_support import hook_env, make_checkout, publish, repository_lesson
from test_worker import enqueue, fake, run_worker, session_end, states

from active_memory.cli import main

CLI = [sys.executable, "-c", "from active_memory.cli import run; run()"]
HUGE = "9" * 5000


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def huge_integer_transcript(path: Path) -> Path:
    """The Claude Code fixture with a 5,000-digit integer in its third line."""
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    entry = json.loads(lines[2])
    entry["message"]["usage"] = {"input_tokens": 0}  # replaced below, digit for digit
    text = json.dumps(entry).replace('"input_tokens": 0', f'"input_tokens": {HUGE}')
    lines[2] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_import_of_a_line_with_a_5000_digit_integer_exits_2_naming_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "state"))
    transcript = huge_integer_transcript(tmp_path / "session.jsonl")
    out = tmp_path / "run.json"
    code, stdout, err = run_cli("import", "claude", str(transcript), "-o", str(out))
    assert code == 2, err
    assert f"{transcript}:3: integer 9999" in err and "5000 digits" in err
    assert "internal error" not in err and "ValueError" not in err
    assert not out.exists() and stdout == ""


@pytest.mark.asyncio
async def test_a_queued_session_with_a_5000_digit_integer_fails_with_file_and_line(
    tmp_path: Path,
) -> None:
    location = str(tmp_path / "lessons.sqlite3")
    transcript = huge_integer_transcript(tmp_path / "huge.jsonl")
    await enqueue(location, session_end("huge", transcript))
    await run_worker(location, fake(FakeSessions()))
    state, reason = (await states(location))["huge"]
    assert state == "failed"
    assert reason.startswith(f"{transcript}:3: integer 9999") and "5000 digits" in reason
    assert "internal error" not in reason


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def broken_settings(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout whose `.active-memory.toml` is not TOML, and a store with a lesson."""
    checkout = make_checkout(tmp_path / "api")
    (checkout / ".active-memory.toml").write_text("enabled = tru\n", encoding="utf-8")
    store = tmp_path / "lessons.sqlite3"
    publish(store, [repository_lesson("Regenerate the client", files=["api/schema.json"])])
    return checkout, store


@pytest.mark.anyio
async def test_mcp_with_a_malformed_settings_file_says_what_is_wrong_without_a_traceback(
    tmp_path: Path, broken_settings: tuple[Path, Path]
) -> None:
    pytest.importorskip("mcp")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    checkout, store = broken_settings
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from active_memory.cli import run; run()", "mcp"],
        env=hook_env(tmp_path / "state", store),
        cwd=str(checkout),
    )
    results: dict[str, Any] = {}
    with tempfile.TemporaryFile("w+") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            results["search"] = await session.call_tool("search_lessons", {"query": "schema"})
            results["get"] = await session.call_tool("get_lesson", {"id": "L-1"})
        errlog.seek(0)
        stderr = errlog.read()
    for result in results.values():
        assert result.is_error
        text = result.content[0].text
        assert ".active-memory.toml" in text and "not valid TOML" in text
        assert "settings are invalid" in text and "fix that file" in text
    assert "Traceback" not in stderr


def test_recall_on_a_store_sqlite_cannot_open_beside_exits_2(tmp_path: Path) -> None:
    # A store in a folder this user may not write: SQLite cannot create the WAL store's
    # -shm file beside it. (Root writes anywhere, so the -shm is a link to nowhere here:
    # the same failure, from SQLite itself.)
    checkout = make_checkout(tmp_path / "api")
    store = tmp_path / "store" / "lessons.sqlite3"
    store.parent.mkdir()
    publish(store, [repository_lesson("Regenerate the client", files=["api/schema.json"])])
    (store.parent / "lessons.sqlite3-shm").symlink_to(tmp_path / "gone" / "shm")
    env = hook_env(tmp_path / "state", store)
    done = subprocess.run(
        [*CLI, "recall", "--session", "s-1", "--cwd", str(checkout), "--store", str(store),
         json.dumps({"tool_name": "Read", "tool_input": {"file_path": "api/schema.json"}})],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert str(store) in done.stderr and "folder is writable" in done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_ui_exits_0_on_sigterm_like_serve(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")} | {
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state")
    }
    publish(tmp_path / "lessons.sqlite3", [repository_lesson("A lesson", files=["a.py"])])
    process = subprocess.Popen(
        [*CLI, "ui", "--port", "0", "--store", str(tmp_path / "lessons.sqlite3")],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        assert "active-memory ui: open http://" in process.stderr.readline()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=20)
        rest = process.stderr.read() if process.stderr is not None else ""
        if process.stderr is not None:
            process.stderr.close()
    assert code == 0, rest
    assert "active-memory ui: stopped" in rest
