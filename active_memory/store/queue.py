"""The postmortem queue kept in the lesson store: what an entry is, and every decision
about it, the same for every backend (a backend only reads rows and runs the SQL).

Time model. Every time is seconds since the epoch on the *store's* clock: the machine's
clock for SQLite (one machine), the server's `clock_timestamp()` for PostgreSQL (so the
workers of many machines agree on when a lease expires). A backend reads `now` once per
transaction and hands it to the functions here.

- An end event (`SessionEnd`) inserts or refreshes the one entry of (harness, session).
  A *final* event (`FINAL_EVENTS`: Claude Code, Codex and Gemini CLI `SessionEnd`,
  Copilot CLI `sessionEnd`, Pi's `session_shutdown` but a reload, OpenCode's
  `session.end` at exit, Hermes' `on_session_finalize`) makes the entry claimable at
  once; a *turn* event (Codex `Stop`, OpenCode's `session.idle`, Hermes'
  `on_session_end`, Pi's reload, after every turn) only once no other end arrived for
  the worker's settle delay.
- An entry records the machine it ended on (`host`); a worker claims only entries of
  its own machine (and older ones that name none), whose transcripts it can read.
- A claim moves `pending` → `running` with a lease (`lease_owner`, `lease_expires`) and
  counts an attempt. A `running` entry whose lease expired is claimable by any worker
  (its worker died); past `MAX_CLAIMS` claims it is `failed` instead (a poisoned entry
  cannot crash every worker forever).
- A worker holds a repository scope while it runs a postmortem (`bind_scope`): a second
  entry of a held scope goes back to `pending` for `SCOPE_WAIT` seconds, uncounted.
- Finishing needs the lease: `done` (with a result summary), `failed` (with its reason),
  or `pending` again (released by a draining worker, uncounted). A `done` entry whose
  session grew after its postmortem started (a later end with a bigger transcript) goes
  back to `pending` instead, and so does a `done` or `failed` entry on such an end.

Nothing here drops an entry; only `queue drop ID` deletes one. Reasons and results pass
the credential screen (`credential_gate`) before they are stored; the transcript path,
cwd and session ID are kept as given: they are what the worker must find the session by.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from active_memory.credential_gate import mask, mask_value

QueueState = Literal["pending", "running", "done", "failed"]
STATES: tuple[QueueState, ...] = ("pending", "running", "done", "failed")

MAX_CLAIMS = 5
"""Claims of one entry (crashes included) before it is failed instead of claimed again."""
SCOPE_WAIT = 5.0
"""How long an entry whose repository scope another worker holds waits before a retry."""
DEFAULT_LEASE = 60.0
DEFAULT_SETTLE = 120.0
"""Quiet time after a turn event (Codex `Stop`) before the session counts as settled."""

FINAL_EVENTS = frozenset({
    "SessionEnd",  # Claude Code, Codex, Gemini CLI
    "sessionEnd",  # Copilot CLI
    "session.end", "session.deleted", "session.idle.final",  # OpenCode
    "on_session_finalize",  # Hermes
    # Pi's session_shutdown, by its reason: the session is over (quit) or replaced by
    # another (new, resume, fork). A reload keeps the session going: a turn end.
    "session_shutdown", "session_shutdown:quit", "session_shutdown:new",
    "session_shutdown:resume", "session_shutdown:fork",
})  # fmt: skip

QUEUE_COLUMNS = (
    "id, harness, session_id, transcript, cwd, model, event, final, size, processed_size, "
    "state, attempts, ends, enqueued_at, updated_at, last_end_at, not_before, lease_owner, "
    "lease_expires, scope, holds_scope, reason, result, host"
)
_NAMES = tuple(name.strip() for name in QUEUE_COLUMNS.split(","))


@dataclass(frozen=True, slots=True)
class SessionEnd:
    """One end event of a harness session, as a session-end hook saw it."""

    harness: str
    session_id: str
    transcript: str  # '' when the harness named none
    cwd: str
    event: str
    model: str = ""
    size: int | None = None  # transcript bytes at the event (None: unknown)
    host: str = ""  # the machine it ended on (where its transcript can be read)

    @property
    def final(self) -> bool:
        """The session is over (not only a turn)."""
        return self.event in FINAL_EVENTS


@dataclass(frozen=True, slots=True)
class QueueEntry:
    """One queued session, as stored."""

    id: int
    harness: str
    session_id: str
    transcript: str
    cwd: str
    model: str
    event: str
    final: bool
    size: int | None
    processed_size: int | None
    state: QueueState
    attempts: int
    ends: int
    enqueued_at: float
    updated_at: float
    last_end_at: float
    not_before: float
    lease_owner: str | None
    lease_expires: float | None
    scope: str
    holds_scope: bool
    reason: str
    result: dict[str, Any] | None = field(default=None)
    host: str = ""  # where it was enqueued: only that machine's workers claim it

    def to_json(self) -> dict[str, Any]:
        """The entry in `queue --json` (times as epoch seconds)."""
        data = {name: getattr(self, name) for name in _NAMES}
        data["final"] = bool(self.final)
        data["holds_scope"] = bool(self.holds_scope)
        return data


def row_to_entry(row: Sequence[Any]) -> QueueEntry:
    """A `postmortem_queue` row (QUEUE_COLUMNS order) as an entry."""
    values = dict(zip(_NAMES, row, strict=True))
    values["final"] = bool(values["final"])
    values["holds_scope"] = bool(values["holds_scope"])
    values["result"] = json.loads(values["result"]) if values["result"] else None
    return QueueEntry(**values)


Values = dict[str, Any]


def plan_enqueue(end: SessionEnd, current: QueueEntry | None, now: float) -> Values | None:
    """The columns to insert (no `current`) or update; None leaves the entry as it is.

    A later end refreshes a pending entry; it marks a running one (its size: `finish`
    re-opens it if the session grew); it re-opens a done or failed entry only when the
    transcript grew past what its last postmortem read.
    """
    seen: Values = {
        "transcript": end.transcript or (current.transcript if current else ""),
        "cwd": end.cwd or (current.cwd if current else ""),
        "model": end.model or (current.model if current else ""),
        "host": end.host or (current.host if current else ""),
        "event": end.event,
        "final": int(end.final),
        "last_end_at": now,
        "updated_at": now,
    }
    if end.size is not None:
        seen["size"] = end.size
    if current is None:
        return {
            **seen,
            "harness": end.harness,
            "session_id": end.session_id,
            "size": end.size,
            "state": "pending",
            "attempts": 0,
            "ends": 1,
            "enqueued_at": now,
            "not_before": now,
            "scope": "",
            "holds_scope": 0,
            "reason": "",
        }
    seen["ends"] = current.ends + 1
    if current.state in ("pending", "running"):
        return seen
    if not _grew(end.size, current.processed_size):
        return None  # the same session ending again: already handled
    return {
        **seen,
        "state": "pending",
        "attempts": 0,
        "not_before": now,
        "reason": f"re-opened: the session grew after its {current.state} postmortem",
    }


def claimable(
    entry: QueueEntry, now: float, settle: float, busy: set[str], host: str | None = None
) -> bool:
    """May a worker claim `entry` now? `busy`: scopes another worker holds; `host`: the
    worker's machine (None: any), which claims only its own entries and unplaced ones."""
    if host is not None and entry.host not in ("", host):
        return False
    if entry.state == "running":
        return entry.lease_expires is not None and entry.lease_expires <= now
    if entry.state != "pending" or entry.not_before > now:
        return False
    if not entry.final and entry.last_end_at + settle > now:
        return False
    return not (entry.scope and entry.scope in busy)


def plan_claim(entry: QueueEntry, owner: str, now: float, lease: float) -> Values:
    """The columns of a claim by `owner`, or of a failure when claimed too often."""
    attempts = entry.attempts + 1
    if attempts > MAX_CLAIMS:
        return {
            **_released(now),
            "state": "failed",
            "reason": f"claimed {entry.attempts} times without finishing (its worker crashed "
            f"or was killed, or its lane could not run it, each time); last: "
            f"{entry.reason or 'no reason recorded'}",
        }
    return {
        "state": "running",
        "attempts": attempts,
        "lease_owner": owner,
        "lease_expires": now + lease,
        "processed_size": entry.size,
        "holds_scope": 0,
        "updated_at": now,
    }


def plan_bind_scope(
    entry: QueueEntry, scope: str, now: float, held_by: str | None
) -> tuple[bool, Values]:
    """Hold `scope` for a running entry, or send the entry back (uncounted) to wait."""
    if held_by is None:
        return True, {"scope": scope, "holds_scope": 1, "updated_at": now}
    return False, {
        **_released(now),
        "state": "pending",
        "attempts": max(entry.attempts - 1, 0),
        "scope": scope,
        "not_before": now + SCOPE_WAIT,
        "reason": mask(f"waiting: {scope} is in a postmortem by {held_by}"),
    }


Outcome = Literal["done", "failed", "released", "retry"]


def plan_finish(
    entry: QueueEntry, outcome: Outcome, now: float, *, reason: str = "",
    result: dict[str, Any] | None = None, retry_in: float = 0.0,
) -> Values:  # fmt: skip
    """The columns that end a running entry's attempt.

    `released`: back to pending, the attempt uncounted (a drained worker, a lane this
    worker lacks); `retry`: back to pending after `retry_in`, the attempt counted (a lane
    that failed to run: after `MAX_CLAIMS` the entry fails). `done` goes back to pending
    instead when a later end showed the session grew meanwhile.
    """
    base = _released(now)
    # A reason or a result may quote an error (a store URL with its password, a key in a
    # command): the queue is a file we write too, so both pass the one screen.
    reason = mask(reason)
    result = mask_value(result) if result is not None else None
    if outcome in ("released", "retry"):
        attempts = max(entry.attempts - 1, 0) if outcome == "released" else entry.attempts
        return {**base, "state": "pending", "not_before": now + retry_in, "reason": reason,
                "attempts": attempts}  # fmt: skip
    if outcome == "failed":
        return {**base, "state": "failed", "reason": reason}
    values = {**base, "result": json.dumps(result or {}, sort_keys=True), "reason": reason}
    if _grew(entry.size, entry.processed_size):
        return {**values, "state": "pending", "attempts": 0, "not_before": now,
                "reason": "re-opened: the session grew during its postmortem"}  # fmt: skip
    return {**values, "state": "done"}


def plan_retry(entry: QueueEntry, now: float) -> Values:
    """`queue retry ID`: back to pending at once, attempts reset."""
    return {**_released(now), "state": "pending", "attempts": 0, "not_before": now,
            "reason": f"retried by hand (was {entry.state})"}  # fmt: skip


def lease_live(entry: QueueEntry, now: float) -> bool:
    """A running entry whose worker still holds its lease."""
    return entry.state == "running" and (entry.lease_expires or 0) > now


def applied(entry: QueueEntry, values: Values) -> QueueEntry:
    """`entry` as it is once `values` are written."""
    changed = {k: v for k, v in values.items() if k in QueueEntry.__dataclass_fields__}
    for flag in ("final", "holds_scope"):
        if flag in changed:
            changed[flag] = bool(changed[flag])
    return replace(entry, **changed)


def _released(now: float) -> Values:
    return {"lease_owner": None, "lease_expires": None, "holds_scope": 0, "updated_at": now}


def _grew(size: int | None, processed: int | None) -> bool:
    return size is not None and processed is not None and size > processed
