"""Shared fixtures: a fresh lesson store per test, and lesson builders."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from active_memory.lessons import (
    Associations,
    Author,
    Card,
    CreateLesson,
    GraphScope,
    RepositoryScope,
)
from active_memory.store.sqlite import SqliteStore

REPO_ROOT = Path(__file__).resolve().parent.parent
# The real zeroshot fixtures live in the read-only shared folder beside the checkout
# (in CI too); ACTIVE_MEMORY_SHARED_DIR points elsewhere if needed.
SHARED_DIR = Path(os.environ.get("ACTIVE_MEMORY_SHARED_DIR", REPO_ROOT.parent / "shared"))
ZEROSHOT_FIXTURES = SHARED_DIR / "zeroshot"
# Without the shared folder (a user's clone) those tests skip; in CI they must run.
needs_zeroshot_fixtures = pytest.mark.skipif(
    not ZEROSHOT_FIXTURES.is_dir() and os.environ.get("CI") != "true",
    reason=f"zeroshot fixtures not found at {ZEROSHOT_FIXTURES}",
)

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


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "lessons.sqlite3"


@pytest_asyncio.fixture
async def store(store_path: Path) -> AsyncIterator[SqliteStore]:
    opened = await SqliteStore.open(store_path)
    try:
        yield opened
    finally:
        await opened.aclose()
