"""Opening a store by its location: a SQLite path or a `postgresql://` URL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from active_memory.errors import UsageError
from active_memory.store.location import is_postgres_url, mask_url
from active_memory.store.protocol import LessonStore


@asynccontextmanager
async def open_store(location: str, *, create: bool = True) -> AsyncIterator[LessonStore]:
    """Open the store at `location` (a SQLite path or a `postgresql://` URL), close it after.

    `create=False` refuses to create a missing store (read-only commands use it).
    """
    store: LessonStore
    if is_postgres_url(location):
        try:
            from active_memory.store.postgres import PostgresStore
        except ImportError:
            raise UsageError(
                f"{mask_url(location)}: PostgreSQL stores need the `postgres` extra "
                "(pip install 'active-memory[postgres]')"
            ) from None
        store = await PostgresStore.open(location, create=create)
    else:
        from active_memory.store.sqlite import SqliteStore

        store = await SqliteStore.open(location, create=create)
    try:
        yield store
    finally:
        await store.aclose()
