"""`open_session`: the adapter a specialist's lane calls for.

| mode | lane | adapter |
|---|---|---|
| api | provider anthropic | Anthropic Messages API (key ANTHROPIC_API_KEY) |
| api | provider openai | OpenAI Chat Completions (OPENAI_API_KEY; a declared OPENAI_BASE_URL |
|     |                 | points it at a compatible server) |
| api | provider openrouter | the same adapter at OpenRouter's base URL (OPENROUTER_API_KEY) |
| cli | harness claude | `claude -p --output-format stream-json` |
| cli | harness codex | `codex exec --json` |
| replay | any | recorded answers (`recordings`) |
| exchange | any | task and answer files (`exchange_dir`) |

Keys and base URLs are read only from names the lane declares (SPEC §2).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

import anyio
import anyio.to_thread

from active_memory.config import SpecialistLane
from active_memory.errors import UsageError
from active_memory.specialists.providers.base import BaseSession
from active_memory.specialists.providers.credentials import read_declared, require_key
from active_memory.specialists.providers.retry import RetryPolicy

if TYPE_CHECKING:
    from active_memory.specialists.providers.exchange import Pending

Mode: TypeAlias = Literal["api", "cli", "replay", "exchange"]


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """How to reach the lane; the defaults suit a live postmortem through the API."""

    mode: Mode = "api"
    base_url: str | None = None  # overrides the provider's URL (tests, self-hosted servers)
    send_effort: bool | None = None  # None: yes, unless OpenAI's URL is overridden
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cwd: Path | None = None  # the CLI lanes' working folder (the checkout)
    executable: str | None = None  # the CLI to run instead of `claude` / `codex`
    # The CLI lanes may read `cwd` with the harness's read-only tools (docs/providers.md).
    investigate: bool = True
    recordings: Path | None = None
    exchange_dir: Path | None = None
    # exchange: told once per task where its files are, while its answer is awaited
    exchange_waiting: Callable[[Pending], None] | None = None


_ADAPTERS = {
    "anthropic": "active_memory.specialists.providers.anthropic_api",
    "openai": "active_memory.specialists.providers.openai_api",
    "openrouter": "active_memory.specialists.providers.openai_api",
}


async def load_adapter(lane: SpecialistLane, options: SessionOptions | None = None) -> None:
    """Import the lane's SDK adapter in a worker thread, before any session opens.

    The `anthropic` and `openai` SDKs take a second or more to import cold; imported by
    `open_session` they would block the event loop inside the deadline, where nothing can
    cut them. Here the import runs off the loop and the wait is cancellable (the thread
    is abandoned): a deadline that fires during it is honoured, and the time it took is
    counted in the postmortem's own clock. A missing SDK is left for `open_session` to
    report.
    """
    import importlib
    import sys

    opts = options or SessionOptions()
    name = _ADAPTERS.get(lane.provider) if opts.mode == "api" else None
    if name is None or name in sys.modules:
        return
    try:
        await anyio.to_thread.run_sync(importlib.import_module, name, abandon_on_cancel=True)
    except ImportError:
        return


def open_session(
    lane: SpecialistLane,
    specialist: str,
    *,
    deadline: float | None,
    options: SessionOptions | None = None,
    environ: Mapping[str, str] | None = None,
) -> BaseSession:
    """A new session for one specialist on the lane; `deadline` is an absolute anyio time.

    Raises `SpecialistFailed` (kind `credentials`) when the lane lacks its API key and
    `UsageError` when the options do not fit the mode.
    """
    opts = options or SessionOptions()
    env = os.environ if environ is None else environ
    if opts.mode == "replay":
        if opts.recordings is None:
            raise UsageError("replay needs a recordings file")
        from active_memory.specialists.providers.replay import ReplaySession

        return ReplaySession(specialist, lane.model, path=opts.recordings, deadline=deadline)
    if opts.mode == "exchange":
        if opts.exchange_dir is None:
            raise UsageError("file exchange needs a folder for its task and answer files")
        from active_memory.specialists.providers.exchange import FileExchangeSession

        return FileExchangeSession(
            specialist,
            lane.model,
            directory=opts.exchange_dir,
            deadline=deadline,
            waiting=opts.exchange_waiting,
        )
    if opts.mode == "cli":
        from active_memory.specialists.providers.cli_harness import (
            ClaudeCliSession,
            CodexCliSession,
            child_environment,
        )

        child_env, secrets = child_environment(lane, env)
        cls = ClaudeCliSession if lane.harness == "claude" else CodexCliSession
        return cls(
            specialist,
            lane.model,
            provider=f"{lane.harness}-cli",
            effort=lane.effort,
            deadline=deadline,
            env=child_env,
            secrets=secrets,
            cwd=opts.cwd,
            executable=opts.executable,
            investigate=opts.investigate,
        )
    if lane.provider == "anthropic":
        from active_memory.specialists.providers.anthropic_api import AnthropicSession

        key = require_key(lane, specialist, "anthropic", ("ANTHROPIC_API_KEY",), env)
        return AnthropicSession(
            specialist,
            lane.model,
            api_key=key,
            effort=lane.effort,
            deadline=deadline,
            base_url=opts.base_url or read_declared(lane, "ANTHROPIC_BASE_URL", env),
            retry=opts.retry,
        )
    from active_memory.specialists.providers.openai_api import (
        OPENAI_BASE_URL,
        OPENROUTER_BASE_URL,
        OpenAICompatibleSession,
    )

    if lane.provider == "openrouter":
        key = require_key(lane, specialist, "openrouter", ("OPENROUTER_API_KEY",), env)
        base_url, custom = opts.base_url or OPENROUTER_BASE_URL, False
    elif lane.provider == "openai":
        key = require_key(lane, specialist, "openai", ("OPENAI_API_KEY",), env)
        override = opts.base_url or read_declared(lane, "OPENAI_BASE_URL", env)
        base_url, custom = override or OPENAI_BASE_URL, override is not None
    else:
        raise UsageError(
            f"provider {lane.provider!r} has no adapter; allowed anthropic, openai, openrouter"
        )
    return OpenAICompatibleSession(
        specialist,
        lane.model,
        provider=lane.provider,
        api_key=key,
        base_url=base_url,
        effort=lane.effort,
        deadline=deadline,
        send_effort=(not custom) if opts.send_effort is None else opts.send_effort,
        retry=opts.retry,
    )
