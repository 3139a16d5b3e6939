"""Discovery sees its scope: the active lessons of its repository or graph are in its task
(bounded, the related ones first), and a proposal that repeats one names it in `adapts`:
it is not created but kept as that lesson's adaptation candidate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import (
    FakeSessions,
    config,
    evidence_ids,
    repo_lessons,
    run_record,
    seed,
    task_of,
)
from specialist_builders import make_repo

from active_memory.checkout import Checkout
from active_memory.lessons import Associations, Lesson, RepositoryScope
from active_memory.orchestrator import run_postmortem
from active_memory.specialists.providers.base import Request
from active_memory.specialists.tasks import TaskLimits, build_discovery
from active_memory.store.sqlite import SqliteStore

SQLITE_ONLY = True


def proposal(request: Request, **extra: Any) -> dict[str, Any]:
    return {
        "title": "Regenerate the client after every schema edit",
        "recommendation": "After editing `api/schema.json` run `make api-client` and commit "
        "`src/generated/client.ts` with it.",
        "associations": {"files": ["api/schema.json"]},
        "evidence": evidence_ids(request)[:1],
        "citations": [{"path": "api/schema.json"}],
        "why_recurs": "Every API change edits the schema; the generated client goes stale.",
        **extra,
    }


def test_the_discovery_task_lists_the_active_lessons_of_its_scope_related_first(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    record = run_record(tmp_path, [], timeouts=True, checkout=repo)
    namespace = record.repository.namespace if record.repository else ""
    lessons = repo_lessons(5)
    related = lessons[4].model_copy(
        update={"associations": Associations(files=["api/schema.json"])}
    )
    deferred = lessons[1].model_copy(update={"status": "deferred"})
    foreign = Lesson(
        id="L-99",
        revision=1,
        scope=RepositoryScope(repository="repo:elsewhere"),
        title="Another repository's lesson",
        recommendation="Run `make all`.",
    )
    living = [lessons[0], deferred, lessons[2], lessons[3], related, foreign]
    task = build_discovery(
        "repository_discovery",
        record,
        checkout=Checkout(repo),
        living=living,
        limits=TaskLimits(scope_lessons_max=3),
    )
    assert [x.id for x in task.lessons] == ["L-5", "L-1", "L-3"]  # related first, bounded
    assert all(x.id not in ("L-2", "L-99") for x in task.lessons)
    assert task.lessons[0].associations.files == ["api/schema.json"]
    assert namespace  # the lessons listed are of the run's own repository


@pytest.mark.asyncio
async def test_a_proposal_that_adapts_a_lesson_becomes_its_candidate(
    tmp_path: Path, store: SqliteStore
) -> None:
    repo = make_repo(tmp_path)
    await seed(store, repo_lessons(1))
    record = run_record(tmp_path, [], timeouts=True, checkout=repo)

    async def adapts(request: Request) -> Any:
        shown: Any = task_of(request)["lessons"]
        assert [x["id"] for x in shown] == ["L-1"]
        unknown = proposal(request, adapts="L-7", title="Commit the generated client too")
        return {"lessons": [proposal(request, adapts="L-1"), unknown]}

    sessions = FakeSessions({"repository_discovery": adapts})
    report = await run_postmortem(
        record, config(), store, checkout=Checkout(repo), sessions=sessions, journal_dir=tmp_path
    )
    entry = report.specialists["repository_discovery"]
    assert entry.status == "reconciled" and entry.accepted == []
    first, second = entry.rejected or []
    assert first.duplicate_of == "L-1" and "adaptation of L-1" in first.reason
    assert second.duplicate_of is None and "'L-7' is not one of the active lessons" in second.reason
    # The unknown `adapts` is a fault the repair turn lists (the candidate is not).
    assert entry.repair_turns == 1
    [repair] = [r for r in sessions.requests if r.repair_of is not None]
    assert any("L-7" in failure for failure in repair.failures)
    assert not any("adaptation of L-1" in failure for failure in repair.failures)
    assert report.published.created == 0
    candidates = await store.candidates(["L-1"])
    [candidate] = candidates["L-1"]
    assert candidate.title == "Regenerate the client after every schema edit"
    assert candidate.run_id == record.run_id
