"""The fake model server's replies in the Gemini API's wire format (what Gemini CLI sends to
`GOOGLE_GEMINI_BASE_URL`).

`POST /v1beta/models/{model}:generateContent` answers one `GenerateContentResponse`;
`:streamGenerateContent?alt=sse` the same response as one server-sent event; and
`:countTokens` a token count. A scripted `Turn`'s text blocks become `text` parts and its
tool calls `functionCall` parts; the finish reason is always `STOP` (Gemini marks a tool
call by the part, not by the reason).
"""

from __future__ import annotations

from typing import Any

from fakes.model_wire import Text, ToolCall, Turn

GEMINI_ACTIONS = (":generateContent", ":streamGenerateContent", ":countTokens")


def gemini_model(route: str) -> str:
    """The model named in a `/v1beta/models/{model}:action` route."""
    name = route.rsplit("/", 1)[-1]
    return name.split(":", 1)[0] or "gemini-fake"


def gemini_response(turn: Turn, model: str) -> dict[str, Any]:
    """One `GenerateContentResponse` for `turn`."""
    parts: list[dict[str, Any]] = []
    for part in turn.parts:
        if isinstance(part, Text):
            parts.append({"text": part.text})
        elif isinstance(part, ToolCall):
            parts.append({"functionCall": {"name": part.name, "args": part.input}})
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": turn.input_tokens,
            "candidatesTokenCount": turn.output_tokens,
            "totalTokenCount": turn.input_tokens + turn.output_tokens,
        },
        "modelVersion": model,
    }


def gemini_error(turn: Turn) -> dict[str, Any]:
    """The Gemini API's error object."""
    return {"error": {"code": turn.status, "message": turn.error, "status": "UNAVAILABLE"}}


def gemini_tool_results(body: dict[str, Any]) -> list[str]:
    """The text of every `functionResponse` part in a Gemini request body."""
    import json

    found: list[str] = []
    for content in body.get("contents") or []:
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                response = part["functionResponse"].get("response")
                found.append(json.dumps(response, ensure_ascii=False))
    return found
