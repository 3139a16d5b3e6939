"""The recall server's answer function: `recall.engine.answer_tool_call` with a resident cache.

The server answers exactly as the command hook does (same parsing, same engine, same
output), with two differences: opened snapshots and their indexes stay in memory
(`SnapshotCache`), and the run's identity comes from the variables the hook forwarded,
never from the server's own environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from active_memory.hooks.paths import TOKEN_ENV
from active_memory.hooks.server import Answer, BadHookCall

_IDENTITY_PREFIX = "ACTIVE_MEMORY_"


def make_answer(server_env: Mapping[str, str], store: str | None = None) -> Answer:
    """An answer function over one resident snapshot cache.

    `server_env` supplies what is the same for every caller (HOME, the zeroshot state
    dir); its `ACTIVE_MEMORY_*` variables are dropped, so a run's identity can only come
    from the call. `store` (`serve --store`) is the store to freeze from unless the
    call forwards ACTIVE_MEMORY_STORE.
    """
    from active_memory.recall.engine import answer_tool_call
    from active_memory.recall.environment import resolve_context
    from active_memory.recall.harness import PayloadError, hook_output, parse_payload
    from active_memory.recall.snapshot import SnapshotCache

    cache = SnapshotCache()
    base = {k: v for k, v in server_env.items() if not k.startswith(_IDENTITY_PREFIX)}
    if store:
        base["ACTIVE_MEMORY_STORE"] = store

    def answer(harness: str, payload: dict[str, Any], forwarded: dict[str, str]) -> dict[str, Any]:
        env = dict(base)
        env.update(
            (name, value)
            for name, value in forwarded.items()
            if name.startswith(_IDENTITY_PREFIX) and name != TOKEN_ENV
        )
        try:
            call = parse_payload(harness, payload)
        except PayloadError as exc:
            raise BadHookCall(str(exc)) from None
        result = answer_tool_call(call, resolve_context(call, env), cache=cache)
        return hook_output(harness, result) or {}

    return answer
