"""The lesson store: the `LessonStore` protocol, its backends, and where a store lives.

The protocol's names (pydantic models) load on first use: the session-end hook imports
`active_memory.store.enqueue` and must not pay for them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from active_memory.errors import UsageError
from active_memory.store.location import (
    default_store_path as default_store_path,
)
from active_memory.store.location import (
    is_postgres_url,
    mask_url,
)
from active_memory.store.location import (
    resolve_store_location as resolve_store_location,
)
from active_memory.store.queue import PostmortemQueue as PostmortemQueue
from active_memory.store.queue import QueueEntry as QueueEntry
from active_memory.store.queue import SessionEnd as SessionEnd

if TYPE_CHECKING:
    from active_memory.store.protocol import ImportReport as ImportReport
    from active_memory.store.protocol import LessonQuery as LessonQuery
    from active_memory.store.protocol import LessonStore as LessonStore
    from active_memory.store.protocol import StoredLesson as StoredLesson

_PROTOCOL_NAMES = frozenset({"ImportReport", "LessonQuery", "LessonStore", "StoredLesson"})


def __getattr__(name: str) -> Any:
    if name in _PROTOCOL_NAMES:
        from active_memory.store import protocol

        return getattr(protocol, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@asynccontextmanager
async def open_store(
    location: str, *, create: bool = True, busy_timeout: float | None = None
) -> AsyncIterator[LessonStore]:
    """Open the store at `location` (a SQLite path or a `postgresql://` URL), close it after.

    `create=False` refuses to create a missing store (read-only commands use it);
    `busy_timeout` replaces the backend's default wait for a write lock.
    """
    bound = {} if busy_timeout is None else {"busy_timeout": busy_timeout}
    store: LessonStore
    if is_postgres_url(location):
        try:
            from active_memory.store.postgres import PostgresStore
        except ImportError:
            raise UsageError(
                f"{mask_url(location)}: PostgreSQL stores need the `postgres` extra "
                "(pip install 'active-memory[postgres]')"
            ) from None
        store = await PostgresStore.open(location, create=create, **bound)
    else:
        from active_memory.store.sqlite import SqliteStore

        store = await SqliteStore.open(location, create=create, **bound)
    try:
        yield store
    finally:
        await store.aclose()


def queue_of(store: LessonStore) -> PostmortemQueue:
    """The postmortem queue kept in `store` (every backend keeps one)."""
    queue: PostmortemQueue | None = getattr(store, "queue", None)
    if queue is None:
        raise UsageError(f"{store.location}: this store keeps no postmortem queue")
    return queue
