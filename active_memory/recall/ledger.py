"""The session ledger: what one provider session has received, kept across hook processes.

One file per provider session (`recall/sessions/<session>.ledger`, marshal): bytes
delivered so far, framing included, the (id, revision) pairs delivered, and the
deliveries still pending: cards given to a call whose harness has not yet said the call
ran (recall/contexts.py confirms or refunds them). A sub-agent's context is a provider
session of its own (`<session>/agent-<id>`, contexts.py). Every
hook process of the session, and the recall server, reads, decides and writes it while
holding the session's exclusive lock, so concurrent tool calls of one session can never
together exceed the budget or deliver a card twice. The file is replaced atomically;
an unreadable ledger is an error (the hook then delivers nothing), never a reset that
could overspend.

The locks are striped: a session locks `sessions/locks/<NN>.lock`, one of
`LOCK_STRIPES` files chosen by a checksum of its name, made once and reused by every
later session. One lock file per session cost every session's first card the creation
of a file (an inode allocation: 0.3-1 ms on an ext4 VM, more than the rest of the
call); two sessions sharing a stripe only wait for each other's few microseconds of
ledger work.
"""

from __future__ import annotations

import marshal
import os
import zlib

from active_memory.atomic_files import write_atomically
from active_memory.file_lock import FileLock
from active_memory.file_names import safe_name
from active_memory.recall.files import read_bytes, sync_data
from active_memory.recall.frame import frame, select
from active_memory.recall.records import append_deliveries
from active_memory.recall.types import CardHit, Skipped
from active_memory.session_budget import budget_left

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from active_memory.recall.types import RecallContext


class LedgerCorrupt(Exception):
    """A session ledger file cannot be read (the session then receives nothing)."""


class LedgerState:
    """A session's running totals: `spent` bytes, the `delivered` (id, revision) set, and
    `pending`: `[call id, bytes, [[id, revision], ...]]` per call not yet confirmed."""

    __slots__ = ("delivered", "pending", "spent")

    def __init__(
        self,
        spent: int = 0,
        delivered: set[tuple[str, int]] | None = None,
        pending: list[list[Any]] | None = None,
    ) -> None:
        self.spent = spent
        self.delivered: set[tuple[str, int]] = delivered if delivered is not None else set()
        self.pending: list[list[Any]] = pending if pending is not None else []


def ledger_path(context: RecallContext) -> str:
    """The ledger file of the context's provider session."""
    return ledger_path_for(context.recall_dir, context.session)


def ledger_path_for(recall_dir: str, session: str) -> str:
    """The ledger file of provider session `session` under `recall_dir`."""
    return os.path.join(recall_dir, "sessions", safe_name(session) + ".ledger")


LOCK_STRIPES = 256
"""Session lock files; a session's is fixed by its name (`lock_path_for`)."""


def lock_path_for(ledger: str) -> str:
    """The lock file guarding the ledger file `ledger` (`sessions/locks/<NN>.lock`)."""
    folder, name = os.path.split(ledger)
    stripe = zlib.crc32(name.encode("utf-8")) % LOCK_STRIPES
    return os.path.join(folder, "locks", f"{stripe:02x}.lock")


def read_state(path: str) -> LedgerState:
    """The ledger at `path` (an empty one when the file does not exist)."""
    data = read_bytes(path)
    if data is None:
        return LedgerState()
    try:
        value = marshal.loads(data)
        spent = value["spent"]
        delivered = {(str(item[0]), int(item[1])) for item in value["delivered"]}
        pending = [
            [str(call), int(cost), [[str(card[0]), int(card[1])] for card in cards]]
            for call, cost, cards in value.get("pending", ())
        ]
    except (ValueError, EOFError, TypeError, KeyError, IndexError) as exc:
        raise LedgerCorrupt(f"{path}: unreadable session ledger ({exc})") from None
    if not isinstance(spent, int) or spent < 0:
        raise LedgerCorrupt(f"{path}: unreadable session ledger (spent={spent!r})")
    return LedgerState(spent, delivered, pending)


def write_state(path: str, session: str, state: LedgerState) -> None:
    """Replace the ledger at `path` (the caller holds the session's lock)."""
    value: dict[str, Any] = {
        "session": session,
        "spent": state.spent,
        "delivered": sorted(state.delivered),
    }
    if state.pending:
        value["pending"] = state.pending
    write_atomically(path, marshal.dumps(value), sync=False)


def admit(
    context: RecallContext,
    hits: Iterable[CardHit],
    *,
    floor: int = 0,
    pending: str | None = None,
    defer_sync: bool = False,
) -> tuple[list[CardHit], list[Skipped], str, int, Commit | None]:
    """Choose what the session receives from `hits` and record it in the ledger.

    `hits` may be lazy (match.iter_matches): with `floor`, the smallest card's size, it
    is read only while another card could still fit. Returns (admitted cards, skipped
    cards, framed context, budget left, commit). The ledger and the run's delivery lines
    are written under the session lock. A dry run reads the ledger and changes nothing.
    `pending`: the call's ID when its harness confirms calls that ran (contexts.py);
    the delivery then stays pending until confirmed or refunded.

    The commit is None unless `defer_sync` and a card was admitted: then the delivery
    lines are appended but not yet flushed, the session lock is still held, and the
    caller must run the commit (flush, ledger, unlock; it may wait for the disk, so the
    recall server runs it in a worker thread) before the cards may leave.
    """
    path = ledger_path(context)
    if context.dry_run:
        admitted, skipped, text, left, _ = _decide(context, read_state(path), hits, floor)
        return admitted, skipped, text, left, None
    lock = FileLock(lock_path_for(path)).__enter__()
    try:
        state = read_state(path)
        admitted, skipped, text, left, cost = _decide(context, state, hits, floor)
        # Deliveries first, still under the lock: a crash before the ledger is replaced
        # leaves a delivery line too many (read back once), never a card the session
        # saw without its delivery evidence (records.py).
        descriptor = append_deliveries(context, admitted) if admitted else None
    except BaseException:
        lock.__exit__(None, None, None)
        raise
    if not admitted:
        lock.__exit__(None, None, None)
        return admitted, skipped, text, left, None
    state.spent += cost
    state.delivered.update((hit.id, hit.revision) for hit in admitted)
    if pending is not None:
        cards = [[hit.id, hit.revision] for hit in admitted]
        state.pending.append([pending, cost, cards])
    commit = Commit(lock, descriptor, path, context.session, state)  # it owns the lock now
    if defer_sync:
        return admitted, skipped, text, left, commit
    commit()
    return admitted, skipped, text, left, None


class Commit:
    """The end of a delivering call: flush its delivery lines to the disk, then replace
    the session's ledger, then release the session lock (`admit(defer_sync=True)`).

    Run exactly once, from any thread, before the cards leave; `abandon()` instead when
    they will not leave (the lock is released, the ledger left as it was: the delivery
    line already written only records a card too many, read back once, never a card
    missing). Either way the lock is released, whatever fails.
    """

    __slots__ = ("_descriptor", "_lock", "_path", "_session", "_state")

    def __init__(
        self, lock: FileLock, descriptor: int | None, path: str, session: str, state: LedgerState
    ) -> None:
        self._lock: FileLock | None = lock
        self._descriptor = descriptor
        self._path = path
        self._session = session
        self._state = state

    def __call__(self) -> None:
        """Flush the delivery lines, replace the ledger, release the lock."""
        try:
            if self._descriptor is not None:
                descriptor, self._descriptor = self._descriptor, None
                try:
                    sync_data(descriptor)
                finally:
                    os.close(descriptor)
            write_state(self._path, self._session, self._state)
        finally:
            self.abandon()

    def abandon(self) -> None:
        """Release the lock (and the deliveries file) without touching the ledger."""
        if self._descriptor is not None:
            descriptor, self._descriptor = self._descriptor, None
            os.close(descriptor)
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.__exit__(None, None, None)


def stale_marker(root: str) -> Callable[[CardHit], CardHit]:
    """The check `select` asks of a card about to be admitted: the card itself, or a copy
    framed as stale when its cited code changed under `root` (recall/stale.py)."""

    def mark(hit: CardHit) -> CardHit:
        if hit.cited is None:
            return hit
        from active_memory.recall import stale

        ranges = stale.changed(hit.cited, root)
        if not ranges:
            return hit
        line = stale.note(hit.cited, ranges)
        grown = CardHit(hit.id, hit.revision, hit.score, hit.match,
                        stale.framed(hit.text, line), hit.ordinal, hit.cited)  # fmt: skip
        grown.stale = tuple(ranges)
        return grown

    return mark


def _decide(
    context: RecallContext, state: LedgerState, hits: Iterable[CardHit], floor: int
) -> tuple[list[CardHit], list[Skipped], str, int, int]:
    remaining = budget_left(context.budget_bytes, state.spent)
    mark = stale_marker(context.workspace_root)
    admitted, skipped, cost = select(hits, state.delivered, remaining, floor=floor, mark=mark)
    text = frame(hit.text for hit in admitted)
    left = remaining - cost
    return admitted, [Skipped(hit, reason) for hit, reason in skipped], text, left, cost
