"""Replay a session's tool calls through the recall path, as its hooks would have run.

For each call, in order, with its own working folder: the harness's `PreToolUse` payload
(calls.py) goes through what the command hook runs (`recall.engine.answer_hook`: parse
the payload, resolve the context from it and the environment, answer the call), so the
session pins the lessons published before its first call, spends its budget, and leaves
its receipts and deliveries under the state folder, where `active-memory import` joins
them into the session's run record. The bench calls those three steps itself, to learn
which cards each call received.

Between calls it sends the context events the installed hooks would have got, from the
log (contexts.py): a prompt (`UserPromptSubmit`: what a call that never ran was given is
refunded), a compaction (the context's ledger starts again), and for each Claude Code
call that ran its confirmation (the replay sends `PostToolUse` per call where the
installed hook gets `PostToolBatch` per batch of calls: the same unless a batch is cut
short). Each delivery and each call carries its context's epoch (the compactions of the
main context before it), so the measure can tell a card the context still holds from
one it lost (outcome.py).

The hooks stamp receipts and deliveries with the clock; a replay runs long after the
session, so the bench stamps them again with the times the calls were made, and the
run record reads as if the hooks had run during the session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from active_memory.recall.contexts import handle_event
from active_memory.recall.engine import answer_tool_call
from active_memory.recall.environment import resolve_context
from active_memory.recall.harness import parse_payload
from active_memory.recall.records import DELIVERIES_FILE, RECEIPTS_FILE, run_dir
from active_memory.store.location import state_dir
from learning.calls import Call
from learning.contexts import SessionContexts


@dataclass(frozen=True)
class Delivery:
    """One card a call received."""

    call: int
    at: datetime
    lesson: str
    revision: int
    size: int
    """The card's UTF-8 bytes (its share of the budget, framing aside)."""
    match: str
    agent: str | None = None
    """The sub-agent whose context got it (None: the main agent)."""
    epoch: int = 0
    """Compactions of the main context before it (a sub-agent's: 0)."""


@dataclass(frozen=True)
class Replayed:
    """What the session received."""

    deliveries: list[Delivery]
    context_bytes: int
    """Every framed context the calls received, framing included."""
    errors: list[str]
    """Calls the hook would have answered with nothing because recall raised."""
    epochs: list[int]
    """Per call (by index), its context's epoch, as `Delivery.epoch`."""
    refunds: int = 0
    """Cards given back because their call never ran."""


def _stamp(at: datetime) -> str:
    moment = at.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{moment.microsecond // 1000:03d}Z"


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def replay(
    harness: str,
    session_id: str,
    transcript: Path,
    calls: list[Call],
    env: Mapping[str, str],
    contexts: SessionContexts | None = None,
) -> Replayed:
    """Answer every call of the session as its hooks would have, in order, with the
    context events of `contexts` between them."""
    folder = run_dir(os.path.join(state_dir(env), "recall"), f"session:{session_id}")
    receipts = os.path.join(folder, RECEIPTS_FILE)
    receipt_times: list[datetime] = []
    deliveries: list[Delivery] = []
    errors: list[str] = []
    context_bytes = 0
    events = _Events(harness, session_id, contexts or SessionContexts(), env)
    for call in calls:
        events.until(call)
        before = _size(receipts)
        try:
            parsed = parse_payload(harness, call.payload(session_id, transcript))
            answer = answer_tool_call(parsed, resolve_context(parsed, env))
        except Exception as exc:  # the hook answers nothing then, and logs
            errors.append(f"call {call.index} ({call.tool}): {type(exc).__name__}: {exc}")
            continue
        if _size(receipts) > before:
            receipt_times.append(call.at)
        context_bytes += len(answer.context.encode("utf-8"))
        epoch = events.epoch if call.agent is None else 0
        for hit in answer.cards:
            deliveries.append(Delivery(call.index, call.at, hit.id, hit.revision, hit.size,
                                       hit.match, call.agent, epoch))  # fmt: skip
        events.ran(call)
    _restamp(receipts, receipt_times)
    times = {(d.lesson, d.revision): d.at for d in deliveries}
    _restamp(os.path.join(folder, DELIVERIES_FILE), times)
    return Replayed(deliveries, context_bytes, errors, events.epochs, events.refunds)


class _Events:
    """The context events of one session, sent in time order between its calls."""

    def __init__(
        self, harness: str, session: str, contexts: SessionContexts, env: Mapping[str, str]
    ) -> None:
        self.harness, self.session, self.env = harness, session, env
        moments = [(at, "prompt") for at in contexts.refunding if harness == "claude"]
        moments += [(at, "compact") for at in contexts.compactions]
        self.pending = sorted(moments)
        self.never_ran = contexts.never_ran
        self.epoch = 0
        self.epochs: list[int] = []
        self.refunds = 0
        self.cwd = ""

    def until(self, call: Call) -> None:
        """Send every event that came before `call`."""
        self.cwd = call.cwd
        while self.pending and self.pending[0][0] <= call.at:
            _, kind = self.pending.pop(0)
            if kind == "compact":
                self.epoch += 1
                self._send(_RESET[self.harness])
            else:
                done = self._send({"hook_event_name": "UserPromptSubmit"})
                self.refunds += int(done.split()[-1]) if done else 0
        self.epochs.append(self.epoch if call.agent is None else 0)

    def ran(self, call: Call) -> None:
        """A Claude Code call whose log holds its result confirms its cards."""
        if self.harness == "claude" and call.call_id not in self.never_ran:
            payload: dict[str, object] = {"hook_event_name": "PostToolUse",
                                          "tool_use_id": call.call_id}  # fmt: skip
            if call.agent:
                payload["agent_id"] = call.agent
            self._send(payload)

    def _send(self, payload: dict[str, object]) -> str | None:
        event = {"session_id": self.session, "cwd": self.cwd, **payload}
        return handle_event(self.harness, event, self.env)


_RESET: dict[str, dict[str, object]] = {
    "claude": {"hook_event_name": "SessionStart", "source": "compact"},
    "codex": {"hook_event_name": "PostCompact", "trigger": "auto"},
}


def _restamp(path: str, times: list[datetime] | dict[tuple[str, int], datetime]) -> None:
    """Give each record of `path` its call's time: the n-th receipt the n-th receipt
    call's, a delivery its card's call's."""
    file = Path(path)
    if not file.exists():
        return
    lines = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line]
    for number, record in enumerate(lines):
        if isinstance(times, list):
            when = times[number] if number < len(times) else None
        else:
            when = times.get((str(record.get("lesson")), int(record.get("revision", 0))))
        if when is not None:
            record["at"] = _stamp(when)
    text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in lines)
    file.write_text(text, encoding="utf-8")
