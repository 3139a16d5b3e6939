"""The worker: claims settled sessions from the store's postmortem queue and runs their
postmortems, at most `concurrency` at once and one per repository scope.

Time model (every duration is a `WorkerOptions` field):

- The claim loop claims up to the free slots, then waits `poll` seconds or until a slot
  frees. `once` ends it when a claim finds nothing, nothing runs and no entry is due
  within `SCOPE_WAIT` (an entry waiting for a scope another postmortem holds).
- Each claimed entry runs in its own `CancelScope` inside one task group, beside a
  heartbeat that renews its lease (`lease` seconds) every `lease / 3`. A renewal that
  finds the lease gone (this worker stalled; another reclaimed the entry) cancels that
  scope: the orchestrator publishes nothing once cancelled.
- A postmortem's own clock is its runtime config's `timeoutMs` (orchestrator/engine.py:
  one deadline, then one shielded publish). Transient failures are retried inside the
  claim (tenacity: `retries` more attempts, backoff `backoff`·2^n capped at `max_backoff`);
  the heartbeat keeps the lease through the waits.
- Drain: `stop()` (the first SIGTERM/SIGINT) ends claiming; running postmortems get
  `grace` seconds to finish, then their scopes are cancelled and each entry goes back
  to `pending`, uncounted. Those last queue writes run shielded, and each is bounded by
  the queue store's busy timeout (`QUEUE_BUSY_TIMEOUT`), never by anything longer. A
  second signal exits at once (the command's job): entries keep their leases and any
  worker reclaims them when the leases expire, as after a SIGKILL.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from active_memory.errors import ActiveMemoryError, StoreBusy
from active_memory.store import PostmortemQueue, QueueEntry
from active_memory.store.queue import DEFAULT_LEASE, DEFAULT_SETTLE, SCOPE_WAIT, Outcome
from active_memory.worker.entry import Attempt, Sessions, Settings, attempt
from active_memory.worker.lanes import LaneChoice

LANE_RETRY = 60.0
"""How long an entry this worker's lane cannot run waits before it is offered again."""
QUEUE_BUSY_TIMEOUT = 5.0
"""The longest a queue write waits for the store's lock (the shielded ones included)."""
FINISH_BOUND = 3 * QUEUE_BUSY_TIMEOUT
"""The longest recording an entry's outcome may take, retries on a busy store included."""
NOT_FINISHED = "worker stopped before the postmortem finished; nothing published"


def default_owner() -> str:
    """`host:pid:random`: unique per worker process, readable in `queue` listings."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How the worker claims, runs and drains (see the module's time model)."""

    concurrency: int = 2
    lease: float = DEFAULT_LEASE
    settle: float = DEFAULT_SETTLE
    grace: float = 30.0
    poll: float = 1.0
    once: bool = False
    retries: int = 2
    backoff: float = 2.0
    max_backoff: float = 60.0
    model: str | None = None
    overrides: dict[str, Any] | None = None
    lane: LaneChoice = field(default_factory=LaneChoice)
    owner: str = field(default_factory=default_owner)


@dataclass(frozen=True, slots=True)
class WorkerEvent:
    """One step of one entry, for a progress display (never for logic).

    `stage`: `claimed`, `done`, `failed`, `waiting` (its scope is busy), `released`
    (drained back to pending), `lost` (its lease was taken), or `error` (a queue
    operation failed; `entry` is None).
    """

    stage: str
    entry: QueueEntry | None = None
    detail: str = ""


@dataclass(slots=True)
class Processed:
    """What happened to one entry this worker claimed."""

    entry_id: int
    harness: str
    session_id: str
    state: str  # done | failed | pending (waiting or released) | lost
    reason: str = ""
    result: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry in `worker --json`."""
        data: dict[str, Any] = {
            "id": self.entry_id, "harness": self.harness, "session_id": self.session_id,
            "state": self.state, "reason": self.reason,
        }  # fmt: skip
        if self.result is not None:
            data["result"] = self.result
        return data


class Worker:
    """Drains one store's postmortem queue; `await Worker(...).run(queue)` once."""

    def __init__(
        self,
        location: str,
        options: WorkerOptions,
        *,
        sessions: Sessions | None = None,
        progress: Callable[[WorkerEvent], None] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.options = options
        self.processed: list[Processed] = []
        self.stopping = False
        self._settings = Settings(
            location=location, owner=options.owner, lane=options.lane, model=options.model,
            overrides=options.overrides, retries=options.retries, backoff=options.backoff,
            max_backoff=options.max_backoff, env=os.environ if env is None else env,
        )  # fmt: skip
        self._sessions = sessions
        self._progress = progress or (lambda event: None)
        self._running: dict[int, anyio.CancelScope] = {}
        self._wake = anyio.Event()

    @property
    def location(self) -> str:
        """The store whose queue this worker drains."""
        return self._settings.location

    def stop(self) -> None:
        """Begin the drain: claim nothing more (running postmortems get the grace)."""
        self.stopping = True
        self._wake.set()

    async def run(self, queue: PostmortemQueue) -> list[Processed]:
        """Claim and process entries until stopped (or, with `once`, until drained)."""
        async with anyio.create_task_group() as group:
            while not self.stopping:
                claimed = await self._claim(queue)
                for entry in claimed:
                    self._running[entry.id] = anyio.CancelScope()
                    group.start_soon(self._process, queue, entry)
                idle = self.options.once and not claimed and not self._running
                if idle and not await self._due_soon(queue):
                    break
                with anyio.move_on_after(self.options.poll):
                    await self._wake.wait()
                self._wake = anyio.Event()
            await self._drain()
        return self.processed

    async def _claim(self, queue: PostmortemQueue) -> list[QueueEntry]:
        free = self.options.concurrency - len(self._running)
        if free <= 0:
            return []
        try:
            return await queue.claim(
                self.options.owner, limit=free, lease=self.options.lease,
                settle=self.options.settle,
            )  # fmt: skip
        except ActiveMemoryError as exc:  # a busy or unreachable store: try again later
            if self.options.once:
                raise
            self._progress(WorkerEvent("error", None, f"claim failed: {exc}"))
            return []

    async def _due_soon(self, queue: PostmortemQueue) -> bool:
        """An entry that waits for a busy scope becomes claimable within SCOPE_WAIT."""
        horizon = time.time() + SCOPE_WAIT + self.options.poll
        return any(
            e.not_before <= horizon and (e.final or e.last_end_at + self.options.settle <= horizon)
            for e in await queue.entries(["pending"])
        )

    async def _drain(self) -> None:
        """Wait up to `grace` for running postmortems, then cancel what is left."""
        with anyio.move_on_after(self.options.grace):
            while self._running:
                await self._wake.wait()
                self._wake = anyio.Event()
        for scope in list(self._running.values()):
            scope.cancel()

    async def _process(self, queue: PostmortemQueue, entry: QueueEntry) -> None:
        scope = self._running[entry.id]
        lost: list[bool] = []
        self._progress(WorkerEvent("claimed", entry))
        result: Attempt | None = None
        try:
            async with anyio.create_task_group() as beats:
                beats.start_soon(self._heartbeat, queue, entry, scope, lost)
                with scope:
                    result = await attempt(queue, entry, self._settings, self._sessions)
                beats.cancel_scope.cancel()
            await self._finish(queue, entry, result, lost)
        finally:
            del self._running[entry.id]
            self._wake.set()

    async def _finish(
        self, queue: PostmortemQueue, entry: QueueEntry, result: Attempt | None, lost: list[bool]
    ) -> None:
        owner = self.options.owner
        if lost:
            self._record(entry, "lost", "its lease expired and another worker took it")
            return
        outcome: Outcome
        if result is None:  # cancelled by the drain: nothing was published
            outcome, reason, summary, retry_in = "released", NOT_FINISHED, None, 0.0
        elif result.outcome == "waiting":
            self._record(entry, "waiting", result.reason)  # bind_scope already released it
            return
        else:
            outcome = (
                "done"
                if result.outcome == "done"
                else ("released" if result.outcome == "released" else "failed")
            )
            reason, summary = result.reason, result.result
            retry_in = LANE_RETRY if outcome == "released" else 0.0
        # Shielded, so a drain's cancellation cannot skip it; bounded by FINISH_BOUND, so
        # it cannot outlast the queue's busy timeout by much (the store write itself is
        # never cut: it is shielded inside the store; only the waits between are).
        error = "the store stayed busy"
        with anyio.CancelScope(shield=True), anyio.move_on_after(FINISH_BOUND):
            while True:
                try:
                    await queue.finish(entry.id, owner, outcome, reason=reason, result=summary,
                                       retry_in=retry_in)  # fmt: skip
                except StoreBusy as exc:  # another writer's long publish: try again
                    error = str(exc)
                    await anyio.sleep(0.2)
                    continue
                except ActiveMemoryError as exc:
                    error = str(exc)
                    break
                self._record(entry, outcome, reason, summary)
                return
        # The lease expires and another worker takes the entry again.
        self._record(entry, "error", f"could not record the outcome: {error}")

    async def _heartbeat(
        self, queue: PostmortemQueue, entry: QueueEntry, scope: anyio.CancelScope,
        lost: list[bool],
    ) -> None:  # fmt: skip
        while True:
            await anyio.sleep(self.options.lease / 3)
            try:
                renewed = await queue.renew(entry.id, self.options.owner, self.options.lease)
            except ActiveMemoryError:
                continue  # a busy store: the lease still has two thirds left
            if not renewed:
                lost.append(True)
                scope.cancel()
                return

    def _record(
        self, entry: QueueEntry, state: str, reason: str, result: dict[str, Any] | None = None
    ) -> None:
        shown = {"waiting": "pending", "released": "pending"}.get(state, state)
        self.processed.append(
            Processed(entry.id, entry.harness, entry.session_id, shown, reason, result)
        )
        self._progress(WorkerEvent(state, entry, reason))
