"""Run records from Hermes Agent's session database (`~/.hermes/state.db`, Hermes 0.19;
`$HERMES_HOME` moves it).

Hermes 0.19 keeps sessions in one SQLite database (recorded from the binary;
tests/fixtures/harness_sessions/README.md):

- `sessions` {`id`, `parent_session_id`, `cwd`, `git_repo_root`, `git_branch`, `model`,
  `billing_provider`, `model_config`, `end_reason`, `started_at`}: a session. A child
  session continues its parent when the parent ended for `compression` (Hermes splits a
  compacted conversation into a new session ID): its messages are the same worker's;
  a child whose `model_config` carries `_delegate_from` is a sub-agent (`delegate_task`),
  read as node `worker/agent-<its session id>`; other children (branches) are sessions
  of their own;
- `messages` {`session_id`, `role`, `content`, `tool_calls`, `tool_call_id`,
  `tool_name`, `timestamp`, `finish_reason`}: `user` opens a turn, `assistant` carries
  text and `tool_calls` [{`id`, `function`: {`name`, `arguments` (JSON text)}}],
  `tool` is a call's result.

A tool call failed the way Hermes itself tells (its `_detect_tool_failure`): `terminal`
with a non-zero `exit_code` in its JSON result; any tool whose JSON result carries an
`error` (`File not found: …`); a plain result that starts with `Error`. A denied
approval (`BLOCKED: …` by the person) is no failure. The result is read without the
cards our plugin appended to it.

Each root session is one run, `hermes-<session id>` (the key the plugin's hook records
use); `import hermes PATH` imports every root session in PATH (the database, or the
Hermes home holding it), the worker the one its queue entry names.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from active_memory.runlog.importers.agent_logs import LogReader, adopt_cwd, finish
from active_memory.runlog.importers.common import ImportResult, Skipped
from active_memory.runlog.importers.session import WORKER, agent_node
from active_memory.runlog.importers.session_db import (
    database_path,
    iso_time,
    json_value,
    leading_object,
    open_database,
    without_cards,
)

DATABASE = "state.db"
WHAT = "Hermes session database (state.db)"
MAX_LINKED_SESSIONS = 1000
"""Continuations and sub-agent sessions followed under one root."""
_DECLINED = ("blocked by user", "denied by user", "user denied", "approval denied")


def import_database(path: str | Path, session_id: str | None = None) -> ImportResult:
    """Run records for the root sessions of Hermes' database at `path` (or only
    `session_id`'s); sessions that hold no prompt are reported in `skipped`."""
    source = database_path(path, DATABASE)
    result = ImportResult()
    conn = open_database(source, WHAT, ("sessions", "messages"))
    conn.row_factory = sqlite3.Row
    try:
        if session_id is not None:
            roots = _root_of(conn, session_id)
            if not roots:
                result.skipped.append(Skipped(f"no session {session_id} in {source}"))
        else:
            roots = [
                row
                for row in conn.execute("SELECT * FROM sessions ORDER BY started_at, id").fetchall()
                if _root(conn, row)
            ]
        for row in roots:
            _import_root(conn, source, row, result)
    except sqlite3.DatabaseError as exc:
        result.skipped.append(Skipped(f"{source}: cannot be read: {exc}"))
    finally:
        conn.close()
    return result


def _root_of(conn: sqlite3.Connection, session_id: str) -> list[sqlite3.Row]:
    # A continuation after compression (the ID Hermes ends the session with), or a
    # sub-agent's session, belongs to the conversation it is part of: climb to its root.
    row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    for _ in range(MAX_LINKED_SESSIONS):
        if row is None or not row["parent_session_id"] or _link(conn, row) is None:
            break
        parent = conn.execute(
            "SELECT * FROM sessions WHERE id = ?", (row["parent_session_id"],)
        ).fetchone()
        if parent is None:
            break
        row = parent
    return [row] if row is not None else []


def _root(conn: sqlite3.Connection, row: sqlite3.Row) -> bool:
    parent = row["parent_session_id"]
    if not parent:
        return True
    return _link(conn, row) is None  # a branch is a session of its own


def _link(conn: sqlite3.Connection, row: sqlite3.Row) -> str | None:
    """`worker` for a continuation after compression, the session ID for a sub-agent,
    None for a child that is a session of its own (a branch)."""
    config = json_value(row["model_config"], "model_config")
    if isinstance(config, dict) and config.get("_delegate_from"):
        return str(row["id"])
    parent = conn.execute(
        "SELECT end_reason FROM sessions WHERE id = ?", (row["parent_session_id"],)
    ).fetchone()
    return "worker" if parent is not None and parent["end_reason"] == "compression" else None


def _import_root(
    conn: sqlite3.Connection, source: Path, row: sqlite3.Row, result: ImportResult
) -> None:
    reader = LogReader()
    root = str(row["id"])
    run = reader.start("hermes", root, None)
    cwd = row["git_repo_root"] or row["cwd"]
    if isinstance(row["cwd"], str) and row["cwd"]:
        adopt_cwd(run, row["cwd"])
    elif isinstance(cwd, str) and cwd:
        adopt_cwd(run, cwd)
    if isinstance(row["git_branch"], str) and row["git_branch"]:
        run.branch = row["git_branch"]
    if isinstance(row["model"], str) and row["model"]:
        run.model = row["model"]
    if isinstance(row["billing_provider"], str) and row["billing_provider"]:
        run.provider = row["billing_provider"]
    agents = {root: None, **_linked(conn, root, reader)}
    marks = ",".join("?" * len(agents))
    query = (
        "SELECT session_id, role, content, tool_calls, tool_call_id, tool_name, timestamp "
        f"FROM messages WHERE session_id IN ({marks}) ORDER BY timestamp, id"
    )
    for message in conn.execute(query, list(agents)):
        _message(reader, message, agents.get(str(message["session_id"])), str(source))
    before = len(result.runs)
    finish(reader, source, result)
    if len(result.runs) > before:
        result.runs[-1].linked = {
            session: agent_node(agent) if agent else WORKER
            for session, agent in agents.items()
            if session != root
        }


def _linked(conn: sqlite3.Connection, root: str, reader: LogReader) -> dict[str, str | None]:
    # Continuations stay the worker (None); sub-agents get their own node (their ID).
    linked: dict[str, str | None] = {}
    frontier = [root]
    while frontier and len(linked) < MAX_LINKED_SESSIONS:
        marks = ",".join("?" * len(frontier))
        rows = conn.execute(
            f"SELECT * FROM sessions WHERE parent_session_id IN ({marks}) ORDER BY started_at",
            frontier,
        ).fetchall()
        frontier = []
        for row in rows:
            link = _link(conn, row)
            if link is None or str(row["id"]) in linked:
                continue
            parent_agent = linked.get(str(row["parent_session_id"]))
            # A continuation of a sub-agent is still that sub-agent.
            linked[str(row["id"])] = parent_agent if link == "worker" else link
            frontier.append(str(row["id"]))
    if frontier:
        reader.ignore(f"linked sessions past the first {MAX_LINKED_SESSIONS}")
    return linked


def _message(reader: LogReader, message: sqlite3.Row, agent: str | None, source: str) -> None:
    run = reader.run
    assert run is not None
    at = iso_time(message["timestamp"], milliseconds=False)
    run.seen(at)
    role = message["role"]
    content = message["content"] if isinstance(message["content"], str) else ""
    if role == "user":
        if agent is None:
            run.open_turn(at, content)
        return  # a sub-agent's task is its parent's `delegate_task` call
    if role == "assistant":
        if content.strip():
            run.said(content, at, agent)
        calls = json_value(message["tool_calls"], source)
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                continue
            arguments = json_value(function.get("arguments"), source)
            call_id = str(call.get("id") or call.get("call_id"))
            reader.call(call_id, function["name"], arguments, at, agent)
        return
    if role == "tool":
        failed, detail, exit_code = tool_outcome(message["tool_name"], content)
        declined = failed and any(word in detail.lower()[:300] for word in _DECLINED)
        reader.result(str(message["tool_call_id"]), at, failed=failed, detail=detail,
                      declined=declined, exit_code=exit_code, agent=agent)  # fmt: skip
        return
    reader.ignore(f"{role} message" if isinstance(role, str) else "message without a role")


def tool_outcome(tool: Any, stored: str) -> tuple[bool, str, int | None]:
    """(failed, the output or error to quote, exit code) of a stored tool result."""
    text = without_cards(stored)
    data = leading_object(text)
    if isinstance(data, dict):
        error = data.get("error") or data.get("message")
        code = data.get("exit_code")
        exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        if tool == "terminal":
            if exit_code not in (None, 0):
                output = data.get("output")
                body = "\n".join(str(v) for v in (output, data.get("error")) if v)
                return True, body, exit_code
            return False, "", exit_code
        if error and (data.get("success") is False or "error" in data):
            return True, str(error), exit_code
        return False, "", exit_code
    return text.startswith("Error"), text if text.startswith("Error") else "", None
