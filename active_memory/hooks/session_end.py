"""`active-memory-hook session-end claude|codex|opencode|pi|gemini|copilot|hermes [--store
PATH_OR_URL]`: put a finished harness session in the store's postmortem queue.

Stdin is the harness's own end-of-session payload:

- Claude Code `SessionEnd`: `session_id`, `transcript_path`, `cwd`, `hook_event_name`,
  `reason` (clear, logout, prompt_input_exit, other).
- Codex (0.17x): `Stop`, fired after every turn: `session_id`, `transcript_path` (may be
  null), `cwd`, `model`, `turn_id`, `last_assistant_message`, `stop_hook_active`,
  `permission_mode`; and `SessionEnd`: `session_id`, `transcript_path` (may be null),
  `cwd`, `reason`. A `Stop` is a turn end: the worker waits for the session to settle.
- OpenCode (our plugin, 1.18): `sessionID`, `cwd`, `event` (`session.idle` when a turn
  is over, `session.end` when OpenCode exits); the session lives in OpenCode's database,
  `$OPENCODE_DB` or `$XDG_DATA_HOME/opencode/opencode.db` (default
  `~/.local/share/opencode/opencode.db`), which the entry names as its transcript.
- Hermes (our plugin, 0.19): `sessionID`, `cwd`, `event` (`on_session_end` after every
  turn, `on_session_finalize` when the session is over); the session lives in
  `$HERMES_HOME/state.db` (default `~/.hermes/state.db`).
- Pi (our extension's `session_shutdown`): `sessionID`, `cwd`, `transcriptPath` (the
  session file), `event`.
- Gemini CLI `SessionEnd` (0.61, captured): `session_id`, `transcript_path`, `cwd`,
  `hook_event_name`, `timestamp`, `reason`.
- Copilot CLI `sessionEnd` (1.0.102, captured): `sessionId`, `timestamp`, `cwd`,
  `reason`; no transcript path: it is `$COPILOT_HOME/session-state/<sessionId>/events.jsonl`.

Then it starts this machine's worker of the store unless one runs
(`hooks/worker_start.py`; `[worker] enabled = false` turns that off). A session end
that cannot reach the store (a PostgreSQL server away, a SQLite lock held past the
hook's bound) is kept in the spool (`store/spool.py`) and queued by the next hook,
worker or `queue` that reaches the store; the spooled ends this hook finds go in after
its own.

Like every hook it never fails or delays the session: on any problem it prints nothing,
exits 0 and writes one line to `<state dir>/active-memory/recall/hook.log`. It imports
the standard library and `active_memory.store.enqueue` only (a SQLite store is written
with `sqlite3`; a PostgreSQL store loads asyncpg).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from active_memory.store.queue import SessionEnd

HARNESSES = ("claude", "codex", "opencode", "pi", "gemini", "copilot", "hermes")
USAGE = (
    "usage: active-memory-hook session-end claude|codex|opencode|pi|gemini|copilot|hermes "
    "[--store PATH_OR_URL] "
    "(session-end JSON on stdin)"
)
MAX_ID = 256


def parse_arguments(arguments: Sequence[str]) -> tuple[str, str | None]:
    """(harness, --store value or None); raises ValueError with the usage."""
    harness, store, rest = "", None, list(arguments)
    while rest:
        item = rest.pop(0)
        if item == "--store" and rest:
            store = rest.pop(0)
        elif item.startswith("--store="):
            store = item.split("=", 1)[1]
        elif not harness and item.lower() in HARNESSES:
            harness = item.lower()
        else:
            raise ValueError(f"unexpected argument {item!r}; {USAGE}")
    if not harness:
        raise ValueError(f"name the harness; {USAGE}")
    return harness, store


def session_end(harness: str, payload: Any, env: Mapping[str, str] | None = None) -> SessionEnd:
    """The end event a payload describes; raises ValueError naming what is wrong.

    `env` locates the session store of a client whose hook names no transcript: Copilot
    CLI's session folder (`COPILOT_HOME`), OpenCode's database (`OPENCODE_DB`,
    `XDG_DATA_HOME`), Hermes' (`HERMES_HOME`); `HOME` otherwise.
    """
    from active_memory.store.queue import SessionEnd

    if not isinstance(payload, dict):
        raise ValueError("the session-end payload is not a JSON object")
    environment = os.environ if env is None else env
    if harness in ("opencode", "pi", "hermes"):
        session_id = payload.get("sessionID") or payload.get("session_id")
        transcript = payload.get("transcriptPath") or payload.get("transcript_path")
        if not transcript and harness != "pi":
            transcript = session_database(harness, environment)
        event = payload.get("event") or DEFAULT_EVENTS[harness]
    elif harness == "copilot":
        session_id = payload.get("sessionId")
        transcript = _copilot_events(session_id, environment)
        event = "sessionEnd"
    else:
        session_id = payload.get("session_id")
        transcript = payload.get("transcript_path")
        event = payload.get("hook_event_name") or "SessionEnd"
    if harness == "hermes" and isinstance(session_id, str) and isinstance(transcript, str):
        session_id = _hermes_root(transcript, session_id)
    cwd = payload.get("cwd")
    model = payload.get("model")
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > MAX_ID:
        raise ValueError(f"{harness} payload has no usable session id")
    if not isinstance(cwd, str) or not cwd:
        raise ValueError(f"{harness} payload has no cwd")
    if transcript is not None and not isinstance(transcript, str):
        raise ValueError(f"{harness} payload's transcript path is not a string")
    path = ""
    if transcript:
        path = os.path.expanduser(transcript)
        if not os.path.isabs(path):
            path = os.path.join(cwd, path)
    try:
        size: int | None = os.stat(path).st_size if path else None
    except OSError:
        size = None  # not written yet, or gone: the worker reports it
    if harness in SESSION_SIZE_QUERIES and size is not None:
        # One database holds every session: the session's own size says whether it grew.
        size = _session_size(harness, path, session_id.strip())
    from active_memory.processes import host_name

    return SessionEnd(
        harness=harness,
        session_id=session_id.strip(),
        transcript=path,
        cwd=cwd,
        event=str(event)[:64],
        model=model if isinstance(model, str) else "",
        size=size,
        host=host_name(),
    )


DEFAULT_EVENTS = {"opencode": "session.end", "pi": "session_shutdown", "hermes": "on_session_end"}
"""The event a payload that names none stands for (a final one for OpenCode, whose
plugin always names it; a turn end for Hermes, the safe choice)."""


def session_database(harness: str, env: Mapping[str, str]) -> str:
    """Where OpenCode 1.18 (`opencode.db`) or Hermes 0.19 (`state.db`) keeps sessions."""
    home = env.get("HOME") or "~"
    if harness == "opencode":
        # OpenCode's own rule: OPENCODE_DB absolute, or a name in its data folder.
        data = env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
        name = env.get("OPENCODE_DB") or "opencode.db"
        return os.path.join(os.path.expanduser(data), "opencode", os.path.expanduser(name))
    hermes_home = env.get("HERMES_HOME") or os.path.join(home, ".hermes")
    return os.path.join(os.path.expanduser(hermes_home), "state.db")


SESSION_SIZE_QUERIES = {
    "opencode": (
        "SELECT (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM message WHERE session_id = ?1)"
        " + (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM part WHERE session_id = ?1)"
    ),
    "hermes": (
        "WITH RECURSIVE chain(id) AS (SELECT ?1 UNION SELECT s.id FROM sessions s"
        " JOIN chain c ON s.parent_session_id = c.id)"
        " SELECT COALESCE(SUM(LENGTH(COALESCE(content, '')) + LENGTH(COALESCE(tool_calls, ''))),"
        " 0) FROM messages WHERE session_id IN (SELECT id FROM chain)"
    ),
}
"""The bytes of one session in a client's database (Hermes: with the sessions that
continue it or work for it), the queue's measure of whether a session grew since its
postmortem: the database's own size grows with every other session too."""


def _session_size(harness: str, database: str, session_id: str) -> int | None:
    import sqlite3

    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=0.5)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute(SESSION_SIZE_QUERIES[harness], (session_id,)).fetchone()
    except sqlite3.Error:
        return None  # unknown: a later end cannot re-open a finished entry by mistake
    finally:
        conn.close()
    return int(row[0]) if row and isinstance(row[0], int) else None


def _hermes_root(database: str, session_id: str) -> str:
    """The conversation a Hermes session ID belongs to: the session it continues after
    compression (Hermes goes on under a new ID whose parent ended for `compression`), or
    the one a sub-agent (`_delegate_from`) works for; so one conversation is one queue
    entry. `session_id` itself when nothing says otherwise."""
    import sqlite3

    path = os.path.abspath(os.path.expanduser(database))
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.5)
    except sqlite3.Error:
        return session_id
    current = session_id
    try:
        for _ in range(100):
            row = conn.execute(
                "SELECT p.id, p.end_reason, "
                "json_extract(COALESCE(s.model_config, '{}'), '$._delegate_from') "
                "FROM sessions s JOIN sessions p ON p.id = s.parent_session_id WHERE s.id = ?",
                (current,),
            ).fetchone()
            if row is None or (row[1] != "compression" and not row[2]):
                break
            current = str(row[0])
    except sqlite3.Error:
        return session_id
    finally:
        conn.close()
    return current


def _copilot_events(session_id: Any, env: Mapping[str, str]) -> str | None:
    # Copilot CLI keeps each session's events in $COPILOT_HOME/session-state/<id>/.
    if not isinstance(session_id, str) or not session_id or "/" in session_id:
        return None
    home = env.get("COPILOT_HOME") or os.path.join(env.get("HOME") or "~", ".copilot")
    return os.path.join(os.path.expanduser(home), "session-state", session_id, "events.jsonl")


def respond(arguments: Sequence[str], data: bytes, env: Mapping[str, str]) -> list[str]:
    """Enqueue the end `data` describes (or spool it), then start the worker; returns what
    the hook log should say. Raises when the end is lost (the caller logs it)."""
    import json

    from active_memory.store import spool
    from active_memory.store.enqueue import enqueue
    from active_memory.store.location import mask_url, resolve_store_location

    harness, option = parse_arguments(arguments)
    end = session_end(harness, json.loads(data.decode("utf-8")), env)
    location = resolve_store_location(option, env)
    notes: list[str] = []
    taken = spool.take(location, env)
    try:
        _, written = enqueue(location, end, spooled=[item.end for item in taken])
    except Exception as exc:
        spool.settle(taken, 0)
        reason = " ".join(str(exc).split()) or type(exc).__name__
        try:
            spool.spool(location, end, env)
        except (spool.SpoolFull, OSError) as full:
            raise RuntimeError(
                f"{mask_url(location)}: {reason}; the session end could not be spooled "
                f"either ({full}), so it is lost; import it by hand later"
            ) from None
        notes.append(
            f"could not queue the session end ({reason}); it waits in the spool "
            f"({spool.spooled(location, env)} waiting) until a hook, worker or "
            "`active-memory queue` reaches the store"
        )
    else:
        spool.settle(taken, written)
        if written:
            notes.append(f"queued {written} spooled session end(s)")
    notes.extend(_start_worker(location, env))
    return notes


def _start_worker(location: str, env: Mapping[str, str]) -> list[str]:
    try:
        from active_memory.hooks.worker_start import start_worker

        start_worker(location, env)
    except Exception as exc:  # the end is queued: a worker typed later still runs it
        return [f"the worker was not started: {' '.join(str(exc).split())}"]
    return []


def main(arguments: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    """Read the payload from stdin and enqueue it; always 0 (errors are logged)."""
    import sys

    environment = os.environ if env is None else env
    name = "session-end " + (arguments[0] if arguments else "-")
    # What the store says on stderr (e.g. a permissions note) belongs in the hook log: the
    # harness shows a hook's stderr to the person as if something went wrong.
    import contextlib
    import io

    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            notes = respond(arguments, sys.stdin.buffer.read(), environment)
    except BaseException as exc:  # a hook must never fail the session
        from active_memory.hooks.hook_log import log_error

        log_error(name, exc, environment)  # one line: the failure, not what preceded it
        return 0
    if said.getvalue().strip():
        notes.insert(0, said.getvalue())
    if notes:
        from active_memory.hooks.hook_log import log_line

        for note in notes:
            log_line(name, note, environment)
    return 0
