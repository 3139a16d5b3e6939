"""What the two HTTP SDKs (anthropic, openai) share: which failures are transient, and how
a failure becomes a `ProviderError` with a masked body excerpt.

Both SDKs are generated from the same template: `APIStatusError` carries `status_code`,
`response` and `body`; `APIConnectionError` (timeouts included) has no response.
"""

from __future__ import annotations

import json
from typing import Any

from active_memory.errors import ProviderError
from active_memory.specialists.providers.base import excerpt
from active_memory.specialists.providers.credentials import Secrets
from active_memory.specialists.providers.retry import Transient, retry_after_seconds

# 408 and 409 are what the SDKs themselves retry besides 429 and every 5xx (529: overloaded).
_TRANSIENT_STATUS = frozenset({408, 409, 429})


def transient(
    exc: BaseException, status_error: type[Any], connection_error: type[Any]
) -> Transient | None:
    """A retry hint for a transient SDK failure; None for one that retrying cannot fix."""
    if isinstance(exc, status_error):
        status = int(exc.status_code)
        if status in _TRANSIENT_STATUS or status >= 500:
            return Transient(retry_after_seconds(dict(exc.response.headers)))
        return None
    if isinstance(exc, connection_error):
        return Transient()
    return None


def body_excerpt(exc: Any, secrets: Secrets, limit: int = 300) -> str:
    """The response body of a failed request, short and with every secret masked."""
    body = getattr(exc, "body", None)
    if body is None:
        response = getattr(exc, "response", None)
        text = str(getattr(response, "text", "") or "")
    else:
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return secrets.mask(excerpt(text, limit))


def describe_failure(exc: BaseException, secrets: Secrets) -> str:
    """A failure in one masked line, for the retry log."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return f"HTTP {status}: {body_excerpt(exc, secrets, 120)}"
    return secrets.mask(excerpt(f"{type(exc).__name__}: {exc}", 120))


def provider_error(
    exc: BaseException,
    *,
    specialist: str,
    provider: str,
    model: str,
    base_url: str,
    secrets: Secrets,
    status_error: type[Any],
) -> ProviderError:
    """The domain error for a request that failed for good."""
    if isinstance(exc, status_error):
        status = int(getattr(exc, "status_code", 0))
        body = body_excerpt(exc, secrets)
        hint = {
            401: "; check the API key",
            403: "; the key may not have access to this model",
            404: "; check the model ID and the base URL",
            429: "; rate limited past the retries or the deadline",
        }.get(status, "")
        return ProviderError(
            specialist,
            f"{provider} answered HTTP {status} for model {model!r}{hint}: {body}",
            provider=provider,
            model=model,
            status_code=status,
            body=body,
        )
    reason = secrets.mask(excerpt(f"{type(exc).__name__}: {exc}"))
    return ProviderError(
        specialist,
        f"cannot reach {provider} at {secrets.mask(base_url)}: {reason}",
        provider=provider,
        model=model,
    )
