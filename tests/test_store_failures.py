"""The SQLite store's failures name their real cause and path (issue 17 item 11):
a full disk, a read-only store, concurrent backups to one new path."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from orchestrator_support import PERSON, repo_lessons, seed, snapshot

from active_memory.errors import StoreUnavailable, UsageError
from active_memory.lessons import Lesson
from active_memory.store import sqlite as sqlite_module
from active_memory.store.sqlite import SqliteStore


@pytest.mark.asyncio
async def test_a_full_disk_names_the_cause_not_the_rollback(tmp_path: Path) -> None:
    async with await SqliteStore.open(tmp_path / "lessons.sqlite3") as store:
        await seed(store, repo_lessons(2))
        before = await snapshot(store)
        async with store.dialect.reading(snapshot=False) as tx:
            pages = await tx.fetchval("PRAGMA page_count")
            # SQLite answers SQLITE_FULL once the file would grow past max_page_count.
            await tx.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(StoreUnavailable) as caught:
            await store.import_lessons(repo_lessons(3000, start=10, pad=500), PERSON)
        message = str(caught.value)
        assert "disk is full" in message and "no transaction" not in message
        assert message.startswith(store.location)
        async with store.dialect.reading(snapshot=False) as tx:
            await tx.execute("PRAGMA max_page_count = 1073741823")
        assert await snapshot(store) == before


@pytest.mark.asyncio
async def test_a_read_only_store_can_be_listed_and_refuses_writes_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lessons.sqlite3"
    async with await SqliteStore.open(path) as store:
        await seed(store, repo_lessons(2))
        before = await snapshot(store)
    # Root ignores file modes, so the permission check itself answers "read-only" here;
    # everything after it (a `mode=ro` connection, no WAL switch) is the real path.
    monkeypatch.setattr(sqlite_module, "_writable", lambda _path: False)
    async with await SqliteStore.open(path, create=False) as store:
        assert await snapshot(store) == before
        with pytest.raises(StoreUnavailable, match="read-only"):
            await seed(store, repo_lessons(1, start=5))


@pytest.mark.asyncio
async def test_concurrent_backups_to_one_new_path_one_wins_one_is_refused(
    tmp_path: Path,
) -> None:
    async with await SqliteStore.open(tmp_path / "lessons.sqlite3") as store:
        await seed(store, repo_lessons(200, pad=500))
        destination = tmp_path / "backup.sqlite3"
        outcomes: list[str] = []

        async def one() -> None:
            try:
                await store.backup(destination)
                outcomes.append("ok")
            except UsageError as exc:
                outcomes.append(str(exc))

        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)
    assert sorted(outcomes)[0].endswith("already exists; choose a new backup path")
    assert sorted(outcomes)[1] == "ok"
    async with await SqliteStore.open(destination, create=False) as copy:
        assert len(await snapshot(copy)) == 200
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


@pytest.mark.asyncio
async def test_a_failed_backup_leaves_no_file_at_the_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with await SqliteStore.open(tmp_path / "lessons.sqlite3") as store:
        await seed(store, repo_lessons(3))

        def refuse(_a: object, _b: object) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "replace", refuse)
        destination = tmp_path / "backup.sqlite3"
        with pytest.raises(StoreUnavailable) as caught:
            await store.backup(destination)
    assert str(caught.value).startswith(str(destination))
    assert "No space left on device" in str(caught.value)
    assert list(tmp_path.glob("*backup*")) == []


@pytest.mark.asyncio
async def test_a_read_only_wal_store_whose_shm_cannot_be_opened_is_still_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lessons.sqlite3"
    async with await SqliteStore.open(path) as store:
        await seed(store, repo_lessons(3))
        before = await snapshot(store)
    # A clean close removed -wal and -shm; a folder in the -shm's place makes SQLite
    # fail to open it, as a read-only folder would.
    (tmp_path / "lessons.sqlite3-shm").mkdir()
    monkeypatch.setattr(sqlite_module, "_writable", lambda _path: False)
    async with await SqliteStore.open(path, create=False) as store:
        assert await snapshot(store) == before


@pytest.mark.asyncio
async def test_a_streamed_import_is_written_in_chunks_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.store import planning

    monkeypatch.setattr(planning, "IMPORT_CHUNK", 7)
    consumed: list[str] = []

    def stream() -> Iterator[Lesson]:
        for lesson in repo_lessons(30):
            consumed.append(lesson.id)
            yield lesson

    async with await SqliteStore.open(tmp_path / "lessons.sqlite3") as store:
        report = await store.import_lessons(stream(), PERSON)
        assert len(report.added) == 30 and len(consumed) == 30
        assert len(await snapshot(store)) == 30


@pytest.mark.asyncio
@pytest.mark.parametrize("failure", ["duplicate", "raises"])
async def test_a_streamed_import_that_fails_in_a_later_chunk_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    from active_memory.errors import InvalidMutation, InvalidRecord
    from active_memory.store import planning

    monkeypatch.setattr(planning, "IMPORT_CHUNK", 5)

    def stream() -> Iterator[Lesson]:
        lessons = repo_lessons(12)
        yield from lessons
        if failure == "duplicate":
            yield lessons[1]  # L-2 again, two chunks later
        else:
            raise InvalidRecord("in.jsonl", "changed while it was imported", 13)

    async with await SqliteStore.open(tmp_path / "lessons.sqlite3") as store:
        await seed(store, repo_lessons(2, start=50))
        before = await snapshot(store)
        expected = InvalidMutation if failure == "duplicate" else InvalidRecord
        with pytest.raises(expected):
            await store.import_lessons(stream(), PERSON)
        assert await snapshot(store) == before
