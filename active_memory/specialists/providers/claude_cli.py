"""The `claude -p` lane (Claude Code in print mode), one run per turn.

What the real binary (2.1.x) showed, and what this lane does about it:

- By default every request carries Claude Code's own system prompt and its tool schemas
  (about 87 KB per request). A specialist needs none of that: `--system-prompt` replaces
  the system prompt with the specialist's instructions and `--tools` offers only the
  read-only file tools (Read, Grep, Glob) when the model may read the checkout, none
  otherwise; the request then carries the instructions, the task and those schemas.
- `--json-schema` makes the model answer through a `StructuredOutput` tool that Claude
  Code validates itself, retrying up to `MAX_STRUCTURED_OUTPUT_RETRIES` times; when every
  try fails the result is `error_max_structured_output_retries` with an empty `result`.
  That is a schema failure like any other: the last offered answer goes to our validation
  and the one repair turn. Claude Code's own retries are capped at 2.
- Its result `usage` leaves out the last request of such a failed run, so usage is
  counted from the stream (`--output-format stream-json --verbose`): one request per
  assistant message ID, each with its input tokens; the result's totals are used where
  they are larger (output tokens arrive only at the end of a streamed message).
- Permissions: `--permission-mode dontAsk` refuses anything not allowed without asking;
  reads inside the working folder are allowed by default, anything outside it is
  refused; writes, shell and network tools are not offered and are denied by name too.
  Only the user's settings are read (`--setting-sources user`: their login, gateway and
  `env` keep working; the checkout's project and local settings, which the repository's
  authors control, are not), all hooks are off (`disableAllHooks`, so Active Memory's
  own hooks never see a specialist's session), no MCP servers, no slash commands, and
  the session is not saved (`--no-session-persistence`: nothing appears in the user's
  resume list). The repair turn therefore starts a new run that carries the
  conversation so far.
"""

from __future__ import annotations

import json
from typing import Any

from active_memory.specialists.providers.base import Request, TurnOutput, Usage, excerpt
from active_memory.specialists.providers.cli_common import (
    CliSession,
    as_int,
    investigation_note,
    json_lines,
    transcript,
)

READ_TOOLS = ("Read", "Grep", "Glob")
# Not offered at all (`--tools`); named again so that no setting can bring them back.
DENIED_TOOLS = ("Bash", "Edit", "Write", "NotebookEdit", "WebFetch", "WebSearch", "Agent", "Task")
STRUCTURED_OUTPUT = "StructuredOutput"
RETRIES_EXHAUSTED = "error_max_structured_output_retries"
_QUIET_ENV = {
    "MAX_STRUCTURED_OUTPUT_RETRIES": "2",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
_NO_HOOKS = json.dumps({"disableAllHooks": True})


class ClaudeCliSession(CliSession):
    """`claude -p --output-format stream-json`, one run per turn."""

    executable = "claude"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, value in _QUIET_ENV.items():
            self._env.setdefault(name, value)

    def argv(self, request: Request) -> list[str]:
        """The command line of one turn."""
        argv = [self.executable, "-p", "--output-format", "stream-json", "--verbose"]
        argv += ["--model", self.model]
        if self._effort is not None:
            argv += ["--effort", self._effort]
        instructions = request.instructions()
        if self.investigates:
            instructions += investigation_note(self.workdir, "the Read, Grep and Glob tools")
        argv += ["--json-schema", json.dumps(request.schema, ensure_ascii=False)]
        argv += ["--system-prompt", instructions]
        argv += ["--tools", ",".join(READ_TOOLS) if self.investigates else ""]
        argv += ["--disallowedTools", ",".join(DENIED_TOOLS)]
        argv += ["--permission-mode", "dontAsk", "--setting-sources", "user"]
        argv += ["--settings", _NO_HOOKS]
        argv += ["--strict-mcp-config", "--disable-slash-commands", "--no-session-persistence"]
        return argv

    async def _turn(self, request: Request) -> TurnOutput:
        finished = await self.run(self.argv(request), transcript(request.messages))
        events = json_lines(finished.stdout)
        results = [e for e in events if e.get("type") == "result"]
        if not results:
            raise self.failed(
                self.exit_detail(finished)
                if finished.returncode
                else f"claude printed no JSON result: {excerpt(finished.stdout.decode('replace'))}"
            )
        result = results[-1]
        stream = _Stream(events)
        usage = stream.usage(result)
        subtype = result.get("subtype")
        if subtype == RETRIES_EXHAUSTED:
            # Claude Code's own schema retries ran out: our validation and repair turn
            # judge the last answer it offered (or its absence).
            offered = stream.last_structured_output
            text = json.dumps(offered, ensure_ascii=False) if offered is not None else ""
            return TurnOutput(text=text, data=offered, usage=usage)
        if result.get("is_error") or subtype not in (None, "success"):
            self._usage = self._usage.plus(usage)  # a failed run still cost this
            detail = result.get("result") or "; ".join(map(str, result.get("errors") or ()))
            raise self.failed(f"claude reported {subtype or 'an error'}: {excerpt(str(detail))}")
        answer = result.get("result")
        return TurnOutput(
            text=answer if isinstance(answer, str) else "",
            data=result.get("structured_output"),
            usage=usage,
        )


class _Stream:
    """What the stream-json events say about the run's requests and tool calls."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.messages: dict[str, dict[str, Any]] = {}  # message ID -> its (first) usage
        self.tool_names: dict[str, str] = {}  # tool_use ID -> tool name
        self.errored: set[str] = set()  # tool_use IDs whose result was an error
        self.last_structured_output: Any = None
        for event in events:
            message = event.get("message")
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            blocks = (
                [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
            )
            if event.get("type") == "assistant":
                raw = message.get("usage")
                self.messages.setdefault(
                    str(message.get("id")), raw if isinstance(raw, dict) else {}
                )
                for block in blocks:
                    if block.get("type") != "tool_use":
                        continue
                    self.tool_names[str(block.get("id"))] = str(block.get("name"))
                    if block.get("name") == STRUCTURED_OUTPUT:
                        self.last_structured_output = block.get("input")
            elif event.get("type") == "user":
                for block in blocks:
                    if block.get("type") == "tool_result" and block.get("is_error"):
                        self.errored.add(str(block.get("tool_use_id")))

    def usage(self, result: dict[str, Any]) -> Usage:
        """Every request of the run; the larger of the stream's and the result's totals."""
        raw = result.get("usage") if isinstance(result.get("usage"), dict) else {}
        assert isinstance(raw, dict)
        streamed_in = sum(_input_tokens(u) for u in self.messages.values())
        streamed_out = sum(as_int(u.get("output_tokens")) for u in self.messages.values())
        cost = result.get("total_cost_usd")
        calls = [i for i, name in self.tool_names.items() if name != STRUCTURED_OUTPUT]
        return Usage(
            input_tokens=max(streamed_in, _input_tokens(raw)),
            output_tokens=max(streamed_out, as_int(raw.get("output_tokens"))),
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
            requests=max(1, len(self.messages)),
            # The result's totals missing a streamed request: its output is unknown.
            complete=streamed_in <= _input_tokens(raw) or not raw,
            tool_calls=len(calls),
            tool_errors=sum(1 for i in calls if i in self.errored),
        )


def _input_tokens(usage: dict[str, Any]) -> int:
    return sum(
        as_int(usage.get(k))
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
