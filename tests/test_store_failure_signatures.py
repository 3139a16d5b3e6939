"""The store's failure signatures per repository (SPEC §4 item 4), on both backends:
recorded in the publish's own transaction, a run never its own "earlier" run, a repeated
postmortem of one run not counted twice, at most SIGNATURES_KEPT per repository."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Backend, create, drop_queue_hosts

from active_memory.errors import RevisionConflict
from active_memory.lessons import AdaptLesson
from active_memory.store import failure_signatures
from active_memory.store.failure_signatures import SeenFailures

REPO = "github.com/acme/api"
PUSH = ("git push", "fatal: The current branch <branch> has no upstream branch.")
ADD = ("git add", "The following paths are ignored by one of your .gitignore files:")


def seen(run: str, *pairs: tuple[str, str], at: str = "2026-12-01T10:00:00+00:00") -> SeenFailures:
    return SeenFailures(REPO, run, at, tuple(pairs))


@pytest.mark.asyncio
async def test_a_run_sees_the_signatures_of_earlier_runs_only(store: Any) -> None:
    await store.publish([], failures=seen("run-1", PUSH))
    assert await store.failure_signatures(REPO, excluding="run-1") == []
    assert await store.failure_signatures(REPO, excluding="run-2") == [PUSH]
    assert await store.failure_signatures("github.com/acme/other", excluding="run-2") == []
    await store.publish([], failures=seen("run-2", PUSH, ADD, at="2026-12-02T10:00:00+00:00"))
    # run-2 sees PUSH (run-1 had it), not ADD (only run-2 had it).
    assert await store.failure_signatures(REPO, excluding="run-2") == [PUSH]
    assert sorted(await store.failure_signatures(REPO, excluding="run-3")) == [ADD, PUSH]


@pytest.mark.asyncio
async def test_a_repeated_postmortem_of_one_run_counts_it_once(
    store: Any, backend: Backend
) -> None:
    await store.publish([], failures=seen("run-1", PUSH))
    await store.publish([], failures=seen("run-1", PUSH))
    rows = await backend.sql("SELECT runs, first_run, last_run FROM failure_signatures")
    assert [tuple(r) for r in rows] == [(1, "run-1", "run-1")]
    assert await store.failure_signatures(REPO, excluding="run-1") == []
    await store.publish([], failures=seen("run-2", PUSH, at="2026-12-03T00:00:00+00:00"))
    rows = await backend.sql(
        "SELECT runs, first_run, last_run, first_seen, last_seen FROM failure_signatures"
    )
    assert [tuple(r) for r in rows] == [
        (2, "run-1", "run-2", "2026-12-01T10:00:00+00:00", "2026-12-03T00:00:00+00:00")
    ]


@pytest.mark.asyncio
async def test_a_refused_publish_records_no_signature(store: Any) -> None:
    await store.publish([create()])
    stale = AdaptLesson(id="L-1", base_revision=7, card=create().card, author=create().author)
    with pytest.raises(RevisionConflict):
        await store.publish([stale], failures=seen("run-1", PUSH))
    assert await store.failure_signatures(REPO, excluding="run-2") == []


@pytest.mark.asyncio
async def test_the_least_recently_seen_go_first_past_the_limit(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(failure_signatures, "SIGNATURES_KEPT", 3)
    for day in range(1, 6):
        pair = ("mix test", f"error {day}")
        await store.publish([], failures=seen(f"run-{day}", pair, at=f"2026-12-0{day}T00:00:00"))
    kept = await store.failure_signatures(REPO, excluding="run-9")
    assert kept == [("mix test", "error 3"), ("mix test", "error 4"), ("mix test", "error 5")]


TIMEOUT = ("make test", "timed out after <n>s")


@pytest.mark.asyncio
async def test_a_publish_keeps_the_failures_of_the_evidence_its_lessons_cite(store: Any) -> None:
    cited = (("ev-tf-000000000001", *TIMEOUT), ("ev-tf-000000000001", *PUSH))
    kept = seen("run-1", TIMEOUT)._replace(cited=cited)
    await store.publish([create()], failures=kept)
    found = await store.written_against(["ev-tf-000000000001", "ev-tf-00000000000f", "ev-ex-1"])
    assert found == {"ev-tf-000000000001": frozenset({TIMEOUT, PUSH})}
    await store.publish([], failures=kept)  # again: nothing doubles
    assert await store.written_against(["ev-tf-000000000001"]) == found
    assert await store.written_against([]) == {}


@pytest.mark.asyncio
async def test_a_refused_publish_keeps_no_evidence_failures(store: Any) -> None:
    await store.publish([create()])
    stale = AdaptLesson(id="L-1", base_revision=7, card=create().card, author=create().author)
    kept = seen("run-1", TIMEOUT)._replace(cited=(("ev-tf-000000000001", *TIMEOUT),))
    with pytest.raises(RevisionConflict):
        await store.publish([stale], failures=kept)
    assert await store.written_against(["ev-tf-000000000001"]) == {}


@pytest.mark.asyncio
async def test_a_version_8_store_migrates_adding_only_the_evidence_failures_table(
    backend: Backend,
) -> None:
    async with await backend.open() as store:
        await store.publish([create()], failures=seen("run-1", PUSH))
    await drop_queue_hosts(backend)  # versions 12 and 11
    await backend.sql("DROP TABLE lesson_keeps")  # version 10
    await backend.sql("DROP TABLE evidence_failures")
    if backend.name == "sqlite":
        await backend.sql("PRAGMA user_version = 8")
    else:
        await backend.sql("UPDATE active_memory_schema SET version = 8")
    async with await backend.open() as store:
        assert await store.failure_signatures(REPO, excluding="run-2") == [PUSH]
        assert await store.written_against(["ev-tf-000000000001"]) == {}
        kept = seen("run-2", PUSH)._replace(cited=(("ev-tf-000000000001", *PUSH),))
        await store.publish([], failures=kept)
        assert await store.written_against(["ev-tf-000000000001"]) == {
            "ev-tf-000000000001": frozenset({PUSH})
        }
