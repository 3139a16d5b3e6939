"""The store's change version and the changes since a version (both backends)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import AUTHOR, GRAPH_HASH, NAMESPACE, Backend, card, create, drop_change_versions

from active_memory.errors import RevisionConflict
from active_memory.lessons import (
    AdaptLesson,
    DeferLesson,
    GraphScope,
    RepositoryScope,
    RetireLesson,
)
from active_memory.store import LessonStore
from active_memory.store.changes import OldSchema, ScopeKey, read_sqlite_changes

REPOSITORY = ScopeKey("repository", repository=NAMESPACE)


def ids(rows: Sequence[tuple[object, ...]]) -> list[str]:
    return sorted(str(row[0]) for row in rows)


@pytest.mark.asyncio
async def test_each_write_that_changes_lessons_bumps_the_version_once(store: LessonStore) -> None:
    assert await store.version() == 0
    await store.publish([create("one"), create("two")])
    assert await store.version() == 1
    await store.publish([AdaptLesson(id="L-1", base_revision=1, card=card("one b"),
                                     author=AUTHOR)])  # fmt: skip
    assert await store.version() == 2


@pytest.mark.asyncio
async def test_a_refused_publish_leaves_the_version(store: LessonStore) -> None:
    await store.publish([create("one")])
    with pytest.raises(RevisionConflict):
        await store.publish([AdaptLesson(id="L-1", base_revision=7, card=card("x"),
                                         author=AUTHOR)])  # fmt: skip
    assert await store.version() == 1


@pytest.mark.asyncio
async def test_changes_since_a_version_name_every_changed_lesson_of_the_scope(
    store: LessonStore,
) -> None:
    await store.publish([create("one"), create("two"), create("three")])
    base = await store.version()
    await store.publish([
        AdaptLesson(id="L-1", base_revision=1, card=card("one b"), author=AUTHOR),
        RetireLesson(id="L-2", base_revision=1, author=AUTHOR),
        DeferLesson(id="L-3", base_revision=1, author=AUTHOR),
        create("four"),
        create("elsewhere", RepositoryScope(repository="repo:github.com/acme/web")),
    ])  # fmt: skip
    changes = await store.changes(REPOSITORY, base)
    assert changes.version == base + 1 and not changes.full
    by_id = {row[0]: row for row in changes.rows}
    assert sorted(by_id) == ["L-1", "L-2", "L-3", "L-4"]
    assert by_id["L-1"][1:4] == (2, "active", "one b")
    assert by_id["L-2"][2] == "retired" and by_id["L-2"][3] is None
    assert by_id["L-3"][2] == "deferred"
    assert json.loads(str(by_id["L-4"][5]))["files"] == ["api/schema.json"]
    assert (await store.changes(REPOSITORY, changes.version)).rows == []


@pytest.mark.asyncio
async def test_a_full_read_is_the_scopes_active_lessons(store: LessonStore) -> None:
    await store.publish([create("one"), create("two")])
    await store.publish([RetireLesson(id="L-2", base_revision=1, author=AUTHOR)])
    changes = await store.changes(REPOSITORY, None)
    assert changes.full and ids(changes.rows) == ["L-1"] and changes.version == 2


@pytest.mark.asyncio
async def test_a_graph_scope_is_keyed_by_its_repository_too(store: LessonStore) -> None:
    await store.publish([
        create("any repo", GraphScope(graph_hash=GRAPH_HASH, node="worker")),
        create("this repo", GraphScope(graph_hash=GRAPH_HASH, node="worker",
                                       repository=NAMESPACE)),
        create("other repo", GraphScope(graph_hash=GRAPH_HASH, node="worker",
                                        repository="repo:other")),
        create("other node", GraphScope(graph_hash=GRAPH_HASH, node="review")),
    ])  # fmt: skip
    scope = ScopeKey("graph", graph_hash=GRAPH_HASH, node="worker", repository=NAMESPACE)
    assert ids((await store.changes(scope, None)).rows) == ["L-1", "L-2"]
    other = ScopeKey("graph", graph_hash=GRAPH_HASH, node="worker", repository="repo:other")
    assert ids((await store.changes(other, None)).rows) == ["L-1", "L-3"]
    assert scope.name != other.name


@pytest.mark.asyncio
async def test_the_lean_sqlite_reader_agrees_with_the_store(
    store: LessonStore, store_path: Path
) -> None:
    await store.publish([create("one"), create("two")])
    await store.publish([RetireLesson(id="L-1", base_revision=1, author=AUTHOR)])
    lean = read_sqlite_changes(str(store_path), REPOSITORY, 1)
    full = await store.changes(REPOSITORY, 1)
    assert (lean.version, lean.rows) == (full.version, full.rows)


def test_the_lean_reader_reads_a_missing_store_as_empty(tmp_path: Path) -> None:
    changes = read_sqlite_changes(str(tmp_path / "none.sqlite3"), REPOSITORY, None)
    assert (changes.version, changes.rows) == (0, [])


def test_the_lean_reader_refuses_a_store_before_change_versions(tmp_path: Path) -> None:
    import sqlite3

    from active_memory.store.sqlite_schema import APPLICATION_ID, MIGRATIONS

    path = tmp_path / "old.sqlite3"
    raw = sqlite3.connect(path)
    raw.executescript("".join(MIGRATIONS[:3]))
    raw.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    raw.execute("PRAGMA user_version = 3")
    raw.close()
    with pytest.raises(OldSchema):
        read_sqlite_changes(str(path), REPOSITORY, None)


@pytest.mark.asyncio
async def test_a_store_from_before_change_versions_migrates_keeping_its_lessons(
    backend: Backend,
) -> None:
    from active_memory.store import open_store

    async with open_store(backend.location) as store:
        await store.publish([create("one"), create("two")])
    from active_memory.store.sqlite_schema import CHANGES_SCHEMA_VERSION

    before = CHANGES_SCHEMA_VERSION - 1  # the same step on both backends
    await backend.sql("DROP TABLE postmortem_queue")  # the later queue step (version 5)
    await drop_change_versions(backend)
    if backend.name == "sqlite":
        await backend.sql(f"PRAGMA user_version = {before}")
    else:
        await backend.sql(f"UPDATE active_memory_schema SET version = {before}")
    async with open_store(backend.location) as store:
        assert await store.version() == 0
        assert ids((await store.changes(REPOSITORY, None)).rows) == ["L-1", "L-2"]
        await store.publish([create("three")])
        changes = await store.changes(REPOSITORY, 0)
        assert changes.version == 1 and ids(changes.rows) == ["L-3"]


@pytest.mark.parametrize(
    "scope",
    [REPOSITORY, ScopeKey("graph", graph_hash=GRAPH_HASH, node="worker", repository=NAMESPACE)],
    ids=["repository", "graph"],
)
@pytest.mark.asyncio
async def test_changes_since_a_version_seek_the_version_in_the_index(
    store: LessonStore, store_path: Path, scope: ScopeKey
) -> None:
    """A run's first call asks for the changes since its scope's generation: the query
    must seek the version inside the scope (every column of `lessons_by_change` bound),
    not walk all of the scope's index entries (20 ms at 100k lessons, issue 14)."""
    import sqlite3

    from active_memory.store.changes import changes_query

    await store.publish([create("one")])
    sql, params = changes_query(scope, 1)
    raw = sqlite3.connect(store_path)
    try:
        plan = " ".join(str(row[-1]) for row in raw.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    finally:
        raw.close()
    assert "lessons_by_change" in plan and "change_version>?" in plan, plan


@pytest.mark.asyncio
async def test_the_lean_reader_opens_a_store_whose_path_has_uri_characters(
    tmp_path: Path,
) -> None:
    """`?`, `#` and `%` mean something in a SQLite URI; spaces and non-ASCII do not."""
    from active_memory.store.direct import read_direct
    from active_memory.store.sqlite import SqliteStore

    folder = tmp_path / "a b?c#d%41é"
    folder.mkdir()
    path = folder / "lessons.sqlite3"
    store = await SqliteStore.open(path)
    try:
        await store.publish([create("one"), create("two")])
    finally:
        await store.aclose()
    changes = read_sqlite_changes(str(path), REPOSITORY, None)
    assert (changes.version, ids(changes.rows)) == (1, ["L-1", "L-2"])
    found = read_direct(str(path), REPOSITORY, 1, [(0, "f", "api/schema.json")], 4096)
    assert sorted(row[1] for row in found.rows) == ["L-1", "L-2"]
    assert not (tmp_path / "a b").exists()  # nothing created at a truncated name
