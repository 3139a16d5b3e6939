"""Shared fixtures: a fresh lesson store per test on each backend, and lesson builders.

A test that asks for `store` runs once per backend: SQLite, and PostgreSQL (marked
`postgres`, a fresh database per test on the server named by ACTIVE_MEMORY_TEST_POSTGRES).
A test that also asks for `store_path`, or is in a module with `SQLITE_ONLY = True`, is
about the SQLite file and runs on SQLite only.
Without that variable the PostgreSQL runs skip locally; in CI (CI=true) they fail.
In CI no test may skip at all: `pytest_runtest_makereport` turns any skip into a failure
that quotes the skip's reason (a missing PostgreSQL server, a missing harness binary).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import pytest
import pytest_asyncio
from hermetic_home import Isolation, isolate

from active_memory.lessons import (
    Associations,
    Author,
    Card,
    CreateLesson,
    GraphScope,
    RepositoryScope,
)
from active_memory.store import LessonStore
from active_memory.store.sqlite import SqliteStore

REPO_ROOT = Path(__file__).resolve().parent.parent
# Real zeroshot fixtures, copied into the project (source and commit in their README), so
# that a clone with nothing beside it runs every test.
ZEROSHOT_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "zeroshot"

IN_CI = os.environ.get("CI") == "true"

_isolation: Isolation | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Before any test module is imported: HOME is a folder of the session's own
    (tests/hermetic_home.py), so no default path reaches the user's real state."""
    global _isolation
    _isolation = isolate()


def pytest_unconfigure(config: pytest.Config) -> None:
    global _isolation
    if _isolation is not None:
        _isolation.restore()
        _isolation = None


@pytest.fixture(autouse=True)
def _real_state_untouched() -> Iterator[None]:
    """Fails the test after which the user's real state folder (or a harness's config
    folder in the real HOME) differs from what it was when the session started."""
    yield
    if _isolation is None:
        return
    changes = _isolation.real.changes()
    if changes:
        _isolation.real.accept()  # report each change once, on the test that made it
        shown = "; ".join(changes[:5]) + (
            f"; and {len(changes) - 5} more" if len(changes) > 5 else ""
        )
        pytest.fail(f"the test wrote outside its temporary folders, into the real HOME: {shown}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """In CI a skipped test is a failed one: every test must run there."""
    report: pytest.TestReport = yield
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (CI=true), where every test must run: {reason}"
    return report


NAMESPACE = "repo:github.com/acme/api"
GRAPH_HASH = "7d5d" + "0" * 60
AUTHOR = Author(specialist="repository_discovery", run_id="run-1", model="claude-sonnet-5")


def card(title: str = "Regenerate the client through make api-client", **extra: object) -> Card:
    """A valid card; override any field."""
    fields: dict[str, object] = {
        "title": title,
        "recommendation": "After editing api/schema.json run `make api-client`.",
        "associations": Associations(files=["api/schema.json"]),
    }
    fields.update(extra)
    return Card.model_validate(fields)


def create(
    title: str = "Regenerate the client through make api-client",
    scope: RepositoryScope | GraphScope | None = None,
) -> CreateLesson:
    """A create mutation in the default repository scope."""
    return CreateLesson(
        scope=scope or RepositoryScope(repository=NAMESPACE), card=card(title), author=AUTHOR
    )


POSTGRES_ENV = "ACTIVE_MEMORY_TEST_POSTGRES"
BACKENDS = ("sqlite", "postgres")


def postgres_server_url() -> str:
    """The test server's URL; skip (locally) or fail (in CI) when none is configured."""
    url = os.environ.get(POSTGRES_ENV, "")
    if url:
        return url
    if os.environ.get("CI") == "true":
        pytest.fail(
            f"{POSTGRES_ENV} is not set: CI must run the PostgreSQL tests (.ci/run starts "
            "a server)",
            pytrace=False,
        )
    pytest.skip(f"no PostgreSQL server: set {POSTGRES_ENV} to a postgresql:// URL to run")


def with_database(url: str, database: str) -> str:
    """`url` pointing at another database of the same server."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


async def _admin(server: str, statement: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(server)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """The URL of a new, empty database, dropped after the test."""
    server = postgres_server_url()
    name = f"am_test_{uuid.uuid4().hex[:16]}"
    anyio.run(_admin, server, f'CREATE DATABASE "{name}"', backend="asyncio")
    try:
        yield with_database(server, name)
    finally:
        anyio.run(_admin, server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
                  backend="asyncio")  # fmt: skip


@dataclass(frozen=True)
class Backend:
    """One backend under test: its name and the real (unmasked) location of its store."""

    name: str
    location: str

    async def open(self, *, create: bool = True) -> LessonStore:
        """Open another handle on the same store (as a second process would)."""
        if self.name == "sqlite":
            return await SqliteStore.open(self.location, create=create)
        from active_memory.store.postgres import PostgresStore

        return await PostgresStore.open(self.location, create=create)

    async def sql(self, statement: str) -> list[tuple[Any, ...]]:
        """Run one raw statement on the store's database, outside the store's code."""
        if self.name == "sqlite":
            import sqlite3

            raw = sqlite3.connect(self.location, isolation_level=None)
            try:
                return [tuple(row) for row in raw.execute(statement).fetchall()]
            finally:
                raw.close()
        import asyncpg

        conn = await asyncpg.connect(self.location)
        try:
            return [tuple(row) for row in await conn.fetch(statement)]
        finally:
            await conn.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that uses a `backend` (or `store`) on each backend it applies to."""
    if "backend" not in metafunc.fixturenames:
        return
    # A test of the SQLite file (it names `store_path`, or its module says so) is SQLite's.
    sqlite_only = "store_path" in metafunc.fixturenames or getattr(
        metafunc.module, "SQLITE_ONLY", False
    )
    metafunc.parametrize(
        "backend",
        [
            pytest.param(name, marks=[pytest.mark.postgres] if name == "postgres" else [])
            for name in BACKENDS
            if not (sqlite_only and name == "postgres")
        ],
        indirect=True,
    )


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "lessons.sqlite3"


@pytest.fixture
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """The backend this run of the test is for, with a fresh store location."""
    if request.param == "sqlite":
        return Backend("sqlite", str(request.getfixturevalue("store_path")))
    return Backend("postgres", request.getfixturevalue("postgres_url"))


@pytest_asyncio.fixture
async def store(backend: Backend) -> AsyncIterator[Any]:
    """A fresh, open store on the backend under test (typed Any: tests use both APIs)."""
    opened = await backend.open()
    try:
        yield opened
    finally:
        await opened.aclose()


async def drop_recall_keys(backend: Backend) -> None:
    """Undo SQLite's schema version 12 (recall keys, docs/store.md); PostgreSQL has none."""
    if backend.name != "sqlite":
        return
    for trigger in ("recall_keys_insert", "recall_keys_update"):
        await backend.sql(f"DROP TRIGGER IF EXISTS {trigger}")
    await backend.sql("DROP TABLE IF EXISTS recall_keys")
    await backend.sql("DROP TABLE IF EXISTS recall_scopes")


async def drop_queue_hosts(backend: Backend) -> None:
    """Undo schema version 11 (the machine a queue entry ended on, docs/queue.md) and 12
    (recall keys) after it."""
    await drop_recall_keys(backend)
    if backend.name == "sqlite":
        columns = [row[1] for row in await backend.sql("PRAGMA table_info(postmortem_queue)")]
        if "host" in columns:
            await backend.sql("ALTER TABLE postmortem_queue DROP COLUMN host")
    else:
        await backend.sql("ALTER TABLE IF EXISTS postmortem_queue DROP COLUMN IF EXISTS host")


async def drop_effectiveness_events(backend: Backend) -> None:
    """Undo schema version 7 (dated effectiveness events, docs/store.md) and every one
    after it (8: failure signatures, 9: evidence failures, 10: keeps, 11: queue entries'
    host, 12: recall keys)."""
    await drop_queue_hosts(backend)
    await backend.sql("DROP TABLE IF EXISTS lesson_keeps")
    await backend.sql("DROP TABLE IF EXISTS evidence_failures")
    await backend.sql("DROP TABLE IF EXISTS failure_signatures")
    await backend.sql("DROP TABLE IF EXISTS lesson_effectiveness_events")
    await backend.sql("DELETE FROM store_meta WHERE key = 'effectiveness_events_since'")


async def drop_change_versions(backend: Backend) -> None:
    """Undo the change-version migration (store.md, "Version and changes") and every one
    after it, so a test can make a store what an earlier schema version was."""
    await drop_effectiveness_events(backend)  # version 7
    await backend.sql("DROP TABLE IF EXISTS lesson_proposals")  # the review migration
    await backend.sql("DROP INDEX lessons_by_change")
    await backend.sql("ALTER TABLE lessons DROP COLUMN change_version")
    await backend.sql("DELETE FROM store_meta WHERE key = 'change_version'")
