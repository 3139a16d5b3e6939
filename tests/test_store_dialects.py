"""The store's two dialects (store/dialect.py): SQL written once with `?` placeholders,
the phrases that differ per backend, the one lock order every writer follows, and the
backends' errors translated into the store's."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import AUTHOR, Backend, card, create

from active_memory.errors import StoreBusy, StoreCorrupt, StoreUnavailable
from active_memory.lessons import AdaptLesson, Lesson
from active_memory.store.dialect import Row, Tx
from active_memory.store.lesson_store import LessonStore
from active_memory.store.sqlite import SqliteStore


def test_placeholders_are_numbered_outside_quoted_literals_only() -> None:
    from active_memory.store.postgres import numbered

    assert numbered("SELECT ?, ? FROM t WHERE a = ?") == "SELECT $1, $2 FROM t WHERE a = $3"
    assert numbered("SELECT '?', ? WHERE b = 'it''s ?' AND c = ?") == (
        "SELECT '?', $1 WHERE b = 'it''s ?' AND c = $2"
    )
    assert numbered("SELECT 1") == "SELECT 1"


@pytest.mark.asyncio
async def test_null_safe_comparison_means_the_same_on_both_backends(store: LessonStore) -> None:
    differs = store.dialect.distinct
    async with store.dialect.reading() as tx:
        row = await tx.fetchone(
            f"SELECT NULL {differs} 'x', 'x' {differs} 'x', "
            f"CAST(NULL AS TEXT) {differs} CAST(NULL AS TEXT), 'x' {differs} 'y'"
        )
    assert row is not None
    assert [bool(value) for value in row] == [True, False, False, True]


@pytest.mark.asyncio
async def test_membership_and_greatest_mean_the_same_on_both_backends(
    store: LessonStore,
) -> None:
    d = store.dialect
    table = "(SELECT 'a' AS v UNION ALL SELECT 'b' UNION ALL SELECT 'c') AS t"
    async with d.reading(snapshot=False) as tx:
        counts = []
        for values in (["a", "c"], [], ["z"], ["b", "b"]):
            where, param = d.among("v", values)
            counts.append(await tx.fetchval(f"SELECT count(*) FROM {table} WHERE {where}", param))
        larger = await tx.fetchval(f"SELECT {d.greatest('CAST(3 AS BIGINT)', '?')}", 5)
        smaller = await tx.fetchval(f"SELECT {d.greatest('CAST(7 AS BIGINT)', '?')}", 5)
    assert counts == [2, 0, 0, 1]
    assert (int(larger), int(smaller)) == (5, 7)


class RecordingTx(Tx):
    """A transaction that notes every statement before running it."""

    def __init__(self, inner: Tx, log: list[str]) -> None:
        self.inner = inner
        self.log = log

    async def execute(self, sql: str, *params: Any) -> int:
        self.log.append(sql)
        return await self.inner.execute(sql, *params)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.log.append(sql)
        await self.inner.executemany(sql, rows)

    async def fetch(self, sql: str, *params: Any) -> list[Row]:
        self.log.append(sql)
        return await self.inner.fetch(sql, *params)

    async def fetchone(self, sql: str, *params: Any) -> Row | None:
        self.log.append(sql)
        return await self.inner.fetchone(sql, *params)

    async def fetchval(self, sql: str, *params: Any) -> Any:
        self.log.append(sql)
        return await self.inner.fetchval(sql, *params)


def record_writes(store: LessonStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements of every write transaction of `store` from now on."""
    log: list[str] = []
    real = store.dialect.write

    async def recording(body: Callable[[Tx], Awaitable[Any]]) -> Any:
        return await real(lambda tx: body(RecordingTx(tx, log)))

    monkeypatch.setattr(store.dialect, "write", recording)
    return log


def first(log: list[str], *words: str) -> int:
    """The position of the first statement that holds every one of `words`."""
    return next(i for i, sql in enumerate(log) if all(w in sql for w in words))


@pytest.mark.asyncio
async def test_every_writer_takes_the_counter_row_before_the_lesson_rows(
    store: LessonStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.publish([create("one")])
    log = record_writes(store, monkeypatch)
    adapt = AdaptLesson(id="L-1", base_revision=1, card=card("adapted"), author=AUTHOR)
    await store.publish([adapt, create("two")])
    assert first(log, "next_lesson_number") < first(log, "FROM lessons")
    log.clear()
    lesson = await store.get("L-1")
    assert isinstance(lesson, Lesson)
    await store.import_lessons([lesson.model_copy(update={"revision": 5})], AUTHOR)
    assert first(log, "next_lesson_number") < first(log, "FROM lessons")
    assert store.dialect.lock_rows in log[first(log, "FROM lessons")]


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_on_postgres_a_writer_waiting_for_the_counter_holds_no_lesson_row(
    postgres_url: str,
) -> None:
    import asyncpg

    from active_memory.store.postgres import PostgresStore

    holder = await asyncpg.connect(postgres_url)
    probe = await asyncpg.connect(postgres_url)
    try:
        async with await PostgresStore.open(postgres_url, busy_timeout=10) as store:
            await store.publish([create("one")])
            adapt = AdaptLesson(id="L-1", base_revision=1, card=card("moved"), author=AUTHOR)
            receipts = []

            async def publish() -> None:
                receipts.append(await store.publish([adapt, create("two")]))

            await holder.execute("BEGIN")
            await holder.execute(
                "SELECT value FROM store_meta WHERE key = 'next_lesson_number' FOR UPDATE"
            )
            async with anyio.create_task_group() as group:
                group.start_soon(publish)
                await anyio.sleep(0.5)  # the publish now waits for the counter row ...
                await probe.execute("BEGIN")  # ... holding no lesson row: L-1 is free
                await probe.execute("SET LOCAL lock_timeout = '200ms'")
                await probe.execute("SELECT 1 FROM lessons WHERE id = 'L-1' FOR UPDATE")
                await probe.execute("ROLLBACK")
                assert receipts == []  # it was still waiting
                await holder.execute("ROLLBACK")
            assert receipts[0].adapted == [("L-1", 2)] and receipts[0].created == [("L-2", 1)]
    finally:
        await holder.close()
        await probe.close()


def _errors(backend: str) -> list[tuple[BaseException, type[Exception]]]:
    if backend == "sqlite":
        return [
            (sqlite3.OperationalError("database is locked"), StoreBusy),
            (sqlite3.DatabaseError("database disk image is malformed"), StoreCorrupt),
            (sqlite3.OperationalError("attempt to write a readonly database"), StoreUnavailable),
        ]
    import asyncpg

    return [
        (asyncpg.LockNotAvailableError("lock timeout"), StoreBusy),
        (asyncpg.InsufficientPrivilegeError("permission denied"), StoreUnavailable),
        (asyncpg.PostgresConnectionError("connection lost"), StoreUnavailable),
    ]


@pytest.mark.asyncio
async def test_each_backend_s_errors_come_out_as_the_store_s(
    store: LessonStore, backend: Backend
) -> None:
    for raised, expected in _errors(backend.name):
        with pytest.raises(expected) as caught, store.dialect.translated():
            raise raised
        assert store.location in str(caught.value)


@pytest.mark.asyncio
async def test_a_write_that_fails_halfway_leaves_nothing_on_either_backend(
    store: LessonStore,
) -> None:
    class Broken(Exception):
        pass

    async def body(tx: Tx) -> None:
        await tx.execute("INSERT INTO store_meta (key, value) VALUES (?, ?)", "mark:half", 1)
        raise Broken

    with pytest.raises(Broken):
        await store.dialect.write(body)
    assert await store.publish_mark("half") is None


@pytest.mark.asyncio
async def test_an_in_memory_store_works_and_writes_no_file(tmp_path: Path) -> None:
    where = tmp_path / "never" / "lessons.sqlite3"
    async with await SqliteStore.in_memory(str(where)) as store:
        assert store.location == str(where)
        assert await store.select() == [] and await store.version() == 0
        receipt = await store.publish([create("only in memory")])
        assert receipt.created == [("L-1", 1)]
        assert [lesson.id for lesson in await store.select()] == ["L-1"]
    assert not where.parent.exists()
