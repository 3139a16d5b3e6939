"""The recall server's answer function: `recall.answer_hook` over a resident snapshot cache.

The server answers exactly as the command hook does (same parsing, engine and output,
docs/recall.md), with two differences: opened snapshots and their indexes stay in
memory (`SnapshotCache`), and the run's identity comes from the variables the hook
forwarded, never from the server's own environment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from active_memory.hooks.paths import TOKEN_ENV
from active_memory.hooks.server import BadHookCall, QuickThunk

_IDENTITY_PREFIX = "ACTIVE_MEMORY_"
_STORE_ENV = "ACTIVE_MEMORY_STORE"


class ResidentAnswer:
    """The server's answer function over one resident snapshot cache.

    Called as `answer(harness, payload, forwarded)` (`hooks.server.Answer`), it answers
    any call; the server runs it in a worker thread. `quick(...)` is for the event loop:
    the call's answer as a thunk when answering it cannot wait on anything (its run's
    generations are already open here, its session's lock is free right now), else
    None. A thread costs two cross-thread wake-ups, which on a busy machine weigh more
    than the whole answer (bench/README.md, "Recall server at 100k"). The one wait a
    quick call may have, the disk flush of a delivered card's delivery line, is handed
    back with the answer (`ledger.Commit`): the server runs it (in a worker thread while
    other calls are in flight) and sends the answer once it returned.
    """

    def __init__(self, server_env: Mapping[str, str], store: str | None = None) -> None:
        from active_memory.recall import SnapshotCache

        self.cache = SnapshotCache()
        base = {k: v for k, v in server_env.items() if not k.startswith(_IDENTITY_PREFIX)}
        default_store = store or server_env.get(_STORE_ENV)
        if default_store:
            base[_STORE_ENV] = default_store
        self._base = base

    def __call__(self, harness: str, payload: dict[str, Any], forwarded: dict[str, str]) -> Any:
        """The JSON the command hook would print for this call (blocking)."""
        from active_memory.recall import answer_hook
        from active_memory.recall.harness import PayloadError

        try:
            return answer_hook(harness, payload, self._env(forwarded), cache=self.cache)
        except PayloadError as exc:
            raise BadHookCall(str(exc)) from None

    def quick(
        self, harness: str, payload: dict[str, Any], forwarded: dict[str, str]
    ) -> QuickThunk | None:
        """The call's answer as a thunk to run on the event loop, or None (use a thread).

        The thunk returns the JSON and the commit still to run before it may leave
        (`hooks.server.QuickThunk`). Raises BadHookCall for a payload that is not a hook
        call; any other error (an invalid settings file, say) also returns None, so the
        thread path answers it and logs it as before.
        """
        from active_memory.recall import hook_output, parse_payload
        from active_memory.recall.engine import answer_with_commit
        from active_memory.recall.environment import resolve_context
        from active_memory.recall.harness import PayloadError

        try:
            call = parse_payload(harness, payload)
        except PayloadError as exc:
            raise BadHookCall(str(exc)) from None
        try:
            context = resolve_context(call, self._env(forwarded))
            if not self.cache.resident(context) or _lock_busy(context):
                return None
        except Exception:
            return None

        def answer() -> tuple[Mapping[str, Any], Callable[[], None] | None]:
            result, commit = answer_with_commit(call, context, cache=self.cache)
            try:
                document = hook_output(harness, result) or {}
            except BaseException:
                if commit is not None:
                    commit.abandon()  # the cards will not leave: unlock, ledger unchanged
                raise
            return document, commit

        return answer

    def _env(self, forwarded: dict[str, str]) -> dict[str, str]:
        env = dict(self._base)
        env.update(
            (name, value)
            for name, value in forwarded.items()
            if name.startswith(_IDENTITY_PREFIX) and name != TOKEN_ENV
        )
        return env


def _lock_busy(context: Any) -> bool:
    """True when another process holds the session's lock at this instant.

    Checked on the event loop before answering there: waiting for a lock (up to 5 s
    for a stopped holder) must happen in a thread, never on the loop. A holder that
    takes the lock between this check and the answer holds it for about a millisecond.
    """
    from active_memory.file_lock import is_locked
    from active_memory.recall.ledger import ledger_path, lock_path_for

    # A missing lock file is free (the answer makes it); Windows cannot probe: a thread.
    return is_locked(lock_path_for(ledger_path(context)))


def make_answer(server_env: Mapping[str, str], store: str | None = None) -> ResidentAnswer:
    """An answer function over one resident snapshot cache.

    `server_env` supplies what is the same for every caller (HOME, the zeroshot state
    dir). Its `ACTIVE_MEMORY_*` variables are dropped: a server started inside one run's
    environment must not lend that run's identity (run ID, node, budget) to calls from
    other sessions. The store to pin from is `store` (`serve --store`), else the
    server's ACTIVE_MEMORY_STORE, unless the call forwards its own.
    """
    return ResidentAnswer(server_env, store)
