"""OpenAI and OpenAI-compatible servers (`openai` SDK, `AsyncOpenAI` with a `base_url`).

One adapter serves the OpenAI API, OpenRouter (`https://openrouter.ai/api/v1`) and local
servers that speak Chat Completions (vLLM, Ollama, llama.cpp's server). Chat Completions
is the one endpoint all of them share, so it is the one used.

Structured answers: `response_format = {"type": "json_schema", ...}` first. A server that
rejects it (HTTP 400/422 naming the response format or schema) is asked again with JSON
mode (`{"type": "json_object"}`), and one that rejects that too with no response format;
the schema is in the system prompt in every case and our validation decides. The session
remembers the mode that worked.

Effort maps onto `reasoning_effort` for OpenAI and OpenRouter (both take low..max as is);
a self-hosted server gets none unless asked to (`send_effort=True`), because not every
one accepts the field.
"""

from __future__ import annotations

from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletion

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

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"

FormatMode = Literal["json_schema", "json_object", "none"]
_FALLBACK: dict[FormatMode, FormatMode] = {"json_schema": "json_object", "json_object": "none"}
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema")


class OpenAICompatibleSession(BaseSession):
    """One specialist's conversation through a Chat Completions endpoint."""

    def __init__(
        self,
        specialist: str,
        model: str,
        *,
        provider: str,
        api_key: str,
        base_url: str,
        effort: Effort | None,
        deadline: float | None,
        send_effort: bool = True,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(specialist, provider, model, deadline=deadline)
        self._base_url = base_url
        self._secrets = Secrets([api_key])
        self._effort = effort if send_effort else None
        self._retry = retry or RetryPolicy()
        self._mode: FormatMode = "json_schema"
        self._client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0)

    @property
    def format_mode(self) -> FormatMode:
        """How this session currently asks for JSON (it steps down when a server refuses)."""
        return self._mode

    def _params(self, request: Request) -> dict[str, Any]:
        messages = [{"role": "system", "content": request.instructions()}]
        messages.extend({"role": m.role, "content": m.content} for m in request.messages)
        params: dict[str, Any] = {"model": self.model, "messages": messages}
        if self._mode == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema_name[:64],
                    "schema": request.schema,
                    # strict mode needs every property required; our answers have optional ones
                    "strict": False,
                },
            }
        elif self._mode == "json_object":
            params["response_format"] = {"type": "json_object"}
        if self._effort is not None:
            params["reasoning_effort"] = self._effort
        return params

    def _format_refused(self, exc: BaseException) -> bool:
        if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
            return False
        text = f"{exc.body} {exc.message}".lower()
        return self._mode in _FALLBACK and any(word in text for word in _FORMAT_WORDS)

    async def _send(self, request: Request) -> ChatCompletion:
        while True:
            params = self._params(request)

            async def send(params: dict[str, Any] = params) -> ChatCompletion:
                reply: ChatCompletion = await self._client.chat.completions.create(
                    **params, timeout=request_timeout(self.remaining())
                )
                return reply

            try:
                return await call_with_retries(
                    send,
                    transient=lambda exc: transient(
                        exc, openai.APIStatusError, openai.APIConnectionError
                    ),
                    policy=self._retry,
                    deadline=self.deadline,
                    describe=lambda exc: describe_failure(exc, self._secrets),
                )
            except openai.APIStatusError as exc:
                if not self._format_refused(exc):
                    raise
                self._mode = _FALLBACK[self._mode]

    async def _turn(self, request: Request) -> TurnOutput:
        try:
            reply = await self._send(request)
        except (openai.APIStatusError, openai.APIConnectionError) as exc:
            raise provider_error(
                exc,
                specialist=self.specialist,
                provider=self.provider,
                model=self.model,
                base_url=self._base_url,
                secrets=self._secrets,
                status_error=openai.APIStatusError,
            ) from None
        usage = Usage(requests=1)
        if reply.usage is not None:
            cost = getattr(reply.usage, "cost", None)  # OpenRouter reports cost in USD
            usage = Usage(
                input_tokens=reply.usage.prompt_tokens,
                output_tokens=reply.usage.completion_tokens,
                cost_usd=float(cost) if isinstance(cost, int | float) else None,
                requests=1,
            )
        if not reply.choices:
            return TurnOutput(text="", usage=usage)
        choice = reply.choices[0]
        return TurnOutput(
            text=choice.message.content or "",
            usage=usage,
            refusal=choice.message.refusal,
            truncated=choice.finish_reason == "length",
        )

    async def aclose(self) -> None:
        """Close the SDK's HTTP client."""
        await self._client.close()
