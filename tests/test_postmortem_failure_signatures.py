"""A postmortem keeps its run's failure signatures in the store, and the next run of the
repository is scanned with them (SPEC §4 item 4): a `git push` that failed once in each
of two sessions qualifies in the second; a dry run records nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import FakeSessions, config
from run_builder import RunBuilder, ok, software_change
from specialist_builders import make_repo, with_graph_hash, write_record
from test_discovery_sees_what_exists import failed

from active_memory.checkout import Checkout
from active_memory.orchestrator import run_postmortem
from active_memory.runlog.record import RunRecord
from active_memory.store.sqlite import SqliteStore

SQLITE_ONLY = True
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
