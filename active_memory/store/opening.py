"""Opening a store by its location: a SQLite path or a `postgresql://` URL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from active_memory.errors import UsageError
from active_memory.store.announce import announce
from active_memory.store.lesson_store import LessonStore
from active_memory.store.location import is_postgres_url, mask_url


@asynccontextmanager
async def open_store(
    location: str, *, create: bool = True, busy_timeout: float | None = None
) -> AsyncIterator[LessonStore]:
    """Open the store at `location` (a SQLite path or a `postgresql://` URL), close it after.

    `create=False` refuses to create a missing store (read-only commands use it);
    `busy_timeout` replaces the backend's default wait for a write lock. A session that
    changed the lessons ends by announcing it (`store/announce.py`).
    """
    bound = {} if busy_timeout is None else {"busy_timeout": busy_timeout}
    store: LessonStore
    if is_postgres_url(location):
        try:
            from active_memory.store.postgres import PostgresStore
        except ImportError:
            from active_memory.install_source import extra_command

            raise UsageError(
                f"{mask_url(location)}: PostgreSQL stores need the `postgres` extra "
                f"({extra_command('postgres')})"
            ) from None
        store = await PostgresStore.open(location, create=create, **bound)
    else:
        from active_memory.store.sqlite import SqliteStore

        store = await SqliteStore.open(location, create=create, **bound)
    try:
        before = await _version(store)
        yield store
        if before is not None and await _version(store) not in (None, before):
            await announce(location)
    finally:
        await store.aclose()


async def _version(store: LessonStore) -> int | None:
    try:
        return await store.version()
    except Exception:  # a store that cannot say: its listeners catch up later
        return None
