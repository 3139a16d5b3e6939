"""Discovery answers (SPEC §5, §6): every check refuses a violating proposal with its reason,
and a refused proposal never becomes a mutation. Real git checkouts, real run records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from specialist_builders import (
    NAMESPACE,
    checkout,
    make_repo,
    proposal,
    rejections_record,
    timeouts_record,
)

from active_memory.checkout import Checkout
from active_memory.lessons import (
    RECOMMENDATION_MAX_BYTES,
    TITLE_MAX_BYTES,
    CreateLesson,
    GraphScope,
    RepositoryScope,
)
from active_memory.runlog.record import RunRecord
from active_memory.specialists.answers import GraphDiscoveryAnswer, RepositoryDiscoveryAnswer
from active_memory.specialists.checks import MAX_PROPOSALS, DiscoveryResult, check_discovery
from active_memory.specialists.mutations import discovery_mutations, mutations
from active_memory.specialists.tasks import DiscoveryTask, build_discovery


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.fixture
def record(tmp_path: Path, repo: Path) -> RunRecord:
    return timeouts_record(tmp_path, repo)


def _ids(task: DiscoveryTask) -> dict[str, str]:
    return {item.kind: item.id for item in task.evidence}


def _repository(
    record: RunRecord, repo: Path | None, *proposals: dict[str, Any]
) -> tuple[DiscoveryResult, DiscoveryTask]:
    task = build_discovery("repository_discovery", record)
    evidence = _ids(task)["timeout_crash"]
    lessons = [{**p, "evidence": p["evidence"] or [evidence]} for p in proposals]
    answer = RepositoryDiscoveryAnswer.model_validate({"lessons": lessons})
    found = check_discovery(task, answer, checkout=checkout(repo) if repo else None)
    return found, task


def _refused(result: DiscoveryResult) -> str:
    """The single rejection's reason; the answer must yield no mutation."""
    assert result.accepted == ()
    assert mutations(result, run_id="run-1", model="m") == []
    [rejection] = result.rejected
    return rejection.reason


def test_a_qualifying_repository_proposal_becomes_one_create(record: RunRecord, repo: Path) -> None:
    result, task = _repository(record, repo, proposal())
    assert result.rejected == ()
    [accepted] = result.accepted
    assert accepted.scope == RepositoryScope(repository=NAMESPACE)
    [create] = discovery_mutations(result, run_id="run-1", model="claude-sonnet-5")
    assert isinstance(create, CreateLesson)
    assert create.scope == RepositoryScope(repository=NAMESPACE)
    assert create.author.specialist == "repository_discovery"
    assert create.author.run_id == "run-1" and create.author.model == "claude-sonnet-5"
    assert create.evidence.run_ids == ["run-1"]
    assert create.evidence.evidence_ids == [_ids(task)["timeout_crash"]]
    assert [c.path for c in create.evidence.citations] == ["api/schema.json"]
    assert create.reason == "every API change edits the schema"


def test_an_empty_answer_is_accepted_with_nothing_to_publish(record: RunRecord, repo: Path) -> None:
    result, _ = _repository(record, repo)
    assert result.accepted == () and result.rejected == ()
    assert mutations(result, run_id="run-1", model=None) == []


def test_a_title_over_the_byte_limit_is_refused(record: RunRecord, repo: Path) -> None:
    title = "é" * (TITLE_MAX_BYTES // 2 + 1)  # fewer characters than bytes
    reason = _refused(_repository(record, repo, proposal(title=title))[0])
    assert "lessons[0].title" in reason and f"the limit is {TITLE_MAX_BYTES} bytes" in reason


def test_a_recommendation_over_the_byte_limit_is_refused(record: RunRecord, repo: Path) -> None:
    text = "Run `make api-client` after editing api/schema.json. " * 20
    assert len(text.encode()) > RECOMMENDATION_MAX_BYTES
    reason = _refused(_repository(record, repo, proposal(recommendation=text))[0])
    assert "lessons[0].recommendation" in reason and "bytes" in reason


def test_unknown_evidence_is_refused(record: RunRecord, repo: Path) -> None:
    reason = _refused(_repository(record, repo, proposal(evidence=["ev-tc-000000000000"]))[0])
    assert "'ev-tc-000000000000' is not an evidence item of this task" in reason


def test_a_proposal_without_evidence_is_refused(record: RunRecord, repo: Path) -> None:
    task = build_discovery("repository_discovery", record)
    answer = RepositoryDiscoveryAnswer.model_validate({"lessons": [proposal(evidence=[])]})
    reason = _refused(check_discovery(task, answer, checkout=checkout(repo)))
    assert "lessons[0].evidence" in reason


def test_generic_advice_is_refused(record: RunRecord, repo: Path) -> None:
    advice = proposal(recommendation="Be careful when editing the schema and test thoroughly.")
    reason = _refused(_repository(record, repo, advice)[0])
    assert "lessons[0].recommendation: generic-advice" in reason


@pytest.mark.parametrize(
    ("cited", "expected"),
    [
        ("gone/nowhere.json", "does not exist"),
        ("build/out.js", "ignored by git"),
        ("link.js", "its target build/out.js is ignored"),
        ("/etc/passwd", "citations[0].path: '/etc/passwd' is absolute"),
        ("../outside.py", "leaves the checkout root"),
    ],
)
def test_a_citation_that_is_not_a_current_file_is_refused(
    record: RunRecord, repo: Path, cited: str, expected: str
) -> None:
    bad = proposal(citations=[{"path": cited}], associations={"folders": ["build"]})
    reason = _refused(_repository(record, repo, bad)[0])
    assert expected in reason


def test_a_cited_line_range_must_lie_inside_the_current_file(record: RunRecord, repo: Path) -> None:
    past = proposal(citations=[{"path": "api/schema.json", "lines": "1-3"}])
    reason = _refused(_repository(record, repo, past)[0])
    expected = "citations[0]: citation-lines: lines 1-3 are not inside api/schema.json"
    assert f"{expected}, which has 1 lines now" in reason
    (repo / "api" / "schema.json").write_text('{\r\n"openapi": "3.1.0"\r\n}\r\n')
    result, _ = _repository(record, repo, past)
    assert len(result.accepted) == 1, result.rejected  # three lines now (CRLF counted once)


def test_an_untracked_file_that_is_not_ignored_may_be_cited(record: RunRecord, repo: Path) -> None:
    fine = proposal(citations=[{"path": "notes.md"}], associations={"files": ["notes.md"]})
    result, _ = _repository(record, repo, fine)
    assert len(result.accepted) == 1, result.rejected


def test_a_repository_proposal_must_cite_a_file(record: RunRecord, repo: Path) -> None:
    reason = _refused(_repository(record, repo, proposal(citations=[]))[0])
    assert "must cite a current file" in reason


def test_a_repository_proposal_needs_an_association(record: RunRecord, repo: Path) -> None:
    reason = _refused(_repository(record, repo, proposal(associations={}))[0])
    assert "lessons[0].associations: a repository lesson needs one at least" in reason


def test_an_association_that_matches_no_cited_file_is_refused(
    record: RunRecord, repo: Path
) -> None:
    elsewhere = proposal(associations={"folders": ["src"], "identifiers": ["nowhere_name"]})
    reason = _refused(_repository(record, repo, elsewhere)[0])
    assert "associations: none matches a cited file" in reason


def test_a_folder_or_a_verified_identifier_matches_the_cited_file(
    record: RunRecord, repo: Path
) -> None:
    by_folder = proposal(
        title="Folder match",
        citations=[{"path": "src/generated/client.ts"}],
        associations={"folders": ["src/generated"]},
    )
    by_identifier = proposal(
        title="Identifier match",
        citations=[{"path": "src/generated/client.ts"}],
        associations={"identifiers": ["regenerate_client"]},
    )
    result, _ = _repository(record, repo, by_folder, by_identifier)
    assert [a.index for a in result.accepted] == [0, 1], result.rejected


def test_a_broad_keyword_group_is_refused(record: RunRecord, repo: Path) -> None:
    broad = proposal(associations={"files": ["api/schema.json"], "keywords": [["test", "fix"]]})
    reason = _refused(_repository(record, repo, broad)[0])
    assert "broad word" in reason


def test_a_bare_program_as_a_command_is_refused(record: RunRecord, repo: Path) -> None:
    bare = proposal(associations={"files": ["api/schema.json"], "commands": ["git"]})
    reason = _refused(_repository(record, repo, bare)[0])
    assert "command 'git' is a bare program, too broad" in reason


def test_a_command_association_is_kept_as_its_family(record: RunRecord, repo: Path) -> None:
    written = {"files": ["api/schema.json"], "commands": ["cd api && timeout 60 make api-client"]}
    result, _ = _repository(record, repo, proposal(associations=written))
    [accepted] = result.accepted
    assert accepted.proposal.associations.commands == ["make api-client"]


def test_without_a_checkout_citations_cannot_be_verified(record: RunRecord) -> None:
    reason = _refused(_repository(record, None, proposal())[0])
    assert "no checkout to verify them against" in reason


def test_a_repeated_title_is_refused_and_the_first_kept(record: RunRecord, repo: Path) -> None:
    result, _ = _repository(record, repo, proposal(), proposal())
    assert [a.index for a in result.accepted] == [0]
    [rejection] = result.rejected
    assert rejection.index == 1 and "repeats the title of lessons[0]" in rejection.reason


def test_one_refused_proposal_does_not_sink_the_others(record: RunRecord, repo: Path) -> None:
    result, _ = _repository(
        record, repo, proposal(title="Bad", recommendation="Follow best practices."), proposal()
    )
    assert [a.index for a in result.accepted] == [1]
    assert [(r.index, r.title) for r in result.rejected] == [(0, "Bad")]
    assert len(mutations(result, run_id="run-1", model=None)) == 1


def test_every_violation_of_a_proposal_is_listed(record: RunRecord, repo: Path) -> None:
    bad = proposal(
        title="x" * 200,
        recommendation="Be careful.",
        evidence=["ev-nope"],
        citations=[{"path": "build/out.js"}],
    )
    result, _ = _repository(record, repo, bad)
    [rejection] = result.rejected
    joined = rejection.reason
    for expected in ("title", "generic-advice", "'ev-nope'"):
        assert expected in joined
    assert len(rejection.reasons) >= 3
    assert rejection.to_json()["reasons"] == list(rejection.reasons)


# --- graph discovery ------------------------------------------------------------------


def _graph(
    record: RunRecord, repo: Path | None, *lessons: dict[str, Any]
) -> tuple[DiscoveryResult, DiscoveryTask]:
    task = build_discovery("graph_discovery", record)
    answer = GraphDiscoveryAnswer.model_validate({"lessons": list(lessons)})
    return check_discovery(task, answer, checkout=checkout(repo) if repo else None), task


def _graph_proposal(evidence: str, node: str = "worker", **changes: Any) -> dict[str, Any]:
    data = proposal(evidence=[evidence], node=node, associations={}, citations=[])
    data["recommendation"] = "Before finishing, run `make lint` and fix what it reports."
    data.update(changes)
    return data


def test_a_graph_proposal_targets_an_executed_evidence_node(record: RunRecord) -> None:
    task = build_discovery("graph_discovery", record)
    evidence = _ids(task)["timeout_crash"]
    result, _ = _graph(record, None, _graph_proposal(evidence))
    [accepted] = result.accepted
    assert accepted.scope == GraphScope(graph_hash=task.run.graph_hash or "", node="worker")
    [create] = mutations(result, run_id="run-1", model="m")
    assert isinstance(create, CreateLesson) and create.scope == accepted.scope
    assert create.author.specialist == "graph_discovery"


def test_graph_discovery_may_not_cite_exploration(record: RunRecord) -> None:
    repository_task = build_discovery("repository_discovery", record)
    exploration = _ids(repository_task)["exploration"]
    reason = _refused(_graph(record, None, _graph_proposal(exploration))[0])
    assert f"{exploration!r} is not an evidence item of this task" in reason


def test_exploration_slipped_into_a_graph_task_still_does_not_qualify(record: RunRecord) -> None:
    repository_task = build_discovery("repository_discovery", record)
    graph_task = build_discovery("graph_discovery", record)
    tampered = graph_task.model_copy(update={"evidence": repository_task.evidence})
    exploration = _ids(repository_task)["exploration"]
    answer = GraphDiscoveryAnswer.model_validate({"lessons": [_graph_proposal(exploration)]})
    reason = _refused(check_discovery(tampered, answer, checkout=None))
    assert "exploration evidence, which graph_discovery may not cite" in reason


def test_a_graph_proposal_for_a_node_outside_its_evidence_is_refused(
    tmp_path: Path, repo: Path
) -> None:
    record = rejections_record(tmp_path, repo)
    task = build_discovery("graph_discovery", record)
    [item] = task.evidence
    assert item.kind == "rejected_rounds" and set(item.nodes) == {"worker", "review_repair"}
    result, _ = _graph(record, None, _graph_proposal(item.id, node="acceptance"))
    reason = _refused(result)
    assert "'acceptance' is not a node of the cited evidence" in reason
    result, _ = _graph(record, None, _graph_proposal(item.id, node="review_repair"))
    assert [a.scope.node for a in result.accepted if isinstance(a.scope, GraphScope)] == [
        "review_repair"
    ]


def test_a_graph_proposal_without_a_node_is_refused(record: RunRecord) -> None:
    task = build_discovery("graph_discovery", record)
    evidence = _ids(task)["timeout_crash"]
    reason = _refused(_graph(record, None, _graph_proposal(evidence, node=""))[0])
    assert "lessons[0].node: required" in reason


def test_a_graph_proposal_for_a_node_that_did_not_execute_is_refused(record: RunRecord) -> None:
    task = build_discovery("graph_discovery", record)
    evidence = _ids(task)["timeout_crash"]
    run = task.run.model_copy(update={"executed_nodes": ("acceptance",)})
    shrunk = task.model_copy(update={"run": run})
    answer = GraphDiscoveryAnswer.model_validate({"lessons": [_graph_proposal(evidence)]})
    reason = _refused(check_discovery(shrunk, answer, checkout=None))
    assert "'worker' did not execute in run run-1" in reason


def test_graph_citations_must_be_current_files(record: RunRecord, repo: Path) -> None:
    task = build_discovery("graph_discovery", record)
    evidence = _ids(task)["timeout_crash"]
    cited = _graph_proposal(evidence, citations=[{"path": "build/out.js"}])
    reason = _refused(_graph(record, repo, cited)[0])
    assert "citations[0]: not a current file" in reason
    fine = _graph_proposal(evidence, citations=[{"path": "Makefile"}])
    assert len(_graph(record, repo, fine)[0].accepted) == 1


def test_a_graph_proposal_is_refused_when_the_run_graph_hash_is_unknown(
    tmp_path: Path, repo: Path
) -> None:
    record = timeouts_record(tmp_path, repo)
    data = record.model_dump(mode="json", by_alias=True)
    data["graph"]["hash"] = None
    unhashed = RunRecord.model_validate(data)
    task = build_discovery("graph_discovery", unhashed)
    evidence = _ids(task)["timeout_crash"]
    answer = GraphDiscoveryAnswer.model_validate({"lessons": [_graph_proposal(evidence)]})
    reason = _refused(check_discovery(task, answer, checkout=None))
    assert "graph hash is unknown" in reason


def test_graph_discovery_sees_no_evidence_in_an_exploration_only_run(
    tmp_path: Path, repo: Path, record: RunRecord
) -> None:
    explored = timeouts_record(tmp_path, repo, exploration=True)
    assert any(
        i.kind == "exploration" for i in build_discovery("repository_discovery", explored).evidence
    )
    assert all(
        i.kind != "exploration" for i in build_discovery("graph_discovery", explored).evidence
    )


def test_checks_accept_a_checkout_opened_from_a_subfolder(record: RunRecord, repo: Path) -> None:
    task = build_discovery("repository_discovery", record)
    evidence = _ids(task)["timeout_crash"]
    answer = RepositoryDiscoveryAnswer.model_validate({"lessons": [proposal(evidence=[evidence])]})
    result = check_discovery(task, answer, checkout=Checkout(repo / "src"))
    assert len(result.accepted) == 1


def test_proposals_past_the_cap_are_refused_unchecked(record: RunRecord, repo: Path) -> None:
    many = [proposal(title=f"Lesson number {n}") for n in range(MAX_PROPOSALS + 2)]
    result, _ = _repository(record, repo, *many)
    assert len(result.accepted) == MAX_PROPOSALS
    assert [r.index for r in result.rejected] == [MAX_PROPOSALS, MAX_PROPOSALS + 1]
    assert "only the first 20 proposals are considered" in result.rejected[0].reason


def test_a_symlink_to_a_current_file_may_be_cited(record: RunRecord, repo: Path) -> None:
    (repo / "schema-link.json").symlink_to("api/schema.json")  # untracked, not ignored
    through_link = proposal(citations=[{"path": "schema-link.json"}])  # associates the target
    result, _ = _repository(record, repo, through_link)
    assert len(result.accepted) == 1, result.rejected
