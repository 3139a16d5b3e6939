"""One harness session's requests told apart, for scripting a session with several contexts.

A harness session sends the fake model server requests from several contexts: the main
agent's, each sub-agent's, its compaction summary, and its own title or probe requests.
`AgentScripts` answers each from its own script (a turn, or a function of the request
for a turn that needs what an earlier answer returned), so the order in which a
sub-agent and the main agent ask does not decide who gets which turn. What tells them
apart, read from the real binaries' requests (`Requests`, one per harness):

- Claude Code 2.1.332: the main agent is offered the `Agent` tool, an `Explore`
  sub-agent tools but not `Agent`; `/compact` asks with the conversation plus a user
  message `Your task is to create a detailed summary of the conversation so far` and
  wants "an <analysis> block followed by a <summary> block" in plain text (the bundle's
  compaction gives up with "summarization produced empty response" when the reply has no
  text, e.g. when a scripted tool call answers it); its own probes offer no tools.
- Codex 0.171: each agent is a thread of its own (`client_metadata.thread_id`; the first
  one seen is the main agent's); a compaction's last input is `You are performing a
  CONTEXT CHECKPOINT COMPACTION`, answered with the summary as text.
- Copilot CLI 1.0.102: the main agent is offered `task`, a sub-agent tools but not
  `task`; compaction asks `Please create a detailed summary of the conversation so far`.
- Gemini CLI 0.61: the main agent is offered `invoke_agent`, a sub-agent tools but not
  `invoke_agent`; `/compress` asks twice (`Generate a new <state_snapshot>`, then
  `Critically evaluate the <state_snapshot>`), with no tools, for a `<state_snapshot>`.
- Pi 0.73: compaction asks, with no tools, to summarise a `<conversation>` (the history
  before the kept part, and the prefix of a turn cut in two, one request each).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fakes.model_wire import Received, Turn, text

Script = Turn | Callable[[Received], Turn]


def _messages(received: Received) -> list[Any]:
    body = received.body if isinstance(received.body, dict) else {}
    return list(body.get("messages") or body.get("input") or body.get("contents") or [])


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))


def last_user_text(received: Received) -> str:
    """The text of the request's last user message (Anthropic, Responses, Chat and Gemini
    shapes)."""
    for message in reversed(_messages(received)):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text_of(message.get("content", message.get("parts")))
    return ""


@dataclass(frozen=True)
class Requests:
    """How one harness's requests are told apart."""

    compaction_prompt: str
    summary: Callable[[str], Turn]
    sub_agent: Callable[[Received, list[str]], bool]
    """(request, threads seen so far) → True for a sub-agent's request."""

    def is_compaction(self, received: Received) -> bool:
        """True for the harness's compaction (summary) request."""
        return self.compaction_prompt in last_user_text(received)


def claude_summary(value: str) -> Turn:
    """The reply Claude Code's `/compact` wants: an analysis block, then the summary."""
    return text(
        f"<analysis>{value}</analysis>\n\n<summary>\n1. Primary Request: {value}\n</summary>"
    )


def _thread(received: Received) -> str:
    body = received.body if isinstance(received.body, dict) else {}
    metadata = body.get("client_metadata")
    return str(metadata.get("thread_id", "")) if isinstance(metadata, dict) else ""


def _codex_sub_agent(received: Received, threads: list[str]) -> bool:
    thread = _thread(received)
    if thread not in threads:
        threads.append(thread)
    return threads.index(thread) > 0


CLAUDE = Requests(
    "Your task is to create a detailed summary of the conversation so far",
    claude_summary,
    lambda received, _: "Agent" not in received.tool_names(),
)
CODEX = Requests(
    "You are performing a CONTEXT CHECKPOINT COMPACTION",
    lambda value: text(f"Summary for the next model: {value}"),
    _codex_sub_agent,
)
COPILOT = Requests(
    "Please create a detailed summary of the conversation so far",
    lambda value: text(f"<overview>{value}</overview>"),
    lambda received, _: "task" not in received.tool_names(),
)
GEMINI = Requests(
    "<state_snapshot>",
    lambda value: text(f"<state_snapshot>{value}</state_snapshot>"),
    lambda received, _: "invoke_agent" not in received.tool_names(),
)
PI = Requests(
    "<conversation>\n",
    lambda value: text(f"## Goal\n{value}\n## Progress\nthe files were read"),
    lambda received, _: False,
)


@dataclass
class AgentScripts:
    """`ModelServer(respond=scripts)`: the main agent's turns, the sub-agents' turns, and
    a summary for every compaction; each script ends with `done` replies."""

    main: list[Script] = field(default_factory=list)
    sub: list[Script] = field(default_factory=list)
    harness: Requests = CLAUDE
    done: Turn = field(default_factory=lambda: text("done"))

    def __post_init__(self) -> None:
        self._queues = {"main": deque(self.main), "sub": deque(self.sub)}
        self._threads: list[str] = []
        self.answered: list[tuple[str, Received]] = []

    def __call__(self, received: Received) -> Turn | None:
        if self.harness.is_compaction(received):
            self.answered.append(("compact", received))
            return self.harness.summary("the user asked to read files")
        if not received.tool_names():
            return None  # the harness's own title and summary probes
        who = "sub" if self.harness.sub_agent(received, self._threads) else "main"
        self.answered.append((who, received))
        queue = self._queues[who]
        if not queue:
            return self.done
        turn = queue.popleft()
        return turn if isinstance(turn, Turn) else turn(received)

    def requests(self, who: str) -> list[Received]:
        """The requests answered for `who` (`main`, `sub`, `compact`), in order."""
        return [received for kind, received in self.answered if kind == who]


def last_message(received: Received) -> str:
    """The request's last message as JSON text (where Claude Code puts a call's card)."""
    messages = _messages(received)
    return json.dumps(messages[-1]) if messages else ""
