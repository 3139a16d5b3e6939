"""Claude Code's requests told apart, for scripting one session with several contexts.

One `claude` session sends the fake model server requests from several contexts: the
main agent's, each sub-agent's (an `Explore` agent started by the `Agent` tool), its
`/compact` summarisation, and its own title and summary probes. `AgentScripts` answers
each from its own script, so the order in which a sub-agent and the main agent ask does
not decide who gets which turn. What tells them apart, read from claude 2.1.332's
requests:

- the main agent is offered the `Agent` tool; an `Explore` sub-agent is offered tools,
  but not `Agent` (it cannot start agents of its own);
- `/compact` asks with the conversation so far plus a last user message that says
  `Your task is to create a detailed summary of the conversation so far` and wants
  "an <analysis> block followed by a <summary> block" in plain text (the bundle's
  reactive compaction gives up with "summarization produced empty response" when the
  reply has no text, e.g. when a scripted tool call answers it);
- Claude Code's own probes offer no tools at all (left to the server's `side`).
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from fakes.model_wire import Received, Turn, text

COMPACTION_PROMPT = "Your task is to create a detailed summary of the conversation so far"


def _last_user_text(received: Received) -> str:
    body = received.body if isinstance(received.body, dict) else {}
    for message in reversed(body.get("messages") or []):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        blocks = content if isinstance(content, list) else []
        return "\n".join(str(block.get("text", "")) for block in blocks if isinstance(block, dict))
    return ""


def is_compaction(received: Received) -> bool:
    """True for Claude Code's `/compact` summarisation request."""
    return COMPACTION_PROMPT in _last_user_text(received)


def is_sub_agent(received: Received) -> bool:
    """True for a request of a sub-agent (offered tools, but not `Agent`)."""
    names = received.tool_names()
    return bool(names) and "Agent" not in names


def summary(value: str) -> Turn:
    """The reply `/compact` wants: an analysis block, then the summary block."""
    return text(
        f"<analysis>{value}</analysis>\n\n<summary>\n1. Primary Request: {value}\n</summary>"
    )


@dataclass
class AgentScripts:
    """`ModelServer(respond=scripts)`: the main agent's turns, the sub-agents' turns, and
    a summary for every `/compact`; each script ends with `done` replies."""

    main: list[Turn] = field(default_factory=list)
    sub: list[Turn] = field(default_factory=list)
    done: Turn = field(default_factory=lambda: text("done"))
    compacted: Turn = field(default_factory=lambda: summary("the user asked to read files"))

    def __post_init__(self) -> None:
        self._queues = {"main": deque(self.main), "sub": deque(self.sub)}
        self.answered: list[tuple[str, Received]] = []

    def __call__(self, received: Received) -> Turn | None:
        if not received.tool_names():
            return None  # Claude Code's own title and summary probes
        if is_compaction(received):
            self.answered.append(("compact", received))
            return self.compacted
        who = "sub" if is_sub_agent(received) else "main"
        self.answered.append((who, received))
        queue = self._queues[who]
        return queue.popleft() if queue else self.done

    def requests(self, who: str) -> list[Received]:
        """The requests answered for `who` (`main`, `sub`, `compact`), in order."""
        return [received for kind, received in self.answered if kind == who]


def last_message(received: Received) -> str:
    """The request's last message as JSON text (where a tool call's hook context sits)."""
    body: Any = received.body if isinstance(received.body, dict) else {}
    messages = body.get("messages") or []
    return json.dumps(messages[-1]) if messages else ""
