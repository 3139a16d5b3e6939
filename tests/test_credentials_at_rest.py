"""No credential at rest in any file we write (issue 27 item 5, docs/security.md "At
rest"): one test per file kind, each handing its writer text that holds an AWS key and a
PostgreSQL password, the way that writer would meet them, and reading the file back.

The end to end case (a transcript imported with hook receipts, through evidence, the
postmortem, its journal and the prompts a fake provider received) is
tests/test_private_and_credentials_end_to_end.py; the hook log's is in
tests/test_credential_gate.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import FakeSessions, config, run_record
from run_builder import RunBuilder, ok, software_change
from specialist_builders import with_graph_hash

from active_memory.cli import main
from active_memory.init.session import Session
from active_memory.lessons import Lesson
from active_memory.orchestrator import run_postmortem
from active_memory.orchestrator.preview import Captured, write_tasks
from active_memory.recall.pins import _remember_failure
from active_memory.recall.records import DELIVERIES_FILE, RECEIPTS_FILE, run_dir
from active_memory.runlog.importers.write import write_record
from active_memory.specialists.providers import SessionOptions, open_session
from active_memory.specialists.providers.base import Request
from active_memory.specialists.providers.exchange import FileExchangeSession, Pending
from active_memory.specialists.providers.function import FunctionSession
from active_memory.specialists.providers.replay import RecordingSession
from active_memory.store import SessionEnd, open_store
from active_memory.store.sqlite import SqliteStore

AWS = "AKIAIOSFODNN7EXAMPLE"
URL = "postgresql://am:Sup3rS3cretPw@db.internal/lessons"
PASSWORD = "Sup3rS3cretPw"


def clean(text: str) -> bool:
    """Neither planted credential is in `text`, and something was masked."""
    return AWS not in text and PASSWORD not in text and "[REDACTED:" in text


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def unsealed_record() -> dict[str, Any]:
    """A run record no importer sealed (a run controller's, an old file): credentials in
    a completion, a tool failure and a receipt."""
    run = RunBuilder(software_change(), run_id="run-raw")
    execution = run.visit("worker", ok())
    run.completions = {execution: f"deployed with {AWS} against {URL}"}
    run.receipt("Read", [f"keys/{AWS}.pem"], 0)
    data = with_graph_hash(run.build())
    failure = {
        "node": "worker", "execution": execution, "tool": "Bash", "at": "2026-12-01T10:00:00Z",
        "command": f"AWS_ACCESS_KEY_ID={AWS} psql {URL}", "family": "psql", "cwd": "",
        "exit_code": 2, "error": f"psql: could not connect to {URL}", "paths": [],
    }  # fmt: skip
    data["tool_failures"] = [failure, {**failure, "at": "2026-12-01T10:01:00Z"}]
    return data


def test_a_run_record_file_keeps_no_credential_whoever_built_the_record(tmp_path: Path) -> None:
    data = unsealed_record()
    assert AWS in json.dumps(data)  # the control
    path = tmp_path / "run.json"
    write_record(path, data, force=False)
    text = path.read_text(encoding="utf-8")
    assert clean(text)
    written = json.loads(text)
    assert (written["run_id"], written["graph"]) == (data["run_id"], data["graph"])


def test_the_hook_files_written_before_the_screen_are_rewritten_clean_at_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_private_joined import SESSION, _transcript

    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "state"))
    folder = Path(run_dir(str(tmp_path / "state" / "active-memory" / "recall"),
                          f"session:{SESSION}"))  # fmt: skip
    folder.mkdir(parents=True)
    at = "2026-12-01T14:50:41.000Z"
    receipt = {"node": None, "tool": "Read", "paths": [f"keys/{AWS}.pem"], "at": at}
    delivery = {"session": SESSION, "lesson": "L-1", "revision": 1, "at": at,
                "agent": f"agent-{AWS}"}  # fmt: skip
    (folder / RECEIPTS_FILE).write_text(json.dumps(receipt) + "\n", encoding="utf-8")
    (folder / DELIVERIES_FILE).write_text(json.dumps(delivery) + "\n", encoding="utf-8")
    out = tmp_path / "run.json"
    code, _, err = run_cli("import", "claude", str(_transcript(tmp_path)), "-o", str(out))
    assert code == 0, err
    for name in (RECEIPTS_FILE, DELIVERIES_FILE):
        assert clean((folder / name).read_text(encoding="utf-8")), name
    assert AWS not in out.read_text(encoding="utf-8")


def test_the_hook_receipts_mask_a_credential_as_they_are_written(tmp_path: Path) -> None:
    from recall_support import claude_payload, hook_env, make_checkout, run_hook

    checkout = make_checkout(tmp_path / "api")
    env = hook_env(tmp_path / "state", tmp_path / "lessons.sqlite3")
    payload = claude_payload("Read", {"file_path": f"keys/{AWS}.pem"}, session="s-1",
                             cwd=checkout)  # fmt: skip
    assert run_hook("claude", json.dumps(payload), env).returncode == 0
    [receipts] = (tmp_path / "state").rglob(RECEIPTS_FILE)
    assert clean(receipts.read_text(encoding="utf-8"))


def test_a_remembered_store_failure_keeps_no_password(tmp_path: Path) -> None:
    path = tmp_path / "FAILED"
    _remember_failure(str(path), ConnectionError(f"cannot reach {URL}: timed out"))
    text = path.read_text(encoding="utf-8")
    assert clean(text) and "timed out" in text


def test_the_recall_builders_log_of_a_failed_build_keeps_no_password(tmp_path: Path) -> None:
    from active_memory.recall.builder import LOG_FILE, _log

    _log(str(tmp_path), f"repository acme/api: ConnectionError: cannot reach {URL}: refused")
    text = (tmp_path / LOG_FILE).read_text(encoding="utf-8")
    assert clean(text) and "refused" in text


def test_a_queue_entrys_reason_and_result_keep_no_credential(tmp_path: Path) -> None:
    import anyio

    location = str(tmp_path / "lessons.sqlite3")
    end = SessionEnd(harness="claude", session_id="s-1", transcript=str(tmp_path / "t.jsonl"),
                     cwd=str(tmp_path), event="SessionEnd", size=10)  # fmt: skip

    async def finish() -> None:
        async with open_store(location) as store:
            await store.queue.enqueue(end)
            [entry] = await store.queue.claim("w-1", limit=1, lease=60, settle=0)
            assert await store.queue.finish(
                entry.id, "w-1", "done", reason=f"store {URL} was slow",
                result={"note": f"key {AWS}"},
            )  # fmt: skip

    anyio.run(finish)
    rows = sqlite3.connect(location).execute("SELECT reason, result FROM postmortem_queue")
    text = json.dumps(rows.fetchall())
    assert clean(text)
    code, out, err = run_cli("queue", "--json", "--store", location)
    assert code == 0, err
    assert AWS not in out and PASSWORD not in out and "[REDACTED:" in out


@pytest.mark.asyncio
async def test_the_journal_keeps_no_credential_a_model_answered(tmp_path: Path) -> None:
    record = run_record(tmp_path, [], timeouts=True)

    async def leaky(request: Request) -> Any:
        # A proposal whose title quotes a key: refused, and its rejection is journalled.
        task: Any = request.input
        if request.repair_of is not None:  # asked again: the same answer
            task = task["task"]
        [item] = task["evidence"]
        return {"lessons": [{
            "node": "worker", "title": f"Log in with {AWS} first",
            "recommendation": f"Run `psql {URL}` before the tests.", "associations": {},
            "evidence": [item["id"]], "citations": [], "why_recurs": "timeouts",
        }]}  # fmt: skip

    sessions = FakeSessions({"graph_discovery": leaky})
    store = await SqliteStore.open(tmp_path / "lessons.sqlite3")
    try:
        report = await run_postmortem(
            record, config(), store, sessions=sessions, journal_dir=tmp_path / "journal"
        )
    finally:
        await store.aclose()
    assert report.specialists["graph_discovery"].rejected
    [journal] = (tmp_path / "journal").iterdir()
    assert clean(journal.read_text(encoding="utf-8"))


def test_evidence_json_keeps_no_credential_of_an_unsealed_record(tmp_path: Path) -> None:
    path = tmp_path / "raw.json"
    path.write_text(json.dumps(unsealed_record()), encoding="utf-8")
    for extra in (("--json",), ()):
        code, out, err = run_cli("evidence", str(path), *extra)
        assert code == 0, err
        assert AWS not in out and PASSWORD not in out
    assert json.loads(run_cli("evidence", str(path), "--json")[1])["evidence"]


def test_hook_install_json_masks_the_users_own_keys_in_its_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recall_support import make_checkout

    checkout = make_checkout(tmp_path / "api")
    # A project install writes Claude Code's per-person file; the user's key is in it.
    settings = checkout / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"env": {"AWS_ACCESS_KEY_ID": AWS}}), encoding="utf-8")
    monkeypatch.chdir(checkout)
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "state"))
    code, out, err = run_cli("hook", "install", "claude", "--dry-run", "--json")
    assert code == 0, err
    assert AWS not in out and "[REDACTED:" in json.loads(out)["diff"]
    assert AWS in settings.read_text(encoding="utf-8")  # the user's file is theirs


def _plant(location: Path, lesson_id: str) -> None:
    """Put a credential into a stored lesson behind the store's back (as a store written
    before the screen existed may hold one)."""
    with sqlite3.connect(location) as conn:
        conn.execute(
            "UPDATE lessons SET recommendation = ? WHERE id = ?",
            (f"Export AWS_ACCESS_KEY_ID={AWS} before `make deploy`.", lesson_id),
        )


def test_lesson_exports_keep_no_credential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recall_support import make_checkout, publish, repository_lesson

    store = tmp_path / "lessons.sqlite3"
    [(lesson_id, _)] = publish(store, [repository_lesson("Deploy", files=["Makefile"])]).created
    _plant(store, lesson_id)
    out = tmp_path / "lessons.jsonl"
    code, _, err = run_cli("lessons", "export", "-o", str(out), "--store", str(store))
    assert code == 0, err
    assert clean(out.read_text(encoding="utf-8"))
    assert Lesson.model_validate_json(out.read_text(encoding="utf-8").splitlines()[0])
    checkout = make_checkout(tmp_path / "api")
    monkeypatch.chdir(checkout)
    code, _, err = run_cli(
        "lessons", "export", "--format", "agents-md", "--store", str(store),
        "--scope", "repo:github.com/acme/api", "--dir", str(checkout),
    )  # fmt: skip
    assert code == 0, err
    assert clean((checkout / "AGENTS.md").read_text(encoding="utf-8"))


def test_init_session_files_keep_no_credential(tmp_path: Path) -> None:
    session = Session(tmp_path / "session")
    data = unsealed_record()
    session.write("runs/0000.json", data)
    session.write("session.json", {"inventory": {"excluded": [{"reason": f"cannot open {URL}"}]}})
    copied = json.loads((tmp_path / "session" / "runs" / "0000.json").read_text())
    assert clean(json.dumps(copied)) and copied["graph"] == data["graph"]
    assert clean((tmp_path / "session" / "session.json").read_text())


@pytest.mark.asyncio
async def test_an_exchange_task_file_keeps_no_credential(tmp_path: Path) -> None:
    from fakes.lanes import Discoveries, lane

    session = open_session(
        lane(), "repository_discovery", deadline=None,
        options=SessionOptions(mode="exchange", exchange_dir=tmp_path),
    )  # fmt: skip
    assert isinstance(session, FileExchangeSession)
    status = await session.submit(
        f"The run failed: psql {URL}", Discoveries, system=f"key {AWS}", input={"run": 1}
    )
    assert isinstance(status, Pending)
    assert clean(status.task_file.read_text(encoding="utf-8"))


def test_show_tasks_files_keep_no_credential(tmp_path: Path) -> None:
    captured = [Captured("repository_discovery", f"psql {URL}", f"key {AWS}", {"e": AWS})]
    written = write_tasks(tmp_path / "tasks", captured)
    assert len(written) == 3
    for path in written:
        assert AWS not in path.read_text() and PASSWORD not in path.read_text()


@pytest.mark.asyncio
async def test_a_recordings_file_keeps_no_credential_a_model_answered(tmp_path: Path) -> None:
    from fakes.lanes import Discoveries

    async def model(request: Request) -> Any:
        return {"lessons": [{"title": f"use {AWS}", "evidence": ["E-1"]}]}

    path = tmp_path / "recordings.json"
    recorder = RecordingSession(FunctionSession("repository_discovery", model), path)
    await recorder.ask("prompt", Discoveries, input={"task": 1})
    assert clean(path.read_text(encoding="utf-8"))


@pytest.mark.asyncio
async def test_the_prompts_of_an_unsealed_record_hold_no_credential(tmp_path: Path) -> None:
    from active_memory.runlog.record import parse_run_record

    data = unsealed_record()
    data["runtime"] = {"harness": "claude"}
    record = parse_run_record(data)
    sessions = FakeSessions()
    store = await SqliteStore.open(tmp_path / "lessons.sqlite3")
    try:
        await run_postmortem(record, config(), store, sessions=sessions, dry_run=True)
    finally:
        await store.aclose()
    assert sessions.requests  # repository discovery was asked about the failures
    for request in sessions.requests:
        text = json.dumps([m.content for m in request.messages]) + json.dumps(request.input)
        assert AWS not in text and PASSWORD not in text and "psql" in text
