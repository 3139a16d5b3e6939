"""Harness payloads in, hook answers out: Claude Code, Codex, Gemini CLI, Copilot CLI, and
after-tool callbacks (OpenCode, Pi).

- `claude`, `codex`: the `PreToolUse` hook input (stdin of a command hook, body of a
  Claude Code `"type": "http"` hook): `session_id`, `cwd`, `tool_name`, `tool_input`
  (plus `hook_event_name`, `transcript_path`, `tool_use_id`, … which recall ignores).
  Answer: `{"hookSpecificOutput": {"hookEventName": "PreToolUse",
  "additionalContext": "<framed cards>"}}`, or nothing when no card is delivered.
- `after-tool`: harnesses that can only append to a tool's result (OpenCode's
  `tool.execute.after`, Hermes' `transform_tool_result`: our plugins send `harness`).
  Input: `{"tool", "args", "sessionID", "cwd"}` (OpenCode's names; `tool_name` /
  `tool_input` / `session_id` / `directory` are accepted too, and `harness` names the
  caller, default `opencode`). Answer: `{"append": "\\n\\n<framed cards>"}`, the exact
  text to add at the end of the tool's output, or nothing.
- `pi`: our Pi extension's `tool_result` handler, the after-tool shape above (caller
  `pi`), answered the same way.
- `gemini`: Gemini CLI's `AfterTool` hook input (`session_id`, `cwd`, `tool_name`,
  `tool_input`, `tool_response`, …). Answer: `{"hookSpecificOutput": {"hookEventName":
  "AfterTool", "additionalContext": "<framed cards>"}}`, which Gemini CLI appends to the
  tool's result (its `BeforeTool` context never reaches the model; docs/harnesses.md).
- `copilot`: Copilot CLI's `preToolUse` hook input (`sessionId`, `cwd`, `toolName`,
  `toolArgs`: an object, or its JSON text in older versions). Answer:
  `{"additionalContext": "<framed cards>"}`. A sub-agent's call (1.0.102) carries its own
  ID as `sessionId` and `agentId`, and the session that started it as `parentAgentId`.

Payload shapes were captured from the real binaries (tests/fixtures/harness_payloads/).
"""

from __future__ import annotations

from active_memory.recall.types import ToolCall

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from active_memory.recall.types import RecallAnswer

HARNESSES = ("claude", "codex", "after-tool", "pi", "gemini", "copilot")


class PayloadError(ValueError):
    """A hook payload is not what its harness sends; the message names the field."""


def _text(payload: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = payload.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def parse_payload(harness: str, payload: Any) -> ToolCall:
    """The `ToolCall` a harness's hook payload describes (`PayloadError` if malformed)."""
    if not isinstance(payload, dict):
        raise PayloadError("the hook payload must be a JSON object")
    if harness in ("claude", "codex", "gemini"):
        tool = _text(payload, "tool_name")
        tool_input = payload.get("tool_input", {})
        name = harness
    elif harness in ("after-tool", "pi"):
        tool = _text(payload, "tool", "tool_name")
        tool_input = payload.get("args", payload.get("tool_input", {}))
        name = "pi" if harness == "pi" else _text(payload, "harness") or "opencode"
    elif harness == "copilot":
        tool = _text(payload, "toolName", "tool_name")
        tool_input = _copilot_arguments(payload.get("toolArgs", payload.get("tool_input", {})))
        name = harness
    else:
        raise PayloadError(f"unknown harness {harness!r}; use one of {', '.join(HARNESSES)}")
    if tool is None:
        field = "'toolName'" if harness == "copilot" else "'tool_name' or 'tool'"
        raise PayloadError(f"the hook payload has no tool name ({field})")
    if tool_input is None:
        tool_input = {}
    if not isinstance(tool_input, dict):
        field = "'toolArgs'" if harness == "copilot" else "'tool_input' or 'args'"
        raise PayloadError(f"the tool's arguments ({field}) must be an object")
    session, agent = identity(payload)
    return ToolCall(
        name,
        tool,
        tool_input,
        session=session,
        cwd=_text(payload, "cwd", "directory", "worktree"),
        agent=agent,
        call_id=_text(payload, "tool_use_id"),
    )


def identity(payload: dict[str, Any]) -> tuple[str | None, str | None]:
    """The (session, sub-agent) a hook payload comes from (None: unknown, the main agent).

    Claude Code and Codex send the session's `session_id` and a sub-agent's `agent_id`.
    Copilot CLI sends a sub-agent's own ID as `sessionId` and `agentId`, and the session
    that started it as `parentAgentId`: the call belongs to that session (its run key, the
    log it is recorded in), in the sub-agent's context.
    """
    session = _text(payload, "session_id", "sessionID", "sessionId")
    agent = _text(payload, "agent_id")
    if agent is None and (agent := _text(payload, "agentId")) is not None:
        session = _text(payload, "parentAgentId") or session
    return session, agent


def _copilot_arguments(value: Any) -> Any:
    # Copilot CLI 1.0.x sends `toolArgs` as an object; its earlier hooks sent the JSON text.
    if isinstance(value, str):
        from active_memory.recall import jsonio

        try:
            return jsonio.loads(value) if value.strip() else {}
        except ValueError:
            raise PayloadError("the tool's arguments ('toolArgs') are not JSON") from None
    return value


def hook_output(harness: str, answer: RecallAnswer) -> dict[str, Any] | None:
    """What the hook prints for `answer` (None: print nothing)."""
    if not answer.context:
        return None
    if harness in ("after-tool", "pi"):
        return {"append": "\n\n" + answer.context}
    if harness == "copilot":
        return {"additionalContext": answer.context}
    if harness == "gemini":
        specific = {"hookEventName": "AfterTool", "additionalContext": answer.context}
        return {"hookSpecificOutput": specific}
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "additionalContext": answer.context,
        }
    }
