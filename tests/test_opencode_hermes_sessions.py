"""OpenCode's and Hermes' sessions as the real binaries stored them, and the payloads our
plugins sent from inside them (tests/fixtures/harness_sessions/*.sql and
tests/fixtures/harness_payloads/, recorded from opencode-ai 1.18.33 and hermes-agent
0.19.0; see the READMEs).

Imported: one run per root session, its sub-agent's calls on a node of their own, the
failed `git add` with its family, informative error and resolution, the missing file's
refusal, the prompt as the turn's input; credentials and `<private>` text screened; our
own cards never taken for a tool's error; the hooks' receipts and deliveries of the root
and of the sub-agent's session joined. Bad input is named. The session-end payloads map
to one queue entry per conversation, and OpenCode's compaction resets recall's ledger.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from recall_support import hook_env, make_checkout, publish, repository_lesson, run_hook

from active_memory.errors import InvalidRecord
from active_memory.hooks.session_end import session_end
from active_memory.recall.frame import CLOSE, OPEN
from active_memory.runlog.importers.harness_session import (
    import_harness_session,
    import_session_database,
)

SESSIONS = Path(__file__).parent / "fixtures" / "harness_sessions"
PAYLOADS = Path(__file__).parent / "fixtures" / "harness_payloads"
RECORDED = {
    "opencode": ("opencode-1.18.33-failures.sql", "opencode-1.18.33.jsonl", "/tmp/ocx/proj",
                 "opencode.db"),
    "hermes": ("hermes-0.19.0-failures.sql", "hermes-0.19.0.jsonl", "/tmp/hmx/proj",
               "state.db"),
}  # fmt: skip
CLI = Path(sys.executable).with_name("active-memory")
RECOMMENDATION = "Read a.py through the loader; never import it directly."


def database(harness: str, folder: Path, edit: str = "") -> Path:
    """The recorded tables loaded into a new database, the folder replaced by `folder`;
    `edit`: SQL run after loading (to add what a case needs to a real session)."""
    sql, _, recorded, name = RECORDED[harness]
    path = folder.parent / f"{harness}-data" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (SESSIONS / sql).read_text(encoding="utf-8").replace(recorded, str(folder))
    with sqlite3.connect(path) as conn:
        conn.executescript(text + edit)
    return path


def payloads(harness: str, folder: Path) -> list[dict[str, Any]]:
    _, name, recorded, _ = RECORDED[harness]
    lines = (PAYLOADS / name).read_text(encoding="utf-8").replace(recorded, str(folder))
    return [json.loads(line) for line in lines.splitlines() if line.strip()]


def root_session(harness: str) -> str:
    _, name, _, _ = RECORDED[harness]
    first = json.loads((PAYLOADS / name).read_text(encoding="utf-8").splitlines()[0])
    session: str = first["input"]["sessionID"]
    return session


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = make_checkout(tmp_path / "proj")
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("A = 1\n")
    (root / "build").mkdir()
    (root / "build" / "a.css").write_text("a{}\n")
    return root


@pytest.mark.parametrize("harness", ["opencode", "hermes"])
def test_the_recorded_session_imports_with_its_failures_and_their_resolution(
    harness: str, checkout: Path
) -> None:
    result = import_session_database(harness, database(harness, checkout))
    assert result.skipped == []
    (run,) = result.runs  # the sub-agent's session is not a run of its own
    record = run.record
    assert record["run_id"] == f"{harness}-{root_session(harness)}"
    assert record["repository"]["checkout"] == str(checkout)
    assert record["repository"]["namespace"] == "repo:github.com/acme/api"
    failures = {f["command"]: f for f in record["tool_failures"]}
    assert set(failures) == {"git add build/a.css", "missing.py"}
    ignored = failures["git add build/a.css"]
    assert (ignored["family"], ignored["exit_code"]) == ("git add", 1)
    assert ignored["error"].startswith("The following paths are ignored")
    assert ignored["resolved_by"]["command"] == "git add -f build/a.css"
    assert failures["missing.py"]["error"].startswith("File not found:")
    started = [e["event"] for e in record["events"] if e["event"]["kind"] == "node_started"]
    assert "Stage the built CSS and read the code" in started[0]["input"]
    nodes = {r["node"] for r in record["receipts"]}
    (subagent,) = nodes - {"worker"}
    assert subagent.startswith("worker/agent-")
    assert list(run.linked.values()) == [subagent]


@pytest.mark.parametrize("harness", ["opencode", "hermes"])
def test_credentials_private_text_and_our_cards_stay_out_of_the_record(
    harness: str, checkout: Path, tmp_path: Path
) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    card = f"\n\n{OPEN}\n## Use the loader  (L-9 r1)\n{RECOMMENDATION}\n{CLOSE}"
    if harness == "opencode":
        edit = (
            "UPDATE part SET data = json_set(data, '$.text', json_extract(data, '$.text') || "
            f"' <private>my launch codes</private>') WHERE data LIKE '%Stage the built%';"
            "UPDATE part SET data = json_set(data, '$.state.error', "
            f"'File not found: token {secret}' || '{card}') WHERE data LIKE '%missing.py%' "
            'AND data LIKE \'%"status":"error"%\';'
        )
    else:
        edit = (
            "UPDATE messages SET content = content || ' <private>my launch codes</private>' "
            "WHERE role = 'user';"
            "UPDATE messages SET content = json_set(content, '$.error', "
            f"'File not found: token {secret}') || '{card}' WHERE role = 'tool' AND content "
            "LIKE '%File not found%';"
        )
    env = hook_env(tmp_path / "state", tmp_path / "lessons.sqlite3")
    path = database(harness, checkout, edit)
    record = import_harness_session(harness, path, session_id=None, cwd=None, env=env)
    text = record.model_dump_json()
    assert secret not in text and "[REDACTED:" in text
    assert "my launch codes" not in text
    (missing,) = [f for f in record.tool_failures or [] if f.command == "missing.py"]
    assert RECOMMENDATION not in (missing.error or "")
    assert "active-memory" not in (missing.error or "")


@pytest.mark.parametrize("harness", ["opencode", "hermes"])
def test_the_hooks_records_of_the_root_and_the_subagent_session_are_joined(
    harness: str, checkout: Path, tmp_path: Path
) -> None:
    store = tmp_path / "lessons.sqlite3"
    lesson = repository_lesson("Use the loader", RECOMMENDATION, files=["src/a.py"])
    lesson_id = publish(store, [lesson]).created[0][0]
    env = hook_env(tmp_path / "state", store)
    calls = [p["input"] for p in payloads(harness, checkout) if p["args"] == ["after-tool"]]
    for call in calls:  # each recorded call, as our plugin sent it, to the real hook
        done = run_hook("after-tool", json.dumps(call), env)
        assert done.returncode == 0, done.stderr
    path = database(harness, checkout)
    root = root_session(harness)
    record = import_harness_session(harness, path, session_id=root, cwd=None, env=env)
    # The root's read and the sub-agent's read each got the card in their own context.
    assert [d.lesson for d in record.deliveries or []] == [lesson_id, lesson_id]
    assert {d.session for d in record.deliveries or []} == {
        c["sessionID"] for c in calls if c["tool"] in ("read", "read_file")
    }
    nodes = sorted(str(r.node) for r in record.receipts if r.paths == ("src/a.py",))
    assert nodes[0] == "worker" and nodes[1].startswith("worker/agent-")


def test_opencode_keeps_the_receipt_of_a_call_its_hook_never_saw(
    checkout: Path, tmp_path: Path
) -> None:
    # OpenCode runs tool.execute.after only for a call that returned: the missing file's
    # read (the tool threw) has no hook receipt, and the transcript's stays.
    env = hook_env(tmp_path / "state", tmp_path / "lessons.sqlite3")
    for call in payloads("opencode", checkout):
        if call["args"] == ["after-tool"]:
            assert run_hook("after-tool", json.dumps(call["input"]), env).returncode == 0
    path = database("opencode", checkout)
    record = import_harness_session("opencode", path, session_id=None, cwd=None, env=env)
    assert sum(r.paths == ("missing.py",) for r in record.receipts) == 1
    assert sum(r.paths == ("src/a.py",) for r in record.receipts) == 2


@pytest.mark.parametrize("harness", ["opencode", "hermes"])
def test_import_writes_each_root_session_and_one_session_on_request(
    harness: str, checkout: Path, tmp_path: Path
) -> None:
    path = database(harness, checkout)
    out = tmp_path / "records"
    out.mkdir()
    done = subprocess.run([str(CLI), "import", harness, str(path.parent), "--out", str(out),
                           "--json"], capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert run["run_id"] == f"{harness}-{root_session(harness)}"
    assert run["report"]["tool_failures"] == 2
    command = [str(CLI), "import", harness, str(path), "--session", "nope", "--out", str(out)]
    missing = subprocess.run(command, capture_output=True, text=True, check=False)
    assert missing.returncode == 1
    assert "no session nope" in missing.stderr


def test_session_is_refused_for_a_log_of_one_session(tmp_path: Path) -> None:
    done = subprocess.run([str(CLI), "import", "pi", str(tmp_path / "x.jsonl"), "--session",
                           "s"], capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 2
    assert "--session: only for opencode and hermes" in done.stderr


@pytest.mark.parametrize("harness", ["opencode", "hermes"])
def test_a_file_that_is_not_the_clients_database_is_named(harness: str, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(InvalidRecord, match=r"not an? (OpenCode|Hermes)"):
        import_session_database(harness, garbage)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (x)")
    with pytest.raises(InvalidRecord, match="no table"):
        import_session_database(harness, other)
    with pytest.raises(InvalidRecord, match="not a file"):
        import_session_database(harness, tmp_path / "absent.db")
    done = subprocess.run([str(CLI), "import", harness, str(garbage)], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 2 and "garbage.db" in done.stderr


def test_a_damaged_row_is_counted_and_the_rest_is_read(checkout: Path) -> None:
    edit = "UPDATE part SET data = '{not json' WHERE data LIKE '%git add -f%';"
    (run,) = import_session_database("opencode", database("opencode", checkout, edit)).runs
    assert run.report is not None
    assert run.report["lines_ignored"]["part that is not a JSON object"] == 1
    (ignored,) = [f for f in run.record["tool_failures"] if f["command"] == "git add build/a.css"]
    assert "resolved_by" not in ignored  # its resolution was the damaged row


def test_the_recorded_session_ends_are_one_queue_entry_per_conversation(
    checkout: Path, tmp_path: Path
) -> None:
    opencode = [p["input"] for p in payloads("opencode", checkout)
                if p["args"] == ["session-end", "opencode"]]  # fmt: skip
    data = tmp_path / "data"
    ends = [session_end("opencode", payload, {"XDG_DATA_HOME": str(data)}) for payload in opencode]
    assert [(e.event, e.final) for e in ends] == [("session.idle", False), ("session.end", True)]
    assert {e.transcript for e in ends} == {str(data / "opencode" / "opencode.db")}
    moved = session_end("opencode", opencode[0], {"HOME": str(tmp_path), "OPENCODE_DB": "x.db"})
    assert moved.transcript == str(tmp_path / ".local" / "share" / "opencode" / "x.db")

    hermes_home = tmp_path / "hermes"
    hermes_home.mkdir()
    (hermes_home / "state.db").write_bytes(database("hermes", checkout).read_bytes())
    hermes = [p["input"] for p in payloads("hermes", checkout)
              if p["args"] == ["session-end", "hermes"]]  # fmt: skip
    ends = [session_end("hermes", payload, {"HERMES_HOME": str(hermes_home)}) for payload in hermes]
    # The sub-agent's turn end names its own session: it is queued as the conversation's.
    assert {e.session_id for e in ends} == {root_session("hermes")}
    assert [e.final for e in ends] == [False, False, True]


def test_a_hermes_continuation_after_compression_is_queued_as_its_conversation(
    checkout: Path, tmp_path: Path
) -> None:
    root = root_session("hermes")
    edit = (
        f"UPDATE sessions SET end_reason = 'compression' WHERE id = '{root}';"
        "INSERT INTO sessions (id, source, parent_session_id, started_at, cwd) "
        f"VALUES ('cont-1', 'cli', '{root}', 1796646000.0, '{checkout}');"
        "INSERT INTO messages (session_id, role, content, timestamp) "
        "VALUES ('cont-1', 'assistant', 'Went on after the summary.', 1796646001.0);"
    )
    path = database("hermes", checkout, edit)
    payload = {"sessionID": "cont-1", "cwd": str(checkout), "event": "on_session_finalize"}
    end = session_end("hermes", payload, {"HERMES_HOME": str(path.parent)})
    assert end.session_id == root
    (run,) = import_session_database("hermes", path).runs
    assert run.linked["cont-1"] == "worker"
    (alone,) = import_session_database("hermes", path, "cont-1").runs
    assert alone.run_id == f"hermes-{root}"


def test_opencode_compaction_resets_the_sessions_ledger(checkout: Path, tmp_path: Path) -> None:
    store = tmp_path / "lessons.sqlite3"
    publish(store, [repository_lesson("Use the loader", RECOMMENDATION, files=["src/a.py"])])
    env = hook_env(tmp_path / "state", store)
    (read, *_) = [p["input"] for p in payloads("opencode", checkout) if p["args"] == ["after-tool"]]

    def card() -> bool:
        done = run_hook("after-tool", json.dumps(read), env)
        return RECOMMENDATION in done.stdout.decode()

    assert card() and not card()  # once per session
    compacted = {"sessionID": read["sessionID"], "cwd": str(checkout), "event": "session.compacted"}
    assert not card()
    done = subprocess.run([sys.executable, "-m", "active_memory.hooks.command", "context",
                           "opencode"], input=json.dumps(compacted).encode(), env=env,
                          capture_output=True, check=False)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, b"")
    assert card()  # the compacted context holds no card: it comes once more


def test_the_cli_takes_the_session_end_of_every_harness_the_hook_knows() -> None:
    from active_memory.commands.hook import SESSION_END_HARNESSES
    from active_memory.hooks.session_end import HARNESSES

    assert SESSION_END_HARNESSES == HARNESSES


@pytest.mark.parametrize("harness", ["opencode", "hermes"])
def test_importing_never_writes_to_the_clients_database(harness: str, checkout: Path) -> None:
    path = database(harness, checkout)
    before = {p.name: p.read_bytes() for p in path.parent.iterdir()}
    assert import_session_database(harness, path).runs
    assert {p.name: p.read_bytes() for p in path.parent.iterdir()} == before


@pytest.mark.parametrize("harness", ["opencode", "hermes"])
def test_a_session_grows_with_its_own_messages_not_with_the_databases(
    harness: str, checkout: Path
) -> None:
    path = database(harness, checkout)
    env = {"OPENCODE_DB": str(path)} if harness == "opencode" else {"HERMES_HOME": str(path.parent)}
    end = {"sessionID": root_session(harness), "cwd": str(checkout), "event": "x"}
    first = session_end(harness, end, env).size
    assert first is not None and first > 0
    other = (
        "INSERT INTO message (id, session_id, time_created, time_updated, data) "
        "VALUES ('m-other-{n}', 'ses-other', 1, 1, '{{\"role\": \"user\"}}');"
        if harness == "opencode"
        else "INSERT INTO messages (session_id, role, content, timestamp) "
        "VALUES ('other', 'user', 'another session entirely {n}', 1.0);"
    )
    with sqlite3.connect(path) as conn:  # another session writes much
        conn.executescript("".join(other.format(n=n) for n in range(50)))
    assert session_end(harness, end, env).size == first
    more = (
        f"INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES "
        f"('m-more', '{end['sessionID']}', 1, 1, '{{\"role\": \"user\"}}');"
        if harness == "opencode"
        else f"INSERT INTO messages (session_id, role, content, timestamp) VALUES "
        f"('{end['sessionID']}', 'user', 'one more turn', 1.0);"
    )
    with sqlite3.connect(path) as conn:
        conn.executescript(more)
    grown = session_end(harness, end, env).size
    assert grown is not None and grown > first
