"""The Anthropic Messages API lane (`anthropic` SDK, `AsyncAnthropic`).

Structured answers use JSON outputs: `output_config.format = {"type": "json_schema",
"schema": ...}` constrains decoding to the answer schema and the answer arrives as the
text block of the reply. The schema is passed through `anthropic.transform_schema`, which
moves keywords the API does not enforce (lengths, bounds) into descriptions; our own
pydantic validation still enforces every one of them afterwards.

Effort maps onto `output_config.effort` (the API takes low|medium|high|xhigh|max as is)
together with adaptive thinking (`thinking = {"type": "adaptive"}`); without an effort
both are left to the model's defaults.
"""

from __future__ import annotations

from typing import Any

import anthropic
from anthropic.types import OutputConfigParam

from active_memory.config import Effort
from active_memory.specialists.providers.base import BaseSession, Request, TurnOutput, Usage
from active_memory.specialists.providers.credentials import Secrets
from active_memory.specialists.providers.http import (
    describe_failure,
    provider_error,
    transient,
)
from active_memory.specialists.providers.retry import (
    RetryPolicy,
    call_with_retries,
    request_timeout,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 16000


class AnthropicSession(BaseSession):
    """One specialist's conversation with a Claude model through the Messages API."""

    def __init__(
        self,
        specialist: str,
        model: str,
        *,
        api_key: str,
        effort: Effort | None,
        deadline: float | None,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        super().__init__(specialist, "anthropic", model, deadline=deadline)
        self._base_url = base_url or DEFAULT_BASE_URL
        self._secrets = Secrets([api_key])
        self._effort = effort
        self._retry = retry or RetryPolicy()
        self._max_tokens = max_tokens
        # Retries are ours (they must respect the deadline), so the SDK's are off.
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=self._base_url, max_retries=0
        )

    def _params(self, request: Request) -> dict[str, Any]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        output: OutputConfigParam = {
            "format": {"type": "json_schema", "schema": anthropic.transform_schema(request.schema)}
        }
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self._max_tokens,
            "system": request.instructions(),
            "messages": messages,
            "output_config": output,
        }
        if self._effort is not None:
            output["effort"] = self._effort
            params["thinking"] = {"type": "adaptive"}
        return params

    async def _turn(self, request: Request) -> TurnOutput:
        params = self._params(request)

        async def send() -> anthropic.types.Message:
            reply: anthropic.types.Message = await self._client.messages.create(
                **params, timeout=request_timeout(self.remaining())
            )
            return reply

        try:
            reply = await call_with_retries(
                send,
                transient=lambda exc: transient(
                    exc, anthropic.APIStatusError, anthropic.APIConnectionError
                ),
                policy=self._retry,
                deadline=self.deadline,
                describe=lambda exc: describe_failure(exc, self._secrets),
            )
        except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
            raise provider_error(
                exc,
                specialist=self.specialist,
                provider=self.provider,
                model=self.model,
                base_url=self._base_url,
                secrets=self._secrets,
                status_error=anthropic.APIStatusError,
            ) from None
        text = "".join(block.text for block in reply.content if block.type == "text")
        usage = Usage(
            input_tokens=reply.usage.input_tokens
            + (reply.usage.cache_creation_input_tokens or 0)
            + (reply.usage.cache_read_input_tokens or 0),
            output_tokens=reply.usage.output_tokens,
            requests=1,
        )
        refusal = None
        if reply.stop_reason == "refusal":
            refusal = text or "stop_reason refusal"
        return TurnOutput(
            text=text, usage=usage, refusal=refusal, truncated=reply.stop_reason == "max_tokens"
        )

    async def aclose(self) -> None:
        """Close the SDK's HTTP client."""
        await self._client.close()
