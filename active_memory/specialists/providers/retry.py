"""Retrying transient provider failures (tenacity), never past the session's deadline.

Rate limits (429, honouring `retry-after-ms` / `retry-after`), overload and server errors
(5xx, 529) and connection failures are retried with exponential backoff and jitter. A
wait that would end after the deadline is not taken: the last failure is returned to the
caller at once, so the specialist fails with the provider's own status and body instead
of sleeping into its timeout.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

T = TypeVar("T")
DEADLINE_MARGIN = 1.0
MAX_REQUEST_SECONDS = 600.0
logger = logging.getLogger("active_memory.providers")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently to retry one request."""

    attempts: int = 3  # in all, the first try included
    initial_wait: float = 0.5
    max_wait: float = 8.0
    jitter: float = 0.25  # up to this fraction of a wait is added at random


@dataclass(frozen=True, slots=True)
class Transient:
    """A failure worth retrying; `retry_after` is the server's own wait, if it gave one."""

    retry_after: float | None = None


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for: `retry-after-ms`, else `retry-after` (seconds or date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds is not None:
        try:
            value = float(milliseconds) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    seconds = lowered.get("retry-after")
    if seconds is None:
        return None
    try:
        value = float(seconds)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(seconds)
        except (TypeError, ValueError):
            return None
        value = float(parsed.timestamp()) - time.time()
    return max(value, 0.0) if math.isfinite(value) else None


def request_timeout(remaining: float) -> float:
    """The HTTP timeout of one request: a little past the deadline, so that the session's
    cancel scope, the one authority on time, ends a stuck request first (and it becomes
    `SpecialistTimedOut`, not a connection error); at most 10 minutes without a deadline."""
    return max(min(remaining + DEADLINE_MARGIN, MAX_REQUEST_SECONDS), 0.001)


def _backoff(policy: RetryPolicy, attempt: int) -> float:
    base = min(policy.max_wait, policy.initial_wait * 2.0 ** (attempt - 1))
    return base * (1 + random.uniform(0, policy.jitter))


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    transient: Callable[[BaseException], Transient | None],
    policy: RetryPolicy,
    deadline: float,
    describe: Callable[[BaseException], str] = repr,
) -> T:
    """`await call()`, retrying transient failures; the last failure is raised unchanged.

    `describe` renders a failure for the log (with secrets masked: the log is output too).
    """

    def log_retry(state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome else None
        logger.warning(
            "attempt %d failed (%s); retrying in %.2f s",
            state.attempt_number,
            describe(failure) if failure is not None else "no outcome",
            state.upcoming_sleep,
        )

    def wait(state: RetryCallState) -> float:
        failure = state.outcome.exception() if state.outcome else None
        hint = transient(failure) if failure is not None else None
        if hint is not None and hint.retry_after is not None:
            return hint.retry_after
        return _backoff(policy, state.attempt_number)

    def stop(state: RetryCallState) -> bool:
        if state.attempt_number >= policy.attempts:
            return True
        return anyio.current_time() + state.upcoming_sleep >= deadline

    retrying = AsyncRetrying(
        retry=retry_if_exception(lambda exc: transient(exc) is not None),
        stop=stop,
        wait=wait,
        sleep=anyio.sleep,
        before_sleep=log_retry,
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover
