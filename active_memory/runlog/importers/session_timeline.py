"""A session's events in order, as its run record lists them.

Event times never go backwards: an earlier time than the latest already used keeps
that latest time (counted in the import report as `times_clamped`). `safe_log` lines
stop at `MAX_LOG_LINES` per run; the rest are counted.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from active_memory.runlog.importers.report import ImportReport

MAX_LOG_LINES = 2000
"""`safe_log` lines kept per run (failed tools, abnormal endings); the rest are counted."""


class Timeline:
    """The events read so far (`pending`: each `{"event": …, "at"?: …}`, in order)."""

    __slots__ = ("_clock", "_logged", "pending", "report")

    def __init__(self, report: ImportReport) -> None:
        self.report = report
        self.pending: list[dict[str, Any]] = []
        self._clock: datetime | None = None
        self._logged = 0

    def event(self, kind: str, at: str | None, body: dict[str, Any]) -> None:
        """Append an event of `kind` at `at` (stamped: never before the previous one)."""
        item: dict[str, Any] = {"event": {"kind": kind, **body}}
        stamped = self.stamp(at)
        if stamped:
            item["at"] = stamped
        self.pending.append(item)

    def log(self, execution: str, at: str | None, stream: str, line: str) -> None:
        """A `safe_log` line of one execution (at most `MAX_LOG_LINES` per run)."""
        if self._logged >= MAX_LOG_LINES:
            self.report.log_lines_dropped += 1
            return
        self._logged += 1
        body = {"execution": execution, "stream": stream, "line": line}
        self.event("safe_log", at, body)

    def stamp(self, at: str | None) -> str | None:
        """`at`, or the latest time already used when `at` is earlier: times never go back."""
        if not at:
            return None
        try:
            moment = datetime.fromisoformat(at)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        if self._clock is not None and moment < self._clock:
            self.report.times_clamped += 1
            return self._clock.isoformat().replace("+00:00", "Z")
        self._clock = moment
        return at


def stamp_only(at: str | None) -> str | None:
    """`at` when it reads as a time (unlike `Timeline.stamp`, the clock is not moved)."""
    if not at:
        return None
    try:
        datetime.fromisoformat(at)
    except ValueError:
        return None
    return at


def earliest(a: str | None, b: str | None) -> str | None:
    """The earlier of two ISO times (either may be missing or unreadable)."""
    if not a or not b:
        return a or b
    try:
        first, second = datetime.fromisoformat(a), datetime.fromisoformat(b)
        if first.tzinfo is None:
            first = first.replace(tzinfo=UTC)
        if second.tzinfo is None:
            second = second.replace(tzinfo=UTC)
    except ValueError:
        return b
    return a if first <= second else b
