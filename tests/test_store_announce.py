"""The store announces a session that changed its lessons (store/announce.py) to whoever
subscribed, and never imports what listens (recall): an import goes down, never up."""

from __future__ import annotations

import ast
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import AUTHOR, NAMESPACE, REPO_ROOT, Backend, card, create

from active_memory.errors import RevisionConflict
from active_memory.lessons import AdaptLesson
from active_memory.store import on_store_change, open_store


@pytest.fixture
def heard() -> Iterator[list[str]]:
    """The locations announced while the test runs."""
    locations: list[str] = []
    unsubscribe = on_store_change(locations.append)
    try:
        yield locations
    finally:
        unsubscribe()


@pytest.mark.asyncio
async def test_a_committed_write_is_announced_once_its_session_ends(
    backend: Backend, heard: list[str]
) -> None:
    async with open_store(backend.location) as store:
        await store.publish([create("one")])
        await store.publish([create("two")])
        assert heard == []  # not before the session ends
    assert heard == [backend.location]  # the real location: a listener reopens the store


@pytest.mark.asyncio
async def test_a_refused_write_or_a_read_is_not_announced(
    backend: Backend, heard: list[str]
) -> None:
    async with open_store(backend.location) as store:
        await store.publish([create("one")])
    heard.clear()
    stale = AdaptLesson(id="L-1", base_revision=7, card=card("stale"), author=AUTHOR)
    async with open_store(backend.location) as store:
        with pytest.raises(RevisionConflict):
            await store.publish([stale])
        assert len(await store.select()) == 1
    assert heard == []


@pytest.mark.asyncio
async def test_a_failing_listener_is_logged_and_never_fails_the_write(
    backend: Backend, heard: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    def broken(location: str) -> None:
        raise OSError("no space left for the index")

    unsubscribe = on_store_change(broken)
    try:
        with caplog.at_level(logging.WARNING, logger="active_memory.store.announce"):
            async with open_store(backend.location) as store:
                await store.publish([create("one")])
    finally:
        unsubscribe()
    assert "no space left for the index" in caplog.text
    assert heard == [backend.location]  # the others still hear it


def test_subscribing_twice_is_heard_once_and_unsubscribing_stops_it() -> None:
    from active_memory.store.announce import _listeners

    def listener(location: str) -> None: ...

    first = on_store_change(listener)
    on_store_change(listener)
    assert _listeners.count(listener) == 1
    first()
    assert listener not in _listeners
    first()  # a second unsubscribe is harmless


def test_no_store_module_imports_recall() -> None:
    found = []
    for path in sorted((REPO_ROOT / "active_memory" / "store").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            found += [f"{path.name}: {name}" for name in names if "recall" in name]
    assert found == []


def test_a_command_that_changes_lessons_brings_recall_up_to_date(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line subscribes recall's refresh: after `lessons revert`, the scope
    recall keeps generations of is current without waiting for its next pin."""
    import anyio

    from active_memory.cli import main
    from active_memory.recall.building import refresh
    from active_memory.recall.generations import read_current, scope_dir
    from active_memory.store.changes import ScopeKey, read_sqlite_changes
    from active_memory.store.location import state_dir
    from active_memory.store.sqlite import SqliteStore

    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "state"))
    location = str(tmp_path / "lessons.sqlite3")

    async def two_revisions() -> None:
        async with await SqliteStore.open(location) as store:
            await store.publish([create("first")])
            adapt = AdaptLesson(id="L-1", base_revision=1, card=card("second"), author=AUTHOR)
            await store.publish([adapt])

    anyio.run(two_revisions)
    recall_dir = os.path.join(state_dir(), "recall")
    scope = ScopeKey("repository", repository=NAMESPACE)
    refresh(recall_dir, location, scope, lambda s, since: read_sqlite_changes(location, s, since))
    folder = scope_dir(recall_dir, location, scope)
    before = read_current(folder)
    assert before is not None and before[1] == 2
    assert main(["lessons", "revert", "L-1", "--to", "1", "--store", location]) == 0
    current = read_current(folder)
    assert current is not None and current[1] == 3
