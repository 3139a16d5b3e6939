"""PostgreSQL-only behaviour: connecting, masking credentials, schema identity, backup."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import pytest
from conftest import AUTHOR, Backend, card, create, postgres_server_url

from active_memory.errors import (
    StoreBusy,
    StoreCorrupt,
    StoreMissing,
    StoreTooNew,
    StoreUnavailable,
    UsageError,
)
from active_memory.lessons import AdaptLesson
from active_memory.store import open_store
from active_memory.store.location import mask_url
from active_memory.store.postgres import PostgresStore
from active_memory.store.postgres_schema import SCHEMA_VERSION, VERSION_TABLE


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _with_credentials(url: str, user: str, password: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{host}"))


def test_mask_url_hides_every_password_form() -> None:
    assert (
        mask_url("postgresql://am:s3cret@db:5432/lessons") == "postgresql://am:***@db:5432/lessons"
    )
    assert mask_url("postgres://am:p@ss@db/lessons") == "postgres://am:***@db/lessons"
    assert (
        mask_url("postgresql://am@db/lessons?sslmode=require&password=s3cret")
        == "postgresql://am@db/lessons?sslmode=require&password=***"
    )
    assert mask_url("postgresql://am@db/lessons") == "postgresql://am@db/lessons"
    assert mask_url("/home/me/lessons.sqlite3") == "/home/me/lessons.sqlite3"


@pytest.mark.asyncio
async def test_a_refused_connection_is_unavailable_and_never_shows_the_password() -> None:
    url = f"postgresql://am:s3cret-pw@127.0.0.1:{_closed_port()}/lessons"
    with pytest.raises(StoreUnavailable, match="cannot reach the PostgreSQL server") as caught:
        await PostgresStore.open(url, connect_timeout=5)
    assert caught.value.exit_code == 2
    assert "s3cret-pw" not in str(caught.value)
    assert caught.value.location == f"postgresql://am:***@127.0.0.1:{urlsplit(url).port}/lessons"


def test_the_cli_exits_2_with_a_masked_url_when_the_server_is_down(tmp_path: Path) -> None:
    url = f"postgresql://am:s3cret-pw@127.0.0.1:{_closed_port()}/lessons"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from active_memory.cli import run; run()",
            "lessons",
            "list",
            "--store",
            url,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "ZEROSHOT_STATE_DIR": str(tmp_path)},
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "s3cret-pw" not in result.stdout + result.stderr
    assert "postgresql://am:***@127.0.0.1" in result.stderr


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_wrong_password_is_refused_clearly(postgres_url: str) -> None:
    user = urlsplit(postgres_url).username or "postgres"
    wrong = _with_credentials(postgres_url, user, "not-the-password")
    with pytest.raises(StoreUnavailable, match="refused the login") as caught:
        await PostgresStore.open(wrong)
    assert "not-the-password" not in str(caught.value)
    assert f"{user}:***@" in str(caught.value)


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_missing_database_is_unavailable(postgres_url: str) -> None:
    missing = urlunsplit(urlsplit(postgres_url)._replace(path="/am_no_such_database"))
    with pytest.raises(StoreUnavailable, match="does not exist"):
        await PostgresStore.open(missing)


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_role_without_create_permission_is_told_what_it_needs(postgres_url: str) -> None:
    role = f"am_reader_{uuid.uuid4().hex[:8]}"
    admin = Backend("postgres", postgres_url)
    await admin.sql(f"CREATE ROLE {role} LOGIN PASSWORD 'reader-pw'")
    try:
        # PostgreSQL 15+ grants no CREATE on `public` to other roles; older ones do.
        await admin.sql(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {role}")
        reader = _with_credentials(postgres_url, role, "reader-pw")
        with pytest.raises(StoreUnavailable, match="missing permission") as caught:
            await PostgresStore.open(reader)
        assert "reader-pw" not in str(caught.value)
    finally:
        await admin.sql(f"DROP ROLE {role}")


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_open_store_selects_postgres_and_reports_the_masked_location(
    postgres_url: str,
) -> None:
    async with open_store(postgres_url) as store:
        assert isinstance(store, PostgresStore)
        assert store.location == mask_url(postgres_url)
        password = urlsplit(postgres_url).password
        if password:
            assert password not in store.location


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_backup_is_refused_with_pg_dump_advice(postgres_url: str, tmp_path: Path) -> None:
    async with open_store(postgres_url) as store:
        with pytest.raises(UsageError, match="pg_dump") as caught:
            await store.backup(tmp_path / "copy.sqlite3")
    assert caught.value.exit_code == 2
    assert not (tmp_path / "copy.sqlite3").exists()


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_concurrent_openers_of_an_empty_database_migrate_it_once(postgres_url: str) -> None:
    stores: list[PostgresStore] = []

    async def open_one() -> None:
        stores.append(await PostgresStore.open(postgres_url))

    try:
        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(open_one)
    finally:
        for store in stores:
            await store.aclose()
    assert len(stores) == 8
    backend = Backend("postgres", postgres_url)
    assert await backend.sql(f"SELECT version FROM {VERSION_TABLE}") == [(SCHEMA_VERSION,)]
    async with await PostgresStore.open(postgres_url) as store:
        assert (await store.publish([create()])).created == [("L-1", 1)]


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_read_only_open_of_an_empty_database_creates_nothing(postgres_url: str) -> None:
    with pytest.raises(StoreMissing, match="no lesson store here yet"):
        await PostgresStore.open(postgres_url, create=False)
    backend = Backend("postgres", postgres_url)
    assert await backend.sql(f"SELECT to_regclass('{VERSION_TABLE}')") == [(None,)]


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    await (await PostgresStore.open(postgres_url)).aclose()
    backend = Backend("postgres", postgres_url)
    await backend.sql(f"UPDATE {VERSION_TABLE} SET version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreTooNew, match="upgrade active-memory") as caught:
        await PostgresStore.open(postgres_url)
    assert caught.value.found == SCHEMA_VERSION + 1


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_database_with_foreign_tables_of_our_names_is_refused_untouched(
    postgres_url: str,
) -> None:
    backend = Backend("postgres", postgres_url)
    await backend.sql("CREATE TABLE lessons (name TEXT)")
    with pytest.raises(StoreCorrupt, match="not an Active Memory lesson store"):
        await PostgresStore.open(postgres_url)
    assert await backend.sql(f"SELECT to_regclass('{VERSION_TABLE}')") == [(None,)]


def test_ci_fails_rather_than_skips_without_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACTIVE_MEMORY_TEST_POSTGRES", raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the PostgreSQL tests"):
        postgres_server_url()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="no PostgreSQL server"):
        postgres_server_url()


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_lock_held_past_the_busy_timeout_is_store_busy_and_writes_nothing(
    postgres_url: str,
) -> None:
    import asyncpg

    async with await PostgresStore.open(postgres_url) as store:
        await store.publish([create("one"), create("two")])
    holder = await asyncpg.connect(postgres_url)
    try:
        async with holder.transaction():
            await holder.execute("SELECT 1 FROM lessons WHERE id = 'L-1' FOR UPDATE")
            async with await PostgresStore.open(postgres_url, busy_timeout=0.3) as store:
                with pytest.raises(StoreBusy, match="nothing was written"):
                    await store.publish(
                        [
                            AdaptLesson(
                                id="L-2", base_revision=1, card=card("moved"), author=AUTHOR
                            ),
                            AdaptLesson(
                                id="L-1", base_revision=1, card=card("blocked"), author=AUTHOR
                            ),
                        ]
                    )
    finally:
        await holder.close()
    async with await PostgresStore.open(postgres_url) as store:
        assert [lesson.revision for lesson in await store.select()] == [1, 1]


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_held_lock_never_keeps_a_writer_past_its_caller_s_deadline(
    postgres_url: str,
) -> None:
    import time

    import anyio
    import asyncpg

    async with await PostgresStore.open(postgres_url) as store:
        await store.publish([create("one")])
    holder = await asyncpg.connect(postgres_url)
    try:
        async with holder.transaction():
            await holder.execute("SELECT 1 FROM lessons WHERE id = 'L-1' FOR UPDATE")
            # The busy timeout (30 s) is far away; the caller's deadline is not.
            async with await PostgresStore.open(postgres_url) as store:
                started = time.monotonic()
                with anyio.move_on_after(0.4), pytest.raises(StoreBusy):
                    await store.publish(
                        [AdaptLesson(id="L-1", base_revision=1, card=card("x"), author=AUTHOR)]
                    )
                assert time.monotonic() - started < 5
    finally:
        await holder.close()
    async with await PostgresStore.open(postgres_url) as store:
        assert [lesson.revision for lesson in await store.select()] == [1]


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_deadlock_reported_by_the_server_is_retried_inside_the_store(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncpg

    from active_memory.store import writing

    original = writing.current_rows
    failures = {"left": 2}

    async def deadlocked_twice(tx: Any, dialect: Any, ids: Any) -> Any:
        if failures["left"]:
            failures["left"] -= 1
            raise asyncpg.DeadlockDetectedError("deadlock detected")
        return await original(tx, dialect, ids)

    monkeypatch.setattr(writing, "current_rows", deadlocked_twice)
    async with await PostgresStore.open(postgres_url) as store:
        receipt = await store.publish([create("first")])
        assert receipt.created == [("L-1", 1)]  # the IDs of failed attempts were rolled back
        assert failures["left"] == 0
        failures["left"] = 100
        with pytest.raises(StoreBusy):
            await store.publish([create("never")])
        assert await store.get("L-2") is None


@pytest.mark.postgres
def test_the_backup_command_on_postgres_exits_2_pointing_to_pg_dump(
    postgres_url: str, tmp_path: Path
) -> None:
    async def create_store() -> None:
        await (await PostgresStore.open(postgres_url)).aclose()

    anyio.run(create_store, backend="asyncio")
    result = subprocess.run(
        [sys.executable, "-c", "from active_memory.cli import run; run()", "backup",
         str(tmp_path / "copy"), "--store", postgres_url],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "pg_dump" in result.stderr and mask_url(postgres_url) in result.stderr
    password = urlsplit(postgres_url).password
    assert not password or password not in result.stdout + result.stderr
    assert not (tmp_path / "copy").exists()
