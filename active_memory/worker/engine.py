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
- A claim that cannot reach the store is retried with a growing wait, said in one line
  each time (`worker/pacing.py`); so is a postmortem's own store connection, inside its
  claim, for up to `STORE_PATIENCE` (worker/entry.py). Before each claim the spool of
  session ends that could not be queued is flushed, and the daily spend cap is read.
- `idle`: an automatic worker stops once nothing was claimable, running or due soon for
  that long.
- Drain: `stop()` (the first SIGTERM/SIGINT) ends claiming; running postmortems get
  `grace` seconds to finish, then their scopes are cancelled and each entry goes back
  to `pending`, uncounted. Those last queue writes run shielded, and each is bounded by
  the queue store's busy timeout (`QUEUE_BUSY_TIMEOUT`), never by anything longer. A
  second signal exits at once (the command's job): entries keep their leases and any
  worker reclaims them when the leases expire, as after a SIGKILL.
"""

from __future__ import annotations

import functools
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from active_memory.errors import ActiveMemoryError, StoreBusy, StoreUnavailable
from active_memory.processes import host_name
from active_memory.store import PostmortemQueue, QueueEntry, spool
from active_memory.store.queue import DEFAULT_LEASE, DEFAULT_SETTLE, SCOPE_WAIT, Outcome
from active_memory.worker.entry import STORE_PATIENCE, Attempt, Sessions, Settings, attempt
from active_memory.worker.lanes import WorkerLane
from active_memory.worker.pacing import Reachability, SpendCap
from active_memory.worker_state import WorkerFiles, record_spend, utc_day

LANE_RETRY = 60.0
"""How long an entry whose lane failed to run waits before it is offered again."""
QUEUE_BUSY_TIMEOUT = 5.0
"""The longest a queue write waits for the store's lock (the shielded ones included)."""
FINISH_BOUND = 3 * QUEUE_BUSY_TIMEOUT
"""The longest recording an entry's outcome may take, retries on a busy store included."""
NOT_FINISHED = "worker stopped before the postmortem finished; nothing published"


def default_owner() -> str:
    """`host:pid:random`: unique per worker process, readable in `queue` listings."""
    return f"{host_name()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


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
    overrides: dict[str, Any] | None = None
    lane: WorkerLane = field(default_factory=WorkerLane)
    owner: str = field(default_factory=default_owner)
    host: str | None = None  # claim only this machine's entries (None: any)
    idle: float | None = None  # stop after this long with nothing to do (None: never)
    give_up: float | None = None  # stop after the store was away this long (None: never)
    patience: float = STORE_PATIENCE
    daily_tokens: int | None = None
    daily_usd: float | None = None
    files: WorkerFiles | None = None  # where spend is recorded (None: nowhere)


@dataclass(frozen=True, slots=True)
class WorkerEvent:
    """One step of one entry, for a progress display (never for logic).

    `stage`: `claimed`, `done`, `failed`, `waiting` (its scope is busy), `released`
    (drained, or back to pending for a lane this worker lacks), `retry` (its lane failed:
    pending again, counted), `retrying` (a wait inside the claim), `lost` (its lease was
    taken), `error` (recording its outcome failed), or `note` (`entry` is None: the
    store away or back, the daily cap, the spool).
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
            location=location, owner=options.owner, lane=options.lane,
            overrides=options.overrides, retries=options.retries, backoff=options.backoff,
            max_backoff=options.max_backoff, env=os.environ if env is None else env,
            patience=options.patience,
        )  # fmt: skip
        self._sessions = sessions
        self._progress = progress or (lambda event: None)
        self._running: dict[int, anyio.CancelScope] = {}
        self._wake = anyio.Event()
        self._away = Reachability(options.give_up)
        # Entries this worker's lane cannot run: it claims them no more (another worker
        # may), and they keep no automatic worker from its idle end.
        self._cannot_run: set[int] = set()
        self._cap = SpendCap(options.files, options.daily_tokens, options.daily_usd)

    @property
    def location(self) -> str:
        """The store whose queue this worker drains."""
        return self._settings.location

    def stop(self) -> None:
        """Begin the drain: claim nothing more (running postmortems get the grace)."""
        self.stopping = True
        self._wake.set()

    async def run(self, queue: PostmortemQueue) -> list[Processed]:
        """Claim and process entries until stopped (or, with `once`, until drained; with
        `idle`, until idle that long)."""
        quiet_since = anyio.current_time()
        async with anyio.create_task_group() as group:
            while not self.stopping:
                wait = self.options.poll
                try:
                    claimed = await self._claim(queue)
                    idle = not claimed and not self._running
                    if idle and await self._finished(queue, quiet_since):
                        break
                except (StoreUnavailable, OSError) as exc:
                    claimed, wait = [], self.unreachable(exc)
                if any(e.id not in self._cannot_run for e in claimed) or self._busy():
                    quiet_since = anyio.current_time()
                for entry in claimed:
                    self._running[entry.id] = anyio.CancelScope()
                    group.start_soon(self._process, queue, entry)
                with anyio.move_on_after(wait):
                    await self._wake.wait()
                self._wake = anyio.Event()
            await self._drain()
        return self.processed

    def say(self, text: str) -> None:
        """One line of the worker's own (a `note` event)."""
        self._progress(WorkerEvent("note", None, text))

    async def stopped(self) -> None:
        """Wait until `stop()` is called."""
        while not self.stopping:
            await self._wake.wait()
            self._wake = anyio.Event()

    def reachable_again(self) -> bool:
        """The store answered: True when it had been away (then worth saying)."""
        return self._away.reached()

    def unreachable(self, exc: Exception) -> float:
        """The store is away: say so in one line; the seconds to wait (raises past
        `give_up`)."""
        try:
            wait = self._away.failed(anyio.current_time())
        except TimeoutError as gone:
            raise StoreUnavailable(self.location, f"{gone}; last: {exc}") from None
        reason = " ".join(str(exc).split())
        self.say(f"store unreachable ({reason}), retrying in {wait:.0f} s")
        return wait

    def _busy(self) -> bool:
        return any(entry_id not in self._cannot_run for entry_id in self._running)

    async def _finished(self, queue: PostmortemQueue, quiet_since: float) -> bool:
        """Nothing to claim: does this worker stop now (`once`, or idle long enough)?
        At the daily cap nothing is due before the next day."""
        capped = self._cap.reason is not None
        if self.options.once:
            if capped:
                return True
            return not await self._due_soon(queue, SCOPE_WAIT + self.options.poll)
        idle = self.options.idle
        if idle is None or anyio.current_time() - quiet_since < idle:
            return False
        return capped or not await self._due_soon(queue, idle)

    async def _claim(self, queue: PostmortemQueue) -> list[QueueEntry]:
        await self._flush_spool(queue)
        # Never an entry this worker still runs: a postmortem that outlived its lease (a
        # stalled process, a long publish) is claimable again, and claiming it here would
        # run it twice; its heartbeat says whether the lease is still this worker's.
        free = self.options.concurrency - len(self._running)
        if free <= 0 or self._cap.reached(self.location, self.say):
            return []
        try:
            claimed = await queue.claim(
                self.options.owner, limit=free, lease=self.options.lease,
                settle=self.options.settle, host=self.options.host,
                skip={*self._cannot_run, *self._running},
            )  # fmt: skip
        except StoreUnavailable:
            raise
        except ActiveMemoryError as exc:  # a busy store: try again later
            if self.options.once:
                raise
            self.say(f"claim failed: {exc}")
            return []
        if self.reachable_again():
            self.say("store reachable again")
        return claimed

    async def _flush_spool(self, queue: PostmortemQueue) -> None:
        """Queue the session ends that hooks could not (store/spool.py), oldest first."""
        taken = await anyio.to_thread.run_sync(spool.take, self.location, self._settings.env)
        written = 0
        try:
            for item in taken:
                await queue.enqueue(item.end)
                written += 1
        finally:
            spool.settle(taken, written)
        if written:
            self.say(f"queued {written} session end(s) kept in the spool while the store "
                      "was away")  # fmt: skip

    async def has_work(self, queue: PostmortemQueue) -> bool:
        """Something this worker could claim now or very soon."""
        return await self._due_soon(queue, SCOPE_WAIT + self.options.poll)

    async def _due_soon(self, queue: PostmortemQueue, within: float) -> bool:
        """A pending entry becomes claimable within `within` seconds: one waiting for a
        busy scope, or one still settling (a turn end)."""
        horizon = time.time() + within
        return any(
            e.not_before <= time.time() + SCOPE_WAIT + self.options.poll
            and (e.final or e.last_end_at + self.options.settle <= horizon)
            for e in await queue.entries(["pending"])
            if (self.options.host is None or e.host in ("", self.options.host))
            and e.id not in self._cannot_run
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
                say = functools.partial(self._retrying, entry)
                with scope:
                    result = await attempt(queue, entry, self._settings, self._sessions, say)
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
        if result is not None:
            self._spent(entry, result)
        if result is None:  # cancelled by the drain: nothing was published
            outcome, reason, summary, retry_in = "released", NOT_FINISHED, None, 0.0
        elif result.outcome == "waiting":
            self._record(entry, "waiting", result.reason)  # bind_scope already released it
            return
        else:
            outcome = result.outcome
            if outcome == "released":
                self._cannot_run.add(entry.id)
            else:
                self._cannot_run.discard(entry.id)
            reason, summary = result.reason, result.result
            # A lane this worker lacks: pending at once for another worker (this one skips
            # it); a lane that failed: offered again after LANE_RETRY.
            retry_in = LANE_RETRY if outcome == "retry" else 0.0
            if summary is not None:
                summary = {**summary, "worker": owner}
        # Shielded, so a drain's cancellation cannot skip it; bounded by FINISH_BOUND, so
        # it cannot outlast the queue's busy timeout by much (the store write itself is
        # never cut: it is shielded inside the store; only the waits between are).
        error = "the store stayed busy"
        with anyio.CancelScope(shield=True), anyio.move_on_after(FINISH_BOUND):
            while True:
                try:
                    await queue.finish(entry.id, owner, outcome, reason=reason, result=summary,
                                       retry_in=retry_in)  # fmt: skip
                except (StoreBusy, StoreUnavailable) as exc:  # a long publish; a short outage
                    error = str(exc)
                    await anyio.sleep(0.2 if isinstance(exc, StoreBusy) else 1.0)
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

    def _retrying(self, entry: QueueEntry, text: str) -> None:
        self._progress(WorkerEvent("retrying", entry, text))

    def _spent(self, entry: QueueEntry, result: Attempt) -> None:
        """Record what the attempt cost in this machine's spend ledger (the daily cap)."""
        usage, files = result.usage, self.options.files
        if files is None or usage.requests == 0:
            return
        run_id = (result.result or {}).get("run_id") or f"{entry.harness}-{entry.session_id}"
        line = {"day": utc_day(), "at": time.time(), "run_id": run_id, "entry": entry.id,
                "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                "cost_usd": usage.cost_usd, "requests": usage.requests,
                "complete": usage.complete}  # fmt: skip
        try:
            record_spend(files, line)
        except OSError as exc:
            self.say(f"could not record what #{entry.id} cost: {exc}")

    def _record(
        self, entry: QueueEntry, state: str, reason: str, result: dict[str, Any] | None = None
    ) -> None:
        shown = {"waiting": "pending", "released": "pending", "retry": "pending"}.get(state, state)
        self.processed.append(
            Processed(entry.id, entry.harness, entry.session_id, shown, reason, result)
        )
        self._progress(WorkerEvent(state, entry, reason))
