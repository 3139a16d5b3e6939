"""When the worker claims, waits or stops, besides its leases (the time model is in
`worker/engine.py`):

- **The store away.** A claim (or the worker's first connection) that cannot reach the
  store is retried after 1, 2, 4, … seconds (at most `MAX_WAIT`), each time said in one
  line: `store unreachable (…), retrying in N s`. Past `give_up` seconds without the
  store (`--once` 60 s, an automatic worker 600 s, a worker run by a person never) the
  worker stops with that line.
- **The daily cap.** Before it claims, the worker reads what its postmortems on this
  machine spent today (worker_state.py's ledger); at `[worker] daily_tokens` or
  `daily_usd` it claims nothing more until the next UTC day, and says so once. The
  postmortems running when the cap is reached finish (their own deadline bounds them).
- **Idle.** An automatic worker stops once nothing was claimable, running or due soon
  for `idle` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from active_memory.worker_state import WorkerFiles, cap_reached, spend_by_day

MAX_WAIT = 30.0


@dataclass(slots=True)
class Reachability:
    """How long the store has been away, and the next wait."""

    give_up: float | None
    since: float | None = None
    wait: float = 1.0

    def failed(self, now: float) -> float:
        """The store was not reached at `now`: the seconds to wait before trying again.
        Raises `TimeoutError` once it has been away longer than `give_up`."""
        if self.since is None:
            self.since, self.wait = now, 1.0
        elif self.give_up is not None and now - self.since >= self.give_up:
            raise TimeoutError(f"the store stayed unreachable for {now - self.since:.0f} s")
        else:
            self.wait = min(self.wait * 2, MAX_WAIT)
        return self.wait

    def reached(self) -> bool:
        """The store answered; True when it had been away (worth saying)."""
        away = self.since is not None
        self.since, self.wait = None, 1.0
        return away


@dataclass(slots=True)
class SpendCap:
    """The daily cap on what this machine's worker spends on one store."""

    files: WorkerFiles | None
    daily_tokens: int | None
    daily_usd: float | None
    said: str = ""
    read_at: float = field(default=0.0)
    reason: str | None = None

    def reached(self, location: str, say: Callable[[str], None]) -> bool:
        """True when today's spend is at the cap (re-read at most every few seconds)."""
        if self.files is None or (self.daily_tokens is None and self.daily_usd is None):
            return False
        now = time.monotonic()
        if now - self.read_at >= 2.0:
            self.read_at = now
            (today,) = spend_by_day(location, days=1, files=self.files)
            self.reason = cap_reached(today, self.daily_tokens, self.daily_usd)
        if self.reason and self.reason != self.said:
            say(f"{self.reason}; pending sessions wait for the next UTC day or a higher "
                "[worker] daily_tokens / daily_usd")  # fmt: skip
        self.said = self.reason or ""
        return self.reason is not None
