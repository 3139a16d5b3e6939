"""The worker's store connection, waited for while the store is away.

`reachable_store(worker)` opens the worker's store (creating or migrating it); when it
cannot be reached (a PostgreSQL server down or unreachable) it says so in one line,
`store unreachable (…), retrying in N s`, and tries again with the worker's growing wait
(`worker/pacing.py`), until it opens, the worker is stopped (SIGTERM: it yields None), or
the worker's `give_up` passes (the last `StoreUnavailable` is raised: exit 1 with that
line). A damaged or too-new store is not waited for.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio

from active_memory.errors import StoreMissing, StoreUnavailable
from active_memory.store import LessonStore, open_store
from active_memory.worker.engine import Worker


@contextlib.asynccontextmanager
async def reachable_store(
    worker: Worker, *, busy_timeout: float
) -> AsyncIterator[LessonStore | None]:
    """The worker's open store, or None when the worker was stopped while waiting."""
    async with contextlib.AsyncExitStack() as stack:
        while True:
            try:
                store = await stack.enter_async_context(
                    open_store(worker.location, busy_timeout=busy_timeout)
                )
                break
            except StoreMissing:
                raise
            except (StoreUnavailable, OSError) as exc:
                wait = worker.unreachable(exc)
                with anyio.move_on_after(wait):
                    await worker.stopped()
                if worker.stopping:
                    yield None
                    return
        if worker.reachable_again():
            worker.say("store reachable again")
        yield store
