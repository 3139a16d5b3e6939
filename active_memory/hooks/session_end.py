"""`active-memory-hook session-end claude|codex|opencode|pi|gemini|copilot [--store
PATH_OR_URL]`: put a finished harness session in the store's postmortem queue.

Stdin is the harness's own end-of-session payload:

- Claude Code `SessionEnd`: `session_id`, `transcript_path`, `cwd`, `hook_event_name`,
  `reason` (clear, logout, prompt_input_exit, other).
- Codex (0.17x): `Stop`, fired after every turn: `session_id`, `transcript_path` (may be
  null), `cwd`, `model`, `turn_id`, `last_assistant_message`, `stop_hook_active`,
  `permission_mode`; and `SessionEnd`: `session_id`, `transcript_path` (may be null),
  `cwd`, `reason`. A `Stop` is a turn end: the worker waits for the session to settle.
- OpenCode (our plugin): `sessionID`, `cwd`, and when known `transcriptPath`, `event`,
  `model`.
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

HARNESSES = ("claude", "codex", "opencode", "pi", "gemini", "copilot")
USAGE = (
    "usage: active-memory-hook session-end claude|codex|opencode|pi|gemini|copilot "
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

    `env` locates Copilot CLI's session folder (`COPILOT_HOME`, `HOME`): its hook names
    no transcript.
    """
    from active_memory.store.queue import SessionEnd

    if not isinstance(payload, dict):
        raise ValueError("the session-end payload is not a JSON object")
    if harness in ("opencode", "pi"):
        session_id = payload.get("sessionID") or payload.get("session_id")
        transcript = payload.get("transcriptPath") or payload.get("transcript_path")
        event = payload.get("event") or ("session.end" if harness == "opencode" else
                                         "session_shutdown")  # fmt: skip
    elif harness == "copilot":
        session_id = payload.get("sessionId")
        transcript = _copilot_events(session_id, os.environ if env is None else env)
        event = "sessionEnd"
    else:
        session_id = payload.get("session_id")
        transcript = payload.get("transcript_path")
        event = payload.get("hook_event_name") or "SessionEnd"
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
