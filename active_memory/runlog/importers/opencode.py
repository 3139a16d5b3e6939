"""Run records from OpenCode's session database (`~/.local/share/opencode/opencode.db`,
OpenCode 1.18; `$OPENCODE_DB` or `$XDG_DATA_HOME/opencode/` move it).

OpenCode 1.18 keeps every session in one SQLite database (recorded from the binary;
tests/fixtures/harness_sessions/README.md):

- `session` {`id`, `parent_id`, `directory`, `title`, `time_created`}: a session; one
  with a `parent_id` is a sub-agent's (the `task` tool), read into its root session's
  record as node `worker/agent-<its session id>`;
- `message` {`id`, `session_id`, `time_created`, `data`}: `data.role` `user` (a prompt,
  opening a turn) or `assistant` (`modelID`, `providerID`, `error` {`name`, `data`:
  {`message`}} when the turn ended on an error);
- `part` {`message_id`, `data`}: `text` {`text`, `synthetic`?}, `tool` {`tool`,
  `callID`, `state`: {`status`, `input`, `output`, `error`, `metadata`: {`exit`,
  `output`}}}; `step-start`, `step-finish`, `reasoning`, `patch`, … are skipped.

A tool call failed when its state is `error` (the tool refused or threw: `File not
found: …`), or it `completed` with a non-zero `metadata.exit` (a shell command; its
output is `metadata.output`, without the cards our plugin appended). A person's refusal
at a permission prompt (`The user rejected permission …`) or an aborted call is no
failure. A call still `pending` or `running` when the database was read has no outcome.

Each root session is one run, `opencode-<session id>` (the key the plugin's hook records
use); `import opencode PATH` imports every root session in PATH (the database, or the
folder holding it), the worker the one its queue entry names.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from active_memory.runlog.importers.agent_logs import LogReader, finish, text_of
from active_memory.runlog.importers.common import ImportResult, Skipped
from active_memory.runlog.importers.session import agent_node, classify_error
from active_memory.runlog.importers.session_db import (
    database_path,
    iso_time,
    json_value,
    open_database,
    without_cards,
)

DATABASE = "opencode.db"
WHAT = "OpenCode database (opencode.db)"
MAX_SUBAGENT_SESSIONS = 1000
"""Sub-agent sessions followed under one root (a runaway chain stops there, reported)."""
_DECLINED = ("rejected permission", "user dismissed", "aborted")


def import_database(path: str | Path, session_id: str | None = None) -> ImportResult:
    """Run records for the root sessions of OpenCode's database at `path` (or only
    `session_id`'s); sessions that hold no prompt are reported in `skipped`."""
    source = database_path(path, DATABASE)
    result = ImportResult()
    conn = open_database(source, WHAT, ("session", "message", "part"))
    try:
        if session_id is not None:
            roots = conn.execute(
                "SELECT id, directory FROM session WHERE id = ?", (session_id,)
            ).fetchall()
            if not roots:
                result.skipped.append(Skipped(f"no session {session_id} in {source}"))
        else:
            roots = conn.execute(
                "SELECT id, directory FROM session WHERE parent_id IS NULL "
                "ORDER BY time_created, id"
            ).fetchall()
        for root, directory in roots:
            _import_root(conn, source, str(root), directory, result)
    except sqlite3.DatabaseError as exc:
        result.skipped.append(Skipped(f"{source}: cannot be read: {exc}"))
    finally:
        conn.close()
    return result


def _import_root(
    conn: sqlite3.Connection, source: Path, root: str, directory: Any, result: ImportResult
) -> None:
    reader = LogReader()
    reader.start("opencode", root, directory if isinstance(directory, str) else None)
    subagents = _subagent_sessions(conn, root, reader)
    for message_id, session, at, data in _messages(conn, [root, *subagents]):
        message = json_value(data, str(source))
        if not isinstance(message, dict):
            reader.ignore("message that is not a JSON object")
            continue
        agent = None if session == root else session
        parts = _parts(conn, message_id, str(source), reader)
        _message(reader, message, parts, at, agent)
    before = len(result.runs)
    finish(reader, source, result)
    if len(result.runs) > before:
        result.runs[-1].linked = {session: agent_node(session) for session in subagents}


def _subagent_sessions(conn: sqlite3.Connection, root: str, reader: LogReader) -> list[str]:
    found: list[str] = []
    frontier = [root]
    while frontier and len(found) < MAX_SUBAGENT_SESSIONS:
        marks = ",".join("?" * len(frontier))
        rows = conn.execute(
            f"SELECT id FROM session WHERE parent_id IN ({marks}) ORDER BY time_created, id",
            frontier,
        ).fetchall()
        frontier = [str(row[0]) for row in rows][: MAX_SUBAGENT_SESSIONS - len(found)]
        found.extend(frontier)
    if frontier and len(found) >= MAX_SUBAGENT_SESSIONS:
        reader.ignore(f"sub-agent sessions past the first {MAX_SUBAGENT_SESSIONS}")
    return found


def _messages(conn: sqlite3.Connection, sessions: list[str]) -> Iterator[tuple[str, str, Any, Any]]:
    marks = ",".join("?" * len(sessions))
    query = (
        f"SELECT id, session_id, time_created, data FROM message WHERE session_id IN ({marks}) "
        "ORDER BY time_created, id"
    )
    for row in conn.execute(query, sessions):
        yield str(row[0]), str(row[1]), row[2], row[3]


def _message(
    reader: LogReader,
    message: dict[str, Any],
    parts: list[dict[str, Any]],
    created: Any,
    agent: str | None,
) -> None:
    run = reader.run
    assert run is not None
    at = iso_time(created, milliseconds=True)
    run.seen(at)
    role = message.get("role")
    if role == "user":
        if agent is not None:
            return  # a sub-agent's prompt is its parent's `task` call, already counted
        prompt = "\n".join(
            str(part.get("text")) for part in parts
            if part.get("type") == "text" and not part.get("synthetic")
            and isinstance(part.get("text"), str)
        )  # fmt: skip
        run.open_turn(at, prompt)
        return
    if role != "assistant":
        reader.ignore(f"{role} message" if isinstance(role, str) else "message without a role")
        return
    if agent is None:
        if isinstance(message.get("modelID"), str):
            run.model = message["modelID"]
        if isinstance(message.get("providerID"), str):
            run.provider = message["providerID"]
    for part in parts:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str) and not part.get("synthetic"):
            run.said(part["text"], at, agent)
        elif kind == "tool" and isinstance(part.get("tool"), str):
            _tool(reader, part, at, agent)
        else:
            reader.ignore(f"{kind} part" if isinstance(kind, str) else "untyped part")
    error = message.get("error")
    if isinstance(error, dict):
        data = error.get("data")
        detail = text_of(data.get("message") if isinstance(data, dict) else None)
        detail = detail or str(error.get("name") or "error")
        name = str(error.get("name") or "")
        ending = "interrupted" if name == "MessageAbortedError" else classify_error(detail, name)
        run.ended(ending, at, detail[:200], agent)


def _parts(
    conn: sqlite3.Connection, message_id: str, source: str, reader: LogReader
) -> list[dict[str, Any]]:
    parts = []
    for (data,) in conn.execute(
        "SELECT data FROM part WHERE message_id = ? ORDER BY id", (message_id,)
    ):
        part = json_value(data, source)
        if isinstance(part, dict):
            parts.append(part)
        else:
            reader.ignore("part that is not a JSON object")
    return parts


def _tool(reader: LogReader, part: dict[str, Any], at: str | None, agent: str | None) -> None:
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    assert isinstance(state, dict)
    call_id = str(part.get("callID") or part.get("id"))
    times = state.get("time") if isinstance(state.get("time"), dict) else {}
    assert isinstance(times, dict)
    started = iso_time(times.get("start"), milliseconds=True) or at
    ended = iso_time(times.get("end"), milliseconds=True) or started
    reader.call(call_id, str(part["tool"]), state.get("input"), started, agent)
    status = state.get("status")
    metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    if status == "completed":
        code = metadata.get("exit")
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        if exit_code not in (None, 0):
            raw = metadata.get("output")
            output = raw if isinstance(raw, str) else without_cards(text_of(state.get("output")))
            reader.result(call_id, ended, failed=True, detail=output, exit_code=exit_code,
                          agent=agent)  # fmt: skip
        else:
            reader.result(call_id, ended, failed=False, detail="", agent=agent)
    elif status == "error":
        detail = without_cards(text_of(state.get("error")))
        declined = any(word in detail.lower()[:300] for word in _DECLINED)
        reader.result(call_id, ended, failed=True, detail=detail, declined=declined,
                      agent=agent)  # fmt: skip
    else:
        assert reader.run is not None
        reader.run.tool_abandoned(call_id)  # still pending or running: no outcome yet
