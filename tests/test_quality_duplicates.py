"""Near-duplicate proposals: the rule, its defaults on the corpus, and the refusal in the
discovery checks and the postmortem report (duplicate_of), so nothing new is created."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import FakeSessions, config, evidence_ids, run_record
from specialist_builders import NAMESPACE, checkout, make_repo, proposal, timeouts_record

from active_memory.lessons import (
    Associations,
    Author,
    Card,
    GraphScope,
    Lesson,
    RepositoryScope,
)
from active_memory.orchestrator import run_postmortem
from active_memory.quality.duplicates import (
    DuplicateLimits,
    find_duplicate,
    is_duplicate,
    shared_associations,
    text_similarity,
)
from active_memory.runlog.record import RunRecord
from active_memory.specialists.answers import RepositoryDiscoveryAnswer
from active_memory.specialists.checks import DiscoveryResult, check_discovery
from active_memory.specialists.providers.base import Request
from active_memory.specialists.tasks import build_discovery
from active_memory.store.sqlite import SqliteStore

CORPUS = Path(__file__).parent.parent / "bench" / "duplicates_corpus.json"
SCOPE = RepositoryScope(repository=NAMESPACE)


def _card(data: dict[str, Any]) -> Card:
    return Card(
        title=data["title"],
        recommendation=data["recommendation"],
        associations=Associations(files=data["files"]),
    )


def _lesson(lesson_id: str, title: str, recommendation: str, **changes: Any) -> Lesson:
    fields: dict[str, Any] = {
        "id": lesson_id,
        "revision": 1,
        "scope": SCOPE,
        "title": title,
        "recommendation": recommendation,
        "associations": Associations(files=["api/schema.json"]),
    }
    fields.update(changes)
    return Lesson.model_validate(fields)


LIVING = _lesson(
    "L-7",
    "Run make api-client after changing the schema",
    "Whenever `api/schema.json` changes, run `make api-client` and do not edit "
    "`src/generated/client.ts` by hand.",
)


def test_the_default_limits_separate_the_corpus_without_error() -> None:
    pairs = json.loads(CORPUS.read_text(encoding="utf-8"))["pairs"]
    assert len(pairs) >= 30
    limits = DuplicateLimits()
    wrong = []
    for number, pair in enumerate(pairs):
        a, b = _card(pair["a"]), _card(pair["b"])
        said = is_duplicate(
            text_similarity(a, b), shared_associations(a.associations, b.associations), limits
        )
        if said != pair["duplicate"]:
            wrong.append(number)
    assert wrong == []


def test_similar_text_without_a_shared_association_is_not_a_duplicate() -> None:
    card = Card(title=LIVING.title, recommendation=LIVING.recommendation + " Always.")
    moved = card.model_copy(update={"associations": Associations(files=["docs/api.md"])})
    assert find_duplicate(moved, SCOPE, [LIVING], DuplicateLimits(text_alone=100)) is None
    # ... unless the text alone is nearly verbatim.
    assert find_duplicate(moved, SCOPE, [LIVING], DuplicateLimits()) is not None


def test_a_file_inside_a_lessons_folder_is_a_shared_association() -> None:
    a = Associations(files=["api/schema.json"])
    b = Associations(folders=["api"], identifiers=["make_client"])
    assert shared_associations(a, b) == ("api/schema.json",)
    assert shared_associations(Associations(folders=["apiv2"]), b) == ()


def test_the_same_command_is_a_shared_association() -> None:
    a = Associations(files=["mix.exs"], commands=["mix test"])
    b = Associations(folders=["test"], commands=["timeout 60 mix test", "git push"])
    assert shared_associations(a, b) == ("mix test",)


def test_only_active_lessons_of_the_same_scope_are_compared() -> None:
    card = LIVING.card()
    deferred = LIVING.model_copy(update={"status": "deferred"})
    other = LIVING.model_copy(update={"scope": RepositoryScope(repository="repo:other")})
    graph = LIVING.model_copy(update={"scope": GraphScope(graph_hash="a" * 64, node="worker")})
    assert find_duplicate(card, SCOPE, [deferred, other, graph], DuplicateLimits()) is None
    found = find_duplicate(card, SCOPE, [other, LIVING], DuplicateLimits())
    assert found is not None and found.lesson_id == "L-7" and found.score == 100


def test_limits_outside_0_to_100_are_refused() -> None:
    with pytest.raises(ValueError, match="with_shared_association"):
        DuplicateLimits(with_shared_association=120)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.fixture
def record(tmp_path: Path, repo: Path) -> RunRecord:
    return timeouts_record(tmp_path, repo)


def _discover(record: RunRecord, repo: Path, living: list[Lesson]) -> DiscoveryResult:
    task = build_discovery("repository_discovery", record)
    [evidence] = [item.id for item in task.evidence if item.kind == "timeout_crash"]
    distinct = proposal(
        title="Validate the schema with make api-lint",
        recommendation="Run `make api-lint` after editing `api/schema.json`; the linter "
        "rejects optional fields without defaults.",
    )
    lessons = [{**p, "evidence": [evidence]} for p in (proposal(), distinct)]
    answer = RepositoryDiscoveryAnswer.model_validate({"lessons": lessons})
    return check_discovery(task, answer, checkout=checkout(repo), living=living)


def test_a_paraphrase_of_a_living_lesson_is_refused_naming_it(
    record: RunRecord, repo: Path
) -> None:
    result = _discover(record, repo, [LIVING])
    assert [a.index for a in result.accepted] == [1]
    [rejection] = result.rejected
    assert rejection.index == 0 and rejection.duplicate_of == "L-7"
    assert "near-duplicate of L-7 (r1)" in rejection.reason
    assert "adaptation candidate" in rejection.reason
    assert rejection.to_json()["duplicate_of"] == "L-7"


def test_without_living_lessons_both_proposals_are_accepted(record: RunRecord, repo: Path) -> None:
    result = _discover(record, repo, [])
    assert [a.index for a in result.accepted] == [0, 1] and result.rejected == ()


async def _repeating_proposal(request: Request) -> Any:
    return {
        "lessons": [
            {
                "title": "Read the schema before the generated client",
                "recommendation": "Open `api/schema.json` first; `make api-client` rebuilds it.",
                "associations": {"files": ["api/schema.json"]},
                "evidence": evidence_ids(request),
                "citations": [],
                "why_recurs": "the worker timed out twice reading generated code",
                "node": "worker",
            }
        ]
    }


@pytest.mark.asyncio
async def test_the_postmortem_reports_a_duplicate_and_creates_nothing(
    tmp_path: Path, store: SqliteStore
) -> None:
    record = run_record(tmp_path, [], timeouts=True)
    assert record.graph is not None and record.graph.hash is not None
    existing = Lesson(
        id="L-40",
        revision=1,
        scope=GraphScope(graph_hash=record.graph.hash, node="worker"),
        title="Read api/schema.json before the generated client",
        recommendation="Open `api/schema.json` first, since `make api-client` rebuilds it.",
        associations=Associations(files=["api/schema.json"]),
    )
    await store.import_lessons([existing], Author(specialist="person:test"))
    sessions = FakeSessions({"graph_discovery": _repeating_proposal})
    report = await run_postmortem(record, config(), store, sessions=sessions, journal_dir=tmp_path)
    entry = report.specialists["graph_discovery"]
    assert entry.accepted == [] and report.published.created == 0
    [rejected] = entry.rejected or []
    assert rejected.duplicate_of == "L-40"
    assert report.to_json()["specialists"]["graph_discovery"]["rejected"][0]["duplicate_of"] == (
        "L-40"
    )
