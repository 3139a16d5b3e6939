"""A postmortem keeps its run's failure signatures in the store, and the next run of the
repository is scanned with them (SPEC §4 item 4): a `git push` that failed once in each
of two sessions qualifies in the second; a dry run records nothing. A lesson keeps the
failures it was written against (schema 9): with its card delivered, the same failure
again recurs, another error of the family on its own files does not. Both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import FakeSessions, config, evidence_ids
from run_builder import RunBuilder, ok, software_change
from specialist_builders import make_repo, with_graph_hash, write_record
from test_discovery_sees_what_exists import at, failed

from active_memory.checkout import Checkout
from active_memory.lessons import Lesson
from active_memory.orchestrator import PostmortemReport, run_postmortem
from active_memory.runlog.record import RunRecord
from active_memory.specialists.providers.base import Request
from active_memory.store.sqlite import SqliteStore

NO_UPSTREAM = "fatal: The current branch feature-{n} has no upstream branch."


def session(tmp_path: Path, repo: Path, run_id: str, branch: int) -> RunRecord:
    run = RunBuilder(software_change(), run_id=run_id)
    run.visit("worker", ok())
    data = with_graph_hash(run.build())
    data["repository"]["checkout"] = str(repo)
    push = failed(2, "git push", "git push") | {"error": NO_UPSTREAM.format(n=branch)}
    data["tool_failures"] = [push]
    folder = tmp_path / run_id
    folder.mkdir()
    return write_record(folder, data)


async def discovery_families(
    record: RunRecord, store: SqliteStore, repo: Path, tmp_path: Path, *, dry_run: bool
) -> set[str]:
    sessions = FakeSessions()
    await run_postmortem(
        record,
        config(timeout_ms=60_000),
        store,
        checkout=Checkout(repo),
        sessions=sessions,
        journal_dir=tmp_path,
        dry_run=dry_run,
    )
    asked = [r for r in sessions.requests if r.specialist == "repository_discovery"]
    if not asked:  # no evidence: discovery is not asked at all
        return set()
    task: Any = asked[0].input
    return {item.get("family") for item in task["evidence"] if item["kind"] == "tool_failures"}


@pytest.mark.asyncio
async def test_a_failure_seen_once_in_each_of_two_sessions_qualifies_in_the_second(
    tmp_path: Path, store: SqliteStore
) -> None:
    repo = make_repo(tmp_path)
    first = session(tmp_path, repo, "run-a", 1)
    assert await discovery_families(first, store, repo, tmp_path, dry_run=True) == set()
    namespace = first.repository.namespace if first.repository else ""
    assert await store.failure_signatures(namespace, excluding="run-b") == []  # dry: none

    assert await discovery_families(first, store, repo, tmp_path, dry_run=False) == set()
    [(family, error)] = await store.failure_signatures(namespace, excluding="run-b")
    assert family == "git push" and "feature-1" not in error  # the branch normalised

    second = session(tmp_path, repo, "run-b", 2)
    assert await discovery_families(second, store, repo, tmp_path, dry_run=True) == {"git push"}
    # Run a again: its own signature is not an earlier run's.
    assert await discovery_families(first, store, repo, tmp_path, dry_run=True) == set()


TIMED_OUT = "timed out after 10s (Claude Code moved it to the background)"
NO_RULE = "make: *** No rule to make target 'test-db', needed by 'test'.  Stop."


def make_test_session(
    tmp_path: Path, repo: Path, run_id: str, errors: list[str], *, delivered: bool
) -> RunRecord:
    """A run whose `make test` (on the repository's Makefile) failed once per error."""
    run = RunBuilder(software_change(), run_id=run_id)
    run.visit("worker", ok())
    data = with_graph_hash(run.build())
    data["repository"]["checkout"] = str(repo)
    data["tool_failures"] = [
        failed(2 + n, "timeout 10 make test", "make test")
        | {"error": error, "exit_code": 124, "paths": ["Makefile"]}
        for n, error in enumerate(errors)
    ]
    data["deliveries"] = (
        [{"session": "s-1", "lesson": "L-1", "revision": 1, "at": at(1)}] if delivered else []
    )
    folder = tmp_path / run_id
    folder.mkdir()
    return write_record(folder, data)


async def write_the_lesson(request: Request) -> Any:
    """Discovery's answer: one lesson on the Makefile citing every failure item."""
    cited = [i for i in evidence_ids(request) if i.startswith("ev-tf-")]
    assert cited
    return {
        "lessons": [
            {
                "title": "Run make test with the test database up",
                "recommendation": "Start the test database before `make test`; it waits forever.",
                # `make test` as a command: the Makefile alone is an everyday file (§6).
                "associations": {"files": ["Makefile"], "commands": ["make test"]},
                "evidence": cited,
                "citations": [{"path": "Makefile", "lines": [1, 2]}],
                "why_recurs": "every change runs make test",
            }
        ]
    }


async def postmortem(
    record: RunRecord, store: Any, repo: Path, tmp_path: Path, **answers: Any
) -> PostmortemReport:
    return await run_postmortem(
        record,
        config(timeout_ms=60_000),
        store,
        checkout=Checkout(repo),
        sessions=FakeSessions(answers),
        journal_dir=tmp_path,
        dry_run=False,
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(("again", "recurred"), [(TIMED_OUT, 1), (NO_RULE, 0)])
async def test_a_delivered_lesson_recurs_only_when_its_own_failure_comes_back(
    tmp_path: Path, store: Any, again: str, recurred: int
) -> None:
    repo = make_repo(tmp_path)
    first = make_test_session(tmp_path, repo, "run-a", [TIMED_OUT, TIMED_OUT], delivered=False)
    report = await postmortem(first, store, repo, tmp_path, repository_discovery=write_the_lesson)
    lesson = await store.get("L-1")
    assert isinstance(lesson, Lesson), str(report.specialists["repository_discovery"].model_dump())
    assert lesson.associations.files == ["Makefile"]
    kept = await store.written_against(lesson.evidence.evidence_ids)
    assert list(kept.values()) == [
        frozenset({("make test", "timed out after <n>s (Claude Code moved it to the background)")})
    ]

    # The card is delivered; `make test` fails on the lesson's own Makefile again, twice
    # (so that it is evidence of its own, with or without the stored signature).
    second = make_test_session(tmp_path, repo, "run-b", [again, again], delivered=True)
    await postmortem(second, store, repo, tmp_path)
    counters = (await store.effectiveness(["L-1"]))["L-1"]
    assert (counters.runs_delivered, counters.recurred_when_delivered) == (1, recurred)


@pytest.mark.asyncio
async def test_a_lesson_published_before_schema_9_keeps_the_family_rule(
    tmp_path: Path, store: Any, backend: Any
) -> None:
    repo = make_repo(tmp_path)
    first = make_test_session(tmp_path, repo, "run-a", [TIMED_OUT, TIMED_OUT], delivered=False)
    await postmortem(first, store, repo, tmp_path, repository_discovery=write_the_lesson)
    await backend.sql("DELETE FROM evidence_failures")  # as if cited before schema 9
    second = make_test_session(tmp_path, repo, "run-b", [NO_RULE, NO_RULE], delivered=True)
    await postmortem(second, store, repo, tmp_path)
    counters = (await store.effectiveness(["L-1"]))["L-1"]
    assert (counters.runs_delivered, counters.recurred_when_delivered) == (1, 1)
