"""Response bodies and headers in the providers' real wire formats.

Anthropic Messages API: a `message` object with content blocks, `stop_reason` and
`usage`; errors are `{"type": "error", "error": {"type", "message"}, "request_id"}` with
`request-id` and, on 429/529, `retry-after`. OpenAI Chat Completions: a
`chat.completion` object with `choices[].message` and `usage` (OpenRouter adds
`usage.cost`); errors are `{"error": {"message", "type", "param", "code"}}` with
`x-request-id` and, on 429, `retry-after-ms` / `retry-after`.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from fakes.http_server import Scripted

_ids = itertools.count(1)

ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def anthropic_message(
    answer: Any,
    *,
    input_tokens: int = 120,
    output_tokens: int = 40,
    cache_read: int = 0,
    stop_reason: str = "end_turn",
    model: str = "claude-sonnet-5",
    thinking: bool = False,
) -> Scripted:
    """A 200 reply whose text block holds `answer` (JSON-encoded unless already text)."""
    text = answer if isinstance(answer, str) else json.dumps(answer)
    content: list[dict[str, Any]] = []
    if thinking:
        content.append({"type": "thinking", "thinking": "Checking the schema.", "signature": "s1"})
    content.append({"type": "text", "text": text})
    number = next(_ids)
    return Scripted(
        200,
        {
            "id": f"msg_01FAKE{number:06d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": cache_read,
                "service_tier": "standard",
            },
        },
        {"request-id": f"req_01FAKE{number:06d}"},
    )


def anthropic_error(status: int, message: str, *, retry_after: str | None = None) -> Scripted:
    """An error reply as the Messages API sends it."""
    number = next(_ids)
    headers = {"request-id": f"req_01FAKE{number:06d}", "x-should-retry": "true"}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    if status == 429:
        headers["anthropic-ratelimit-requests-remaining"] = "0"
    return Scripted(
        status,
        {
            "type": "error",
            "error": {"type": ANTHROPIC_ERROR_TYPES.get(status, "api_error"), "message": message},
            "request_id": f"req_01FAKE{number:06d}",
        },
        headers,
    )


def openai_completion(
    answer: Any,
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    cost: float | None = None,
    refusal: str | None = None,
    model: str = "gpt-5",
    finish_reason: str = "stop",
) -> Scripted:
    """A 200 Chat Completions reply whose message content holds `answer`."""
    text = None if answer is None else answer if isinstance(answer, str) else json.dumps(answer)
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    if cost is not None:
        usage["cost"] = cost
        usage["is_byok"] = False
    number = next(_ids)
    return Scripted(
        200,
        {
            "id": f"chatcmpl-FAKE{number:06d}",
            "object": "chat.completion",
            "created": 1764410000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": refusal},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": usage,
            "system_fingerprint": "fp_fake",
        },
        {"x-request-id": f"req_FAKE{number:06d}"},
    )


def openai_error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    retry_after_ms: str | None = None,
    param: str | None = None,
) -> Scripted:
    """An error reply as the OpenAI API sends it."""
    headers = {"x-request-id": f"req_FAKE{next(_ids):06d}"}
    if retry_after_ms is not None:
        headers["retry-after-ms"] = retry_after_ms
    if status == 429:
        headers["x-ratelimit-remaining-requests"] = "0"
        headers["x-ratelimit-reset-requests"] = "1s"
    kind = {429: "requests", 400: "invalid_request_error", 401: "invalid_request_error"}
    return Scripted(
        status,
        {
            "error": {
                "message": message,
                "type": kind.get(status, "server_error"),
                "param": param,
                "code": code,
            }
        },
        headers,
    )


def vllm_error(status: int, message: str) -> Scripted:
    """An error reply as vLLM's OpenAI-compatible server sends it."""
    return Scripted(
        status,
        {"object": "error", "message": message, "type": "BadRequestError", "param": None,
         "code": status},
    )  # fmt: skip
