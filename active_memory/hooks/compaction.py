"""Compaction events of the harnesses whose context events recall/contexts.py does not
read itself: OpenCode's `session.compacted` (our plugin's `event` handler).

After a compaction the session's context no longer holds the cards it was given, so its
ledger starts again (`contexts.reset`): the budget is whole and a card may come back
once. Hermes needs no event: it goes on after a compaction under a new session ID
(docs/harnesses.md, "Contexts"), whose ledger is a new one by itself.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

COMPACTION_EVENTS = {"opencode": "session.compacted"}
"""Per harness, the event (payload `event`) that says its context was compacted."""


def handles(harness: str) -> bool:
    """Whether `active-memory-hook context HARNESS` is answered here."""
    return harness in COMPACTION_EVENTS


def handle(harness: str, payload: Any, env: Mapping[str, str]) -> str | None:
    """Reset the compacted session's ledger; what was done (None: nothing to reset).

    Raises ValueError for a payload that is not a JSON object.
    """
    from active_memory.recall.contexts import reset
    from active_memory.recall.environment import resolve_context
    from active_memory.recall.ledger import ledger_path
    from active_memory.recall.types import ToolCall

    if not isinstance(payload, dict):
        raise ValueError("the context event must be a JSON object")
    if payload.get("event") != COMPACTION_EVENTS.get(harness):
        return None
    session = payload.get("sessionID") or payload.get("session_id")
    cwd = payload.get("cwd")
    if not isinstance(session, str) or not session:
        return None
    call = ToolCall(harness, "", {}, session=session, cwd=cwd if isinstance(cwd, str) else None)
    context = resolve_context(call, env)
    if not os.path.exists(ledger_path(context)):
        return None  # nothing delivered in this session yet
    return reset(context)
