"""The recall server's answer function: `recall.answer_hook` over a resident snapshot cache.

The server answers exactly as the command hook does (same parsing, engine and output,
docs/recall.md), with two differences: opened snapshots and their indexes stay in
memory (`SnapshotCache`), and the run's identity comes from the variables the hook
forwarded, never from the server's own environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from active_memory.hooks.paths import TOKEN_ENV
from active_memory.hooks.server import Answer, BadHookCall

_IDENTITY_PREFIX = "ACTIVE_MEMORY_"
_STORE_ENV = "ACTIVE_MEMORY_STORE"


def make_answer(server_env: Mapping[str, str], store: str | None = None) -> Answer:
    """An answer function over one resident snapshot cache.

    `server_env` supplies what is the same for every caller (HOME, the zeroshot state
    dir). Its `ACTIVE_MEMORY_*` variables are dropped: a server started inside one run's
    environment must not lend that run's identity (run ID, node, budget) to calls from
    other sessions. The store to pin from is `store` (`serve --store`), else the
    server's ACTIVE_MEMORY_STORE, unless the call forwards its own.
    """
    from active_memory.recall import SnapshotCache, answer_hook
    from active_memory.recall.harness import PayloadError

    cache = SnapshotCache()
    base = {k: v for k, v in server_env.items() if not k.startswith(_IDENTITY_PREFIX)}
    default_store = store or server_env.get(_STORE_ENV)
    if default_store:
        base[_STORE_ENV] = default_store

    def answer(harness: str, payload: dict[str, Any], forwarded: dict[str, str]) -> Any:
        env = dict(base)
        env.update(
            (name, value)
            for name, value in forwarded.items()
            if name.startswith(_IDENTITY_PREFIX) and name != TOKEN_ENV
        )
        try:
            return answer_hook(harness, payload, env, cache=cache)
        except PayloadError as exc:
            raise BadHookCall(str(exc)) from None

    return answer
