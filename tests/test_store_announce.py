"""The store announces a session that changed its lessons (store/announce.py) to whoever
subscribed, and never imports what listens (recall): an import goes down, never up."""

from __future__ import annotations

import ast
import logging
from collections.abc import Iterator

import pytest
from conftest import AUTHOR, REPO_ROOT, Backend, card, create

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
