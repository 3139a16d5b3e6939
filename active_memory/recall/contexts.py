"""Deliveries per context: sub-agents, calls that never ran, compaction (SPEC §8).

The budget and the once-per-session rule are per *provider session*, and a harness
session holds several: each sub-agent's own context, and the main agent's context
again after a compaction or a clear. What each harness tells us (docs/harnesses.md,
"Contexts"; payloads recorded from the real binaries in tests/fixtures/harness_payloads/):

- **Sub-agents.** A sub-agent's call names it (Claude Code's and Codex's `agent_id`,
  Copilot CLI's `agentId`; recall/harness.py `identity`): its context's ledger is
  `<session>/agent-<id>` (`context_session`), with its own budget and its own
  once-per-context rule, so a card it got still reaches the main agent and its spending
  leaves the main agent's budget whole. Gemini CLI sends nothing that tells a
  sub-agent's call from the main agent's; Pi has no sub-agents.
- **Calls that never ran.** Claude Code's cards are charged when given (PreToolUse) but
  stay *pending* until the harness says the call's batch was handed back to the model
  (`PostToolBatch`, also after a permission refusal, whose result the model does see
  with the card) or the call finished (`PostToolUse`, `PostToolUseFailure`). An
  interrupted call gets none of these, and its card never reaches the model: the next
  `UserPromptSubmit` of the main context refunds what is still pending there (bytes
  back, cards deliverable again, a refund line in deliveries.jsonl). Copilot CLI
  likewise never shows an interrupted call's card (it follows the call's result), but
  its payloads name no call and it has no batch event: its cards stay pending until the
  context's `agentStop` (the end of a turn) and its next `userPromptSubmitted` refunds
  what is still pending, so a turn cut short gives back every card it was given (some
  may come twice, none is lost). Codex writes a PreToolUse card into the conversation
  when the hook answers, so an interrupted call's card still reaches the model with the
  next turn: charged at once, never refunded. The after-tool harnesses (Gemini CLI, Pi,
  OpenCode) deliver with a result that exists; nothing of theirs is pending.
- **Compaction.** After a compaction the context no longer holds earlier cards: Claude
  Code's `SessionStart` with `source` `compact` (or `clear`), Codex's `PostCompact`
  (which names a compacted sub-agent; its `SessionStart` does not), Copilot CLI's
  `preCompact`, Gemini CLI's manual `PreCompress` (its automatic one fires before every
  turn, whether or not Gemini then compresses, so only `manual` counts) and Pi's
  `session_compact` reset the ledger of that context.

`active-memory-hook context HARNESS [EVENT]` feeds these events here (`handle_event`;
EVENT names the event for a harness whose payload does not: Copilot CLI's); like every
hook it prints nothing and never fails the session.
"""

from __future__ import annotations

import os

from active_memory.file_lock import FileLock
from active_memory.recall.environment import context_session as context_session
from active_memory.recall.environment import resolve_context
from active_memory.recall.ledger import (
    LedgerState,
    ledger_path,
    lock_path_for,
    read_state,
    write_state,
)
from active_memory.recall.records import record_refunds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from active_memory.recall.types import RecallContext, ToolCall

HARNESSES = ("claude", "codex", "gemini", "pi", "copilot", "opencode")

PENDING_HARNESSES = frozenset({"claude", "copilot"})
"""Harnesses whose deliveries wait for a confirmation (a batch, post-tool or turn event)."""

TURN_PENDING = frozenset({"copilot"})
"""Of those, the harnesses whose payloads name no call: pending until the turn ends."""

RESET_SOURCES = frozenset({"compact", "clear"})
"""`SessionStart` sources after which the context holds no earlier card."""


def pending_id(call: ToolCall) -> str | None:
    """The ID under which `call`'s delivery stays pending (None: charged for good; "": a
    call the harness names no ID for, confirmed with its whole turn)."""
    if call.harness in TURN_PENDING:
        return call.call_id or ""
    if call.harness in PENDING_HARNESSES and call.call_id:
        return call.call_id
    return None


def classify(
    harness: str, payload: Mapping[str, Any], event: str | None = None
) -> tuple[str, str | None] | None:
    """What a context event means: `("confirm", call ID or None for all)`, `("refund",
    None)`, `("reset", None)`, or None (an event that changes nothing). `event`: the
    event's name when the payload does not carry it."""
    event = event or payload.get("hook_event_name") or payload.get("event")
    if harness == "claude":
        if event == "PostToolBatch":
            return ("confirm", None)
        if event in ("PostToolUse", "PostToolUseFailure"):
            call = payload.get("tool_use_id")
            return ("confirm", call) if isinstance(call, str) and call else None
        if event == "UserPromptSubmit":
            return ("refund", None)
        if event == "SessionStart":
            return ("reset", None) if payload.get("source") in RESET_SOURCES else None
    if harness == "codex" and event == "PostCompact":
        return ("reset", None)
    if harness == "copilot":
        if event == "agentStop":
            return ("confirm", None)
        if event == "userPromptSubmitted":
            return ("refund", None)
        if event == "preCompact":
            return ("reset", None)
    if harness == "gemini" and event == "PreCompress":
        return ("reset", None) if payload.get("trigger") == "manual" else None
    if harness == "pi" and event == "session_compact":
        return ("reset", None)
    return None


def handle_event(
    harness: str, payload: Any, env: Mapping[str, str], event: str | None = None
) -> str | None:
    """Apply one context event to its context's ledger; what was done (None: nothing).

    `event` names the event when the payload does not (Copilot CLI's). Raises ValueError
    for an unknown harness or a payload that is not a JSON object.
    """
    if harness not in HARNESSES:
        raise ValueError(f"unknown harness {harness!r}; use one of {', '.join(HARNESSES)}")
    if not isinstance(payload, dict):
        raise ValueError("the context event must be a JSON object")
    meaning = classify(harness, payload, event)
    if meaning is None:
        return None
    context = _context(harness, payload, env)
    if context is None:
        return None
    action, call = meaning
    if action == "reset":
        return reset(context)
    if action == "refund":
        return refund(context)
    return confirm(context, call)


def _context(
    harness: str, payload: Mapping[str, Any], env: Mapping[str, str]
) -> RecallContext | None:
    from active_memory.recall.harness import identity
    from active_memory.recall.types import ToolCall

    session, agent = identity(dict(payload))
    cwd = next(
        (v for k in ("cwd", "directory") if isinstance(v := payload.get(k), str) and v), None
    )
    call = ToolCall(harness, "", {}, session=session, cwd=cwd, agent=agent)
    context = resolve_context(call, env)
    if not os.path.exists(ledger_path(context)):
        return None  # nothing delivered in this context yet: nothing to change
    return context


def confirm(context: RecallContext, call: str | None) -> str | None:
    """The pending deliveries of `call` (None: every one) stay charged for good."""
    path = ledger_path(context)
    with FileLock(lock_path_for(path)):
        state = read_state(path)
        kept = [entry for entry in state.pending if call is not None and entry[0] != call]
        if len(kept) == len(state.pending):
            return None
        confirmed = len(state.pending) - len(kept)
        state.pending = kept
        write_state(path, context.session, state)
    return f"confirmed {confirmed}"


def refund(context: RecallContext) -> str | None:
    """Give back what every still-pending call was charged: its calls never ran."""
    path = ledger_path(context)
    with FileLock(lock_path_for(path)):
        state = read_state(path)
        if not state.pending:
            return None
        cards: list[tuple[str, int]] = []
        for _, cost, given in state.pending:
            state.spent = max(0, state.spent - cost)
            for lesson, revision in given:
                state.delivered.discard((lesson, revision))
                cards.append((lesson, revision))
        state.pending = []
        # The refund lines first, as deliveries come before the ledger (records.py): a
        # crash between the two leaves the card charged, never a refund unrecorded.
        record_refunds(context.recall_dir, context.run_key, context.session, cards)
        write_state(path, context.session, state)
    return f"refunded {len(cards)}"


def reset(context: RecallContext) -> str:
    """Start the context's ledger again: it holds none of its earlier cards."""
    path = ledger_path(context)
    with FileLock(lock_path_for(path)):
        write_state(path, context.session, LedgerState())
    return "reset"
