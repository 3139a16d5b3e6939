"""Maintenance answers (SPEC §6): one decision per supplied (id, revision), or the batch
fails as a whole with every reason, and a failed batch publishes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from specialist_builders import (
    checkout,
    graph_lesson,
    make_repo,
    repo_lesson,
    timeouts_record,
)

from active_memory.lessons import AdaptLesson, DeferLesson, Lesson, RetireLesson
from active_memory.runlog.record import RunRecord
from active_memory.specialists.answers import MaintenanceAnswer
from active_memory.specialists.checks import (
    Failed,
    MaintenanceResult,
    Reconciled,
    check_maintenance,
)
from active_memory.specialists.mutations import maintenance_mutations, mutations
from active_memory.specialists.tasks import (
    MaintenanceTask,
    build_graph_maintenance,
    build_repository_maintenance,
)

CARD = {
    "title": "Regenerate the client with make api-client",
    "recommendation": "After editing `api/schema.json` run `make api-client`.",
    "associations": {"files": ["api/schema.json"]},
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.fixture
def record(tmp_path: Path, repo: Path) -> RunRecord:
    return timeouts_record(tmp_path, repo)


def _batch() -> list[Lesson]:
    return [repo_lesson("L-1", 2), repo_lesson("L-2", 1), repo_lesson("L-3", 4)]


def _task(record: RunRecord, repo: Path, living: list[Lesson] | None = None) -> MaintenanceTask:
    return build_repository_maintenance(
        record, _batch(), checkout=checkout(repo), living=living or []
    )


def _check(
    record: RunRecord, repo: Path, *decisions: dict[str, Any], living: list[Lesson] | None = None
) -> MaintenanceResult:
    answer = MaintenanceAnswer.model_validate({"decisions": list(decisions)})
    return check_maintenance(_task(record, repo, living), answer, checkout=checkout(repo))


def _keep(lesson_id: str, revision: int) -> dict[str, Any]:
    return {"id": lesson_id, "revision": revision, "action": "keep", "reason": "still true"}


def _failed(result: MaintenanceResult) -> tuple[str, ...]:
    """The reasons of a failed batch; a failed batch yields no mutation."""
    assert isinstance(result, Failed), result
    assert mutations(result, run_id="run-1", model="m") == []
    return result.reasons


def test_one_decision_per_lesson_reconciles_into_mutations(record: RunRecord, repo: Path) -> None:
    result = _check(
        record,
        repo,
        {"id": "L-3", "revision": 4, "action": "retire", "reason": "dup", "canonical": "L-1"},
        {"id": "L-1", "revision": 2, "action": "adapt", "reason": "renamed", "lesson": CARD},
        {"id": "L-2", "revision": 1, "action": "defer", "reason": "unsure"},
    )
    assert isinstance(result, Reconciled)
    assert [d.id for d in result.decisions] == ["L-1", "L-2", "L-3"]  # batch order
    adapt, defer, retire = maintenance_mutations(result, run_id="run-9", model="claude-sonnet-5")
    assert isinstance(adapt, AdaptLesson) and adapt.base_revision == 2
    assert adapt.card.title == CARD["title"] and adapt.evidence.run_ids == ["run-9"]
    assert isinstance(defer, DeferLesson) and defer.base_revision == 1
    assert isinstance(retire, RetireLesson) and retire.canonical == "L-1"
    assert {m.author.specialist for m in (adapt, defer, retire)} == {"repository_maintenance"}
    assert adapt.author.run_id == "run-9" and adapt.author.model == "claude-sonnet-5"


def test_keep_decisions_reconcile_without_mutations(record: RunRecord, repo: Path) -> None:
    result = _check(record, repo, _keep("L-1", 2), _keep("L-2", 1), _keep("L-3", 4))
    assert isinstance(result, Reconciled)
    assert mutations(result, run_id="run-1", model=None) == []


def test_a_missing_decision_fails_reconciliation(record: RunRecord, repo: Path) -> None:
    reasons = _failed(_check(record, repo, _keep("L-1", 2), _keep("L-3", 4)))
    assert reasons == ("L-2 (revision 1) has no decision",)


def test_a_duplicate_decision_fails_reconciliation(record: RunRecord, repo: Path) -> None:
    reasons = _failed(
        _check(record, repo, _keep("L-1", 2), _keep("L-2", 1), _keep("L-3", 4), _keep("L-1", 2))
    )
    assert reasons == ("decisions[3]: a second decision for L-1 (the first is decisions[0])",)


def test_an_unknown_decision_fails_reconciliation(record: RunRecord, repo: Path) -> None:
    reasons = _failed(
        _check(record, repo, _keep("L-1", 2), _keep("L-2", 1), _keep("L-3", 4), _keep("L-99", 1))
    )
    assert len(reasons) == 1 and "'L-99' is not supplied to you" in reasons[0]


def test_a_foreign_graph_lesson_decision_is_rejected_never_applied(
    record: RunRecord, repo: Path
) -> None:
    # The model "retires" a graph lesson it was never given: the whole batch fails.
    foreign = {"id": "G-1", "revision": 1, "action": "retire", "reason": "stale"}
    result = _check(record, repo, _keep("L-1", 2), _keep("L-2", 1), _keep("L-3", 4), foreign)
    reasons = _failed(result)
    assert "decisions[3]: 'G-1' is not supplied to you" in reasons[0]


def test_a_decision_on_a_lesson_outside_the_batch_fails(record: RunRecord, repo: Path) -> None:
    living = [repo_lesson("L-50", 1)]
    result = _check(
        record, repo, _keep("L-1", 2), _keep("L-2", 1), _keep("L-3", 4), _keep("L-50", 1),
        living=living,
    )  # fmt: skip
    assert "'L-50' is outside this batch" in _failed(result)[0]


def test_a_wrong_revision_fails_reconciliation(record: RunRecord, repo: Path) -> None:
    reasons = _failed(_check(record, repo, _keep("L-1", 1), _keep("L-2", 1), _keep("L-3", 4)))
    assert reasons == ("decisions[0]: L-1 was supplied at revision 2, not 1",)


def test_every_reason_is_reported_not_only_the_first(record: RunRecord, repo: Path) -> None:
    reasons = _failed(_check(record, repo, _keep("L-1", 1), _keep("L-404", 1)))
    assert len(reasons) == 4  # wrong revision, unknown ID, two missing lessons
    assert sum("has no decision" in r for r in reasons) == 2


def test_canonical_may_point_at_a_living_lesson_outside_the_batch(
    record: RunRecord, repo: Path
) -> None:
    retire = {"id": "L-1", "revision": 2, "action": "retire", "canonical": "L-50"}
    result = _check(
        record, repo, retire, _keep("L-2", 1), _keep("L-3", 4), living=[repo_lesson("L-50", 3)]
    )
    assert isinstance(result, Reconciled)


def test_canonical_must_be_a_known_lesson(record: RunRecord, repo: Path) -> None:
    retire = {"id": "L-1", "revision": 2, "action": "retire", "canonical": "L-77"}
    reasons = _failed(_check(record, repo, retire, _keep("L-2", 1), _keep("L-3", 4)))
    assert reasons == ("decisions[0].canonical: 'L-77' is not a living lesson of this scope",)


def test_canonical_must_have_the_same_scope(record: RunRecord, repo: Path) -> None:
    other_repo = repo_lesson("L-60", 1, namespace="repo:github.com/acme/web")
    retire = {"id": "L-1", "revision": 2, "action": "retire", "canonical": "L-60"}
    result = _check(record, repo, retire, _keep("L-2", 1), _keep("L-3", 4), living=[other_repo])
    assert _failed(result) == ("decisions[0].canonical: L-60 has another scope than L-1",)


def test_canonical_retired_in_the_same_answer_fails(record: RunRecord, repo: Path) -> None:
    result = _check(
        record,
        repo,
        {"id": "L-1", "revision": 2, "action": "retire", "canonical": "L-2"},
        {"id": "L-2", "revision": 1, "action": "retire", "canonical": "L-3"},
        _keep("L-3", 4),
    )
    assert _failed(result) == ("L-1: canonical L-2 is retired in the same answer",)


def test_a_lesson_cannot_be_its_own_canonical(record: RunRecord, repo: Path) -> None:
    retire = {"id": "L-1", "revision": 2, "action": "retire", "canonical": "L-1"}
    reasons = _failed(_check(record, repo, retire, _keep("L-2", 1), _keep("L-3", 4)))
    assert "cannot be retired into itself" in reasons[0]


def test_adapt_without_a_lesson_fails(record: RunRecord, repo: Path) -> None:
    adapt = {"id": "L-1", "revision": 2, "action": "adapt"}
    reasons = _failed(_check(record, repo, adapt, _keep("L-2", 1), _keep("L-3", 4)))
    assert "needs the new 'lesson'" in reasons[0]


def _adapt(**card: Any) -> dict[str, Any]:
    return {"id": "L-1", "revision": 2, "action": "adapt", "lesson": {**CARD, **card}}


@pytest.mark.parametrize(
    ("card", "expected"),
    [
        ({"title": "t" * 97}, "decisions[0].lesson.title: is 97 bytes in UTF-8; the limit is 96"),
        ({"recommendation": "Be careful and test thoroughly."}, "generic-advice"),
        ({"associations": {}}, "a repository lesson needs one at least"),
        ({"associations": {"files": ["build/out.js"]}}, "files[0]: not a current file"),
        ({"associations": {"files": ["link.js"]}}, "its target build/out.js is ignored"),
        ({"associations": {"files": ["gone.py"]}}, "does not exist"),
        ({"associations": {"files": ["/abs.py"]}}, "is absolute"),
        ({"associations": {"keywords": [["update", "schema"]]}}, "broad word"),
        ({"associations": {"keywords": [["openapi"]]}}, "needs 2 to 4 distinct terms"),
    ],
)
def test_an_adapted_lesson_passes_the_content_checks(
    record: RunRecord, repo: Path, card: dict[str, Any], expected: str
) -> None:
    reasons = _failed(_check(record, repo, _adapt(**card), _keep("L-2", 1), _keep("L-3", 4)))
    assert any(expected in r for r in reasons), reasons


def test_an_adapted_lesson_may_name_an_untracked_current_file(
    record: RunRecord, repo: Path
) -> None:
    adapt = _adapt(associations={"files": ["notes.md"], "folders": ["docs"]})
    assert isinstance(_check(record, repo, adapt, _keep("L-2", 1), _keep("L-3", 4)), Reconciled)


def test_adapted_files_cannot_be_verified_without_a_checkout(record: RunRecord, repo: Path) -> None:
    task = build_repository_maintenance(record, _batch(), checkout=None)
    answer = MaintenanceAnswer.model_validate(
        {"decisions": [_adapt(), _keep("L-2", 1), _keep("L-3", 4)]}
    )
    reasons = _failed(check_maintenance(task, answer, checkout=None))
    assert reasons == (
        "decisions[0].lesson.associations.files: no checkout to verify them against",
    )


def test_an_empty_batch_needs_an_empty_answer(record: RunRecord, repo: Path) -> None:
    task = build_repository_maintenance(record, [], checkout=checkout(repo))
    empty = MaintenanceAnswer.model_validate({"decisions": []})
    assert isinstance(check_maintenance(task, empty, checkout=None), Reconciled)
    extra = MaintenanceAnswer.model_validate({"decisions": [_keep("L-1", 2)]})
    assert isinstance(check_maintenance(task, extra, checkout=None), Failed)


# --- graph maintenance ----------------------------------------------------------------


def test_graph_maintenance_rejects_a_repository_lesson_id(record: RunRecord) -> None:
    graph = record.graph.hash if record.graph else None
    assert graph is not None
    task = build_graph_maintenance(record, [graph_lesson("G-1", 2, graph=graph)])
    answer = MaintenanceAnswer.model_validate(
        {"decisions": [_keep("G-1", 2), {"id": "L-1", "revision": 2, "action": "retire"}]}
    )
    reasons = _failed(check_maintenance(task, answer, checkout=None))
    assert reasons == (
        "decisions[1]: 'L-1' is not supplied to you (unknown, or another scope's lesson)",
    )


def test_a_graph_lesson_may_be_adapted_without_associations(record: RunRecord) -> None:
    graph = record.graph.hash if record.graph and record.graph.hash else ""
    task = build_graph_maintenance(record, [graph_lesson("G-1", 2, graph=graph)])
    card = {"title": "Lint first", "recommendation": "Run `make lint` before finishing."}
    answer = MaintenanceAnswer.model_validate(
        {"decisions": [{"id": "G-1", "revision": 2, "action": "adapt", "lesson": card}]}
    )
    result = check_maintenance(task, answer, checkout=None)
    assert isinstance(result, Reconciled)
    [adapt] = maintenance_mutations(result, run_id="run-1", model=None)
    assert isinstance(adapt, AdaptLesson) and adapt.author.specialist == "graph_maintenance"


def test_graph_canonical_must_be_for_the_same_node(record: RunRecord) -> None:
    graph = record.graph.hash if record.graph and record.graph.hash else ""
    batch = [graph_lesson("G-1", 1, graph=graph), graph_lesson("G-2", 1, graph=graph, node="code")]
    task = build_graph_maintenance(record, batch)
    answer = MaintenanceAnswer.model_validate(
        {
            "decisions": [
                {"id": "G-1", "revision": 1, "action": "retire", "canonical": "G-2"},
                _keep("G-2", 1),
            ]
        }
    )
    assert _failed(check_maintenance(task, answer, checkout=None)) == (
        "decisions[0].canonical: G-2 has another scope than G-1",
    )


def test_deferring_an_already_deferred_lesson_changes_nothing(
    record: RunRecord, repo: Path
) -> None:
    deferred = repo_lesson("L-1", 2).model_copy(update={"status": "deferred"})
    task = build_repository_maintenance(record, [deferred, repo_lesson("L-2", 1)], checkout=None)
    answer = MaintenanceAnswer.model_validate(
        {
            "decisions": [
                {"id": "L-1", "revision": 2, "action": "defer"},
                {"id": "L-2", "revision": 1, "action": "defer"},
            ]
        }
    )
    result = check_maintenance(task, answer, checkout=None)
    assert isinstance(result, Reconciled)
    [defer] = maintenance_mutations(result, run_id="run-1", model=None)
    assert isinstance(defer, DeferLesson) and defer.id == "L-2"
