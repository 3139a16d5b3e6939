"""The fake model server's replies in the real wire formats.

A scripted `Turn` (text blocks, tool calls, a JSON answer, an HTTP error) becomes an
Anthropic `message` object or its server-sent event stream, an OpenAI Responses event
stream, or a Chat Completions object or chunk stream; `Received` is one logged request.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

_ids = itertools.count(1)


@dataclass(frozen=True)
class Text:
    """A text block of the model's reply."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """A tool call of the model's reply (`tool_use` block / `function_call` item)."""

    name: str
    input: dict[str, Any]
    id: str = ""
    namespace: str | None = None
    """Responses API only: the tool namespace the function belongs to (Codex offers each
    MCP server's tools as a `namespace` tool, e.g. `mcp__active_memory`)."""


@dataclass(frozen=True)
class Turn:
    """One scripted model reply, or an HTTP error when `status` is not 200."""

    parts: tuple[Text | ToolCall, ...] = ()
    status: int = 200
    error: str = ""
    input_tokens: int = 200
    output_tokens: int = 30
    delay: float = 0.0
    hang: bool = False
    stall: bool = False  # start the stream (status and first event), then send nothing
    when: Callable[[Received], bool] | None = None
    structured: Any = None  # a JSON answer; see `for_request`

    def for_request(self, received: Received) -> Turn:
        """The turn as sent: a JSON answer goes through Claude Code's `StructuredOutput`
        tool when the request offers it (`claude -p --json-schema`), else as text."""
        if self.structured is None:
            return self
        if STRUCTURED_OUTPUT in received.tool_names():
            call = ToolCall(STRUCTURED_OUTPUT, self.structured, f"call_{next(_ids):06d}")
            return replace(self, parts=(call,), structured=None)
        return replace(self, parts=(Text(json.dumps(self.structured)),), structured=None)


STRUCTURED_OUTPUT = "StructuredOutput"


def text(value: str, **options: Any) -> Turn:
    """A reply of one text block."""
    return Turn((Text(value),), **options)


def answer(value: Any, **options: Any) -> Turn:
    """A specialist's JSON answer: a `StructuredOutput` tool call when the request offers
    that tool, else the JSON as text."""
    return Turn(structured=value, **options)


def tool(
    name: str,
    arguments: dict[str, Any],
    *,
    say: str = "",
    namespace: str | None = None,
    **options: Any,
) -> Turn:
    """A reply that calls one tool (preceded by `say` as text when given); `namespace`
    names the Responses API tool namespace the function is in."""
    parts: list[Text | ToolCall] = [Text(say)] if say else []
    parts.append(ToolCall(name, arguments, f"call_{next(_ids):06d}", namespace))
    return Turn(tuple(parts), **options)


def error(status: int, message: str = "scripted failure") -> Turn:
    """An HTTP error reply in the API's error shape."""
    return Turn(status=status, error=message)


@dataclass(frozen=True)
class Received:
    """One request the server got."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float
    raw_size: int = 0

    @property
    def route(self) -> str:
        """The path without its query string."""
        return urlsplit(self.path).path

    def dump(self) -> str:
        """The whole body as JSON text (for 'is this string anywhere in the request')."""
        return json.dumps(self.body, ensure_ascii=False)

    def tool_results(self) -> list[str]:
        """The text of every tool result in the request (Anthropic, Responses, Chat
        Completions and Gemini shapes)."""
        found: list[str] = []
        body = self.body if isinstance(self.body, dict) else {}
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append(_flatten(block.get("content")))
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                found.append(_flatten(item.get("output")))
        for message in body.get("messages") or []:  # Chat Completions
            if isinstance(message, dict) and message.get("role") == "tool":
                found.append(_flatten(message.get("content")))
        from fakes.gemini_wire import gemini_tool_results

        return found + gemini_tool_results(body)

    def tool_names(self) -> list[str]:
        """The names of the tools the request offers the model."""
        body = self.body if isinstance(self.body, dict) else {}
        names: list[str] = []
        for entry in body.get("tools") or []:
            if isinstance(entry, dict) and isinstance(entry.get("functionDeclarations"), list):
                # Gemini: one entry holds every function's declaration.
                names.extend(str(f.get("name")) for f in entry["functionDeclarations"])
            elif isinstance(entry, dict):
                name = entry.get("name") or (entry.get("function") or {}).get("name")
                names.append(str(name or entry.get("type")))
        return names


def _flatten(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_flatten(v) for v in value)
    if isinstance(value, dict):
        return _flatten(value.get("text", value.get("output", json.dumps(value))))
    return json.dumps(value)


def not_found(received: Received) -> dict[str, Any]:
    message = f"the fake model server has no route {received.method} {received.route}"
    return {"type": "error", "error": {"type": "not_found_error", "message": message}}


def error_body(route: str, turn: Turn) -> dict[str, Any]:
    if route.endswith("/messages"):
        kinds = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}
        kind = kinds.get(turn.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": turn.error}}
    return {"error": {"message": turn.error, "type": "server_error", "param": None, "code": None}}


def _arguments(call: ToolCall) -> str:
    return json.dumps(call.input)


def _anthropic_content(turn: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in turn.parts:
        if isinstance(part, Text):
            blocks.append({"type": "text", "text": part.text})
        else:
            blocks.append(
                {"type": "tool_use", "id": _tool_id(part, "toolu"), "name": part.name,
                 "input": part.input}
            )  # fmt: skip
    return blocks


def _tool_id(call: ToolCall, prefix: str) -> str:
    return call.id if call.id.startswith(prefix) else f"{prefix}_{call.id or next(_ids)}"


def _stop_reason(turn: Turn) -> str:
    return "tool_use" if any(isinstance(p, ToolCall) for p in turn.parts) else "end_turn"


def _anthropic_usage(turn: Turn) -> dict[str, Any]:
    return {
        "input_tokens": turn.input_tokens,
        "output_tokens": turn.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "service_tier": "standard",
    }


def anthropic_message(turn: Turn, model: str) -> dict[str, Any]:
    return {
        "id": f"msg_fake{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _anthropic_content(turn),
        "stop_reason": _stop_reason(turn),
        "stop_sequence": None,
        "usage": _anthropic_usage(turn),
    }


def anthropic_events(turn: Turn, model: str) -> Iterator[dict[str, Any]]:
    start = anthropic_message(turn, model) | {"content": [], "stop_reason": None}
    start["usage"] = _anthropic_usage(turn) | {"output_tokens": 1}
    yield {"type": "message_start", "message": start}
    for index, block in enumerate(_anthropic_content(turn)):
        if block["type"] == "text":
            yield {"type": "content_block_start", "index": index,
                   "content_block": {"type": "text", "text": ""}}  # fmt: skip
            for piece in _pieces(block["text"]):
                yield {"type": "content_block_delta", "index": index,
                       "delta": {"type": "text_delta", "text": piece}}  # fmt: skip
        else:
            yield {"type": "content_block_start", "index": index,
                   "content_block": block | {"input": {}}}  # fmt: skip
            for piece in _pieces(json.dumps(block["input"])):
                yield {"type": "content_block_delta", "index": index,
                       "delta": {"type": "input_json_delta", "partial_json": piece}}  # fmt: skip
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": _stop_reason(turn), "stop_sequence": None},
        "usage": {"output_tokens": turn.output_tokens},
    }
    yield {"type": "message_stop"}


def _pieces(value: str, size: int = 40) -> Iterator[str]:
    # Several deltas per block, as a real stream sends, so clients must join them.
    if not value:
        yield ""
    for start in range(0, len(value), size):
        yield value[start : start + size]


def _responses_items(turn: Turn) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for part in turn.parts:
        if isinstance(part, Text):
            items.append(
                {"type": "message", "id": f"msg_fake{next(_ids):06d}", "role": "assistant",
                 "status": "completed",
                 "content": [{"type": "output_text", "text": part.text, "annotations": []}]}
            )  # fmt: skip
        else:
            item = {"type": "function_call", "id": f"fc_fake{next(_ids):06d}",
                    "status": "completed", "call_id": _tool_id(part, "call"), "name": part.name,
                    "arguments": _arguments(part)}  # fmt: skip
            if part.namespace:
                item["namespace"] = part.namespace
            items.append(item)
    return items


def responses_events(turn: Turn, model: str) -> Iterator[dict[str, Any]]:
    response: dict[str, Any] = {
        "id": f"resp_fake{next(_ids):06d}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": model,
        "output": [],
        "usage": None,
    }
    sequence = itertools.count()
    yield {"type": "response.created", "response": response, "sequence_number": next(sequence)}
    items = _responses_items(turn)
    for index, item in enumerate(items):
        empty: dict[str, Any] = {"content": []} if item["type"] == "message" else {"arguments": ""}
        added = item | empty
        yield {"type": "response.output_item.added", "output_index": index, "item": added,
               "sequence_number": next(sequence)}  # fmt: skip
        if item["type"] == "message":
            value = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            yield {"type": "response.content_part.added", "item_id": item["id"],
                   "output_index": index, "content_index": 0, "part": part,
                   "sequence_number": next(sequence)}  # fmt: skip
            for piece in _pieces(value):
                yield {"type": "response.output_text.delta", "item_id": item["id"],
                       "output_index": index, "content_index": 0, "delta": piece,
                       "sequence_number": next(sequence)}  # fmt: skip
            yield {"type": "response.output_text.done", "item_id": item["id"],
                   "output_index": index, "content_index": 0, "text": value,
                   "sequence_number": next(sequence)}  # fmt: skip
            yield {"type": "response.content_part.done", "item_id": item["id"],
                   "output_index": index, "content_index": 0,
                   "part": part | {"text": value}, "sequence_number": next(sequence)}  # fmt: skip
        else:
            yield {"type": "response.function_call_arguments.done", "item_id": item["id"],
                   "output_index": index, "arguments": item["arguments"],
                   "sequence_number": next(sequence)}  # fmt: skip
        yield {"type": "response.output_item.done", "output_index": index, "item": item,
               "sequence_number": next(sequence)}  # fmt: skip
    usage = {
        "input_tokens": turn.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": turn.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": turn.input_tokens + turn.output_tokens,
    }
    done = response | {"status": "completed", "output": items, "usage": usage}
    yield {"type": "response.completed", "response": done, "sequence_number": next(sequence)}


def _chat_message(turn: Turn) -> dict[str, Any]:
    texts = [p.text for p in turn.parts if isinstance(p, Text)]
    calls = [
        {"id": _tool_id(p, "call"), "type": "function",
         "function": {"name": p.name, "arguments": _arguments(p)}}
        for p in turn.parts
        if isinstance(p, ToolCall)
    ]  # fmt: skip
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _chat_usage(turn: Turn) -> dict[str, int]:
    return {
        "prompt_tokens": turn.input_tokens,
        "completion_tokens": turn.output_tokens,
        "total_tokens": turn.input_tokens + turn.output_tokens,
    }


def chat_completion(turn: Turn, model: str) -> dict[str, Any]:
    finish = "tool_calls" if any(isinstance(p, ToolCall) for p in turn.parts) else "stop"
    return {
        "id": f"chatcmpl-fake{next(_ids):06d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": _chat_message(turn), "finish_reason": finish}],
        "usage": _chat_usage(turn),
    }


def chat_chunks(turn: Turn, model: str) -> Iterator[dict[str, Any]]:
    completion = chat_completion(turn, model)
    base = {key: completion[key] for key in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    message = completion["choices"][0]["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"] or ""}
    if "tool_calls" in message:
        delta["tool_calls"] = [call | {"index": i} for i, call in enumerate(message["tool_calls"])]
    yield base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    finish = completion["choices"][0]["finish_reason"]
    yield base | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    yield base | {"choices": [], "usage": completion["usage"]}


def new_id() -> int:
    """A fresh number for IDs (messages, requests, tool calls)."""
    return next(_ids)
