"""What a session's log says about its contexts, for the replay to send as its hooks would.

The hooks `hook install` writes hear more than tool calls (docs/harnesses.md,
"Contexts"): a typed prompt, a compaction, a call's result. The logs keep each of them:

- Claude Code: a typed prompt is a main-transcript `user` message of text (not a tool
  result, not Claude Code's own: meta, compaction summary, local command, interruption
  note); a compaction is a `system` entry `compact_boundary`; a call that never ran (the
  user interrupted it, or refused it) has a `tool_result` saying so. Its hooks then send
  `UserPromptSubmit` (refunds what is still pending), `SessionStart` with `source:
  "compact"` (the ledger starts again) and, for a call that ran, `PostToolBatch`
  (confirms it).
- Codex: a compaction is a `compacted` entry (the `PostCompact` hook resets); Codex's
  cards are never pending, so prompts and interruptions change nothing.

`typed_prompts` also serves the measure of the long-session decision (a snapshot per
session, not per typed prompt: docs/recall.md, "Long sessions").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from learning.calls import when

NEVER_RAN = (
    "The user doesn't want to proceed with this tool use",
    "[Request interrupted by user for tool use]",
)
"""How Claude Code's tool result says the call did not run (interrupted or refused)."""

NOT_TYPED = ("<command-", "<local-command", "[Request interrupted", "<task-notification>")
"""Texts of user messages Claude Code writes itself (a typed `/compact` shows as a
`<command-name>`; it is the compaction, not a prompt to the model)."""


@dataclass
class SessionContexts:
    """A session's context events, in time order."""

    prompts: list[datetime] = field(default_factory=list)
    """Typed prompts (the user's own words)."""
    refunding: list[datetime] = field(default_factory=list)
    """Every `UserPromptSubmit` the hook gets: typed prompts and Claude Code's task
    notifications, which reach the model as a prompt too."""
    compactions: list[datetime] = field(default_factory=list)
    never_ran: set[str] = field(default_factory=set)
    """IDs of calls that never ran: their cards stay pending until the next prompt."""


def _text(content: Any) -> str | None:
    """The text of a user message that is not a tool result, else None."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    texts = [str(b.get("text", "")) for b in content if isinstance(b, dict)]
    return "\n".join(texts) if texts else None


def claude_contexts(log: Path) -> SessionContexts:
    """The main context's events of a Claude Code transcript."""
    found = SessionContexts()
    for raw in log.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        at = when(entry.get("timestamp"))
        if not isinstance(entry, dict) or at is None:
            continue
        if entry.get("type") == "system" and entry.get("subtype") == "compact_boundary":
            found.compactions.append(at)
            continue
        if entry.get("type") != "user" or entry.get("isMeta") or entry.get("isCompactSummary"):
            continue
        content = (entry.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                shown = json.dumps(block.get("content"))
                if any(marker in shown for marker in NEVER_RAN):
                    found.never_ran.add(str(block.get("tool_use_id")))
        text = _text(content)
        if text is None or text.lstrip().startswith(NOT_TYPED[:3]):
            continue
        found.refunding.append(at)
        if not text.lstrip().startswith(NOT_TYPED[3]):
            found.prompts.append(at)
    for times in (found.prompts, found.refunding, found.compactions):
        times.sort()
    return found


def codex_contexts(log: Path) -> SessionContexts:
    """A Codex rollout's compactions and typed prompts."""
    found = SessionContexts()
    for raw in log.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        at = when(entry.get("timestamp")) if isinstance(entry, dict) else None
        if at is None:
            continue
        payload = entry.get("payload")
        if entry.get("type") == "compacted":
            found.compactions.append(at)
        elif isinstance(payload, dict) and payload.get("type") == "user_message":
            found.prompts.append(at)
    return found


def session_contexts(harness: str, log: Path) -> SessionContexts:
    """The context events of a log of `harness`."""
    return claude_contexts(log) if harness == "claude" else codex_contexts(log)
