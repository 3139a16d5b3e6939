"""Opening a store by its location: a SQLite path or a `postgresql://` URL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from active_memory.errors import UsageError
from active_memory.store.location import is_postgres_url, mask_url
from active_memory.store.protocol import LessonStore
from active_memory.store.queue import PostmortemQueue


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
        before = await _version(store)
        yield store
        if before is not None and await _version(store) not in (None, before):
            await _refresh_generations(location)
    finally:
        await store.aclose()


async def _version(store: LessonStore) -> int | None:
    try:
        return await store.version()
    except Exception:  # a store that cannot say: recall catches up at its next pin
        return None


async def _refresh_generations(location: str) -> None:
    """The store keeps the recall index itself: after a session that changed lessons,
    the generations this machine recalls are brought up to date (docs/recall.md). Best
    effort: a failure is logged, and recall catches up at its next pin."""
    import anyio

    from active_memory.recall.snapshot import refresh_after_write

    try:
        await anyio.to_thread.run_sync(refresh_after_write, location)
    except Exception as exc:
        import logging

        logging.getLogger(__name__).warning("refreshing recall generations failed: %s", exc)


def queue_of(store: LessonStore) -> PostmortemQueue:
    """The postmortem queue kept in `store` (every backend keeps one; docs/queue.md)."""
    queue: PostmortemQueue | None = getattr(store, "queue", None)
    if queue is None:
        raise UsageError(f"{store.location}: this store keeps no postmortem queue")
    return queue
