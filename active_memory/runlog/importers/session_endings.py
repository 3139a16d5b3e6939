"""How a session's turn ended, and what the run record says of it (docs/importers.md).

- a turn that ends with an answer settles `verified`; one that never got its answer is
  interrupted: no outcome, never `verified`;
- a turn that ends on an API error settles `error` with code `timeout` when the error
  says it timed out, `crash` for a provider failure (5xx, overloaded, connection lost),
  `refusal`/`authentication_required` for a login failure; other errors (rate or usage
  limits, bad requests) leave the visit without an outcome, which is never evidence;
- the run's outcome is that of its last turn: verified → `succeeded`, interrupted →
  `cancelled`, anything else → `failed`.
"""

from __future__ import annotations

from typing import Any, Literal

from active_memory.runlog.importers.error_lines import informative_error

Ending = Literal["verified", "timeout", "crash", "refusal", "interrupted", "unknown"]

_RATE = (
    "rate limit",
    "rate_limit",
    "429",
    "usage limit",
    "session limit",
    "hit your limit",
    "limit reached",
    "quota",
)
_TIMEOUT = ("timed out", "timeout", "etimedout", "deadline exceeded")
_AUTH = ("401", "403", "unauthorized", "authentication", "invalid api key", "not logged in")
_CRASH = (
    "overloaded",
    "internal server error",
    "server_error",
    "bad gateway",
    "service unavailable",
    "connection",
    "disconnected",
    "econnreset",
    "socket hang up",
    "network",
    "stream",
    "500",
    "502",
    "503",
    "504",
    "529",
)


def classify_error(text: str, flag: str | None = None) -> Ending:
    """What an API error ending a turn shows: timeout, crash, refusal, or unknown.

    Order matters: a retry limit hit on 429s is a rate limit (not evidence), even if the
    text also says "connection"; only an explicit time-out is a `timeout`.
    """
    lowered = f"{flag or ''} {text}".lower()
    if any(word in lowered for word in _RATE) and "timed out" not in lowered:
        return "unknown"
    if any(word in lowered for word in _TIMEOUT):
        return "timeout"
    if any(word in lowered for word in _AUTH):
        return "refusal"
    if any(word in lowered for word in _CRASH):
        return "crash"
    return "unknown"


def error_line(body: str) -> str:
    """The first informative line of a tool's output (error_lines.py), for `safe_log`."""
    lines = informative_error(body).splitlines()
    return lines[0] if lines else ""


def outcome_of(ending: Ending) -> dict[str, Any] | None:
    """The outcome a settled visit's `node_completed` records; None when it records none
    (interrupted or unclassified: no outcome, never evidence)."""
    if ending == "verified":
        return {"status": "verified", "output": None}
    if ending in ("timeout", "crash"):
        return {"status": "error", "code": ending, "reason": "declared_failure"}
    if ending == "refusal":
        return {"status": "error", "code": "refusal", "reason": "authentication_required"}
    return None


def run_outcome(last_ending: Ending | None) -> str:
    """The run's outcome from its last turn's ending (no turn settled: `succeeded`)."""
    return {"verified": "succeeded", "interrupted": "cancelled"}.get(
        last_ending or "verified", "failed"
    )
