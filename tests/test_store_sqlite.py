"""SQLite-file behaviour: header, WAL, refusing foreign or damaged files, online backup."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest
from conftest import AUTHOR, card, create

from active_memory.errors import (
    StoreCorrupt,
    StoreMissing,
    StoreTooNew,
    StoreUnavailable,
    UsageError,
)
from active_memory.lessons import (
    AdaptLesson,
)
from active_memory.store.sqlite import SqliteStore
from active_memory.store.sqlite_schema import APPLICATION_ID, SCHEMA_VERSION

SQLITE_ONLY = True  # conftest: the `store` fixture here is SQLite only


async def _adapt(store: SqliteStore, lesson_id: str, base: int, title: str) -> None:
    await store.publish(
        [AdaptLesson(id=lesson_id, base_revision=base, card=card(title), author=AUTHOR)]
    )


@pytest.mark.asyncio
async def test_new_store_is_wal_marked_and_versioned(store: SqliteStore, store_path: Path) -> None:
    raw = sqlite3.connect(store_path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert raw.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        assert raw.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    finally:
        raw.close()


@pytest.mark.asyncio
async def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"my notes, not a database\n" * 50)
    before = path.read_bytes()
    with pytest.raises(StoreCorrupt, match="not a SQLite database; nothing was changed"):
        await SqliteStore.open(path)
    assert path.read_bytes() == before


@pytest.mark.asyncio
async def test_another_applications_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite3"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE users (name TEXT)")
    raw.commit()
    raw.close()
    before = path.read_bytes()
    with pytest.raises(StoreCorrupt, match="not an Active Memory lesson store"):
        await SqliteStore.open(path)
    assert path.read_bytes() == before


@pytest.mark.asyncio
async def test_a_newer_schema_is_refused_untouched(store_path: Path) -> None:
    opened = await SqliteStore.open(store_path)
    await opened.aclose()
    raw = sqlite3.connect(store_path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.commit()
    raw.close()
    before = store_path.read_bytes()
    with pytest.raises(StoreTooNew, match="upgrade active-memory") as caught:
        await SqliteStore.open(store_path)
    assert caught.value.found == SCHEMA_VERSION + 1
    assert store_path.read_bytes() == before


@pytest.mark.asyncio
async def test_a_damaged_store_is_reported_as_corrupt(store_path: Path) -> None:
    opened = await SqliteStore.open(store_path)
    await opened.publish([create(f"lesson {n} " + "x" * 60) for n in range(400)])
    await opened.aclose()
    data = bytearray(store_path.read_bytes())
    page = 4096
    for offset in range(2 * page, len(data) - page, page):
        data[offset : offset + 64] = b"\xff" * 64  # smash every page header but the first
    store_path.write_bytes(bytes(data))
    with pytest.raises(StoreCorrupt, match=r"damaged|not an Active Memory"):
        damaged = await SqliteStore.open(store_path)
        try:
            await damaged.select()
        finally:
            await damaged.aclose()


@pytest.mark.asyncio
async def test_missing_store_is_not_created_when_asked_not_to(tmp_path: Path) -> None:
    path = tmp_path / "lessons.sqlite3"
    with pytest.raises(StoreMissing, match="no lesson store here yet"):
        await SqliteStore.open(path, create=False)
    assert not path.exists()
    # A store whose very folder is missing is no store not made yet: a typo, a mount gone.
    elsewhere = tmp_path / "none" / "lessons.sqlite3"
    with pytest.raises(StoreUnavailable, match="no such folder") as raised:
        await SqliteStore.open(elsewhere, create=False)
    assert not isinstance(raised.value, StoreMissing)
    assert not elsewhere.parent.exists()


@pytest.mark.asyncio
async def test_backup_is_a_consistent_usable_copy(store: SqliteStore, tmp_path: Path) -> None:
    await store.publish([create(f"lesson {n}") for n in range(50)])
    destination = tmp_path / "backup.sqlite3"
    await store.backup(destination)
    copy = await SqliteStore.open(destination, create=False)
    try:
        assert len(await copy.select()) == 50
        assert len(await copy.history("L-50")) == 1
    finally:
        await copy.aclose()


@pytest.mark.asyncio
async def test_backup_while_another_process_writes(store: SqliteStore, store_path: Path) -> None:
    await store.publish([create("before")])
    writer = await SqliteStore.open(store_path)
    destination = store_path.parent / "copy.sqlite3"
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(writer.publish, [create(f"during {n}") for n in range(300)])
            group.start_soon(store.backup, destination)
    finally:
        await writer.aclose()
    copy = await SqliteStore.open(destination, create=False)
    try:
        count = len(await copy.select())
        assert count in (1, 301)  # before or after the concurrent publish, never between
        assert await copy.integrity_check() == ["ok"]
    finally:
        await copy.aclose()


@pytest.mark.asyncio
async def test_backup_never_overwrites(store: SqliteStore, tmp_path: Path) -> None:
    destination = tmp_path / "exists.sqlite3"
    destination.write_text("precious")
    with pytest.raises(UsageError, match="already exists"):
        await store.backup(destination)
    assert destination.read_text() == "precious"
