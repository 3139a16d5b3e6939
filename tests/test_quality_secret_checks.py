"""Secrets in specialist answers: a proposal or an adapt decision that carries a credential
is refused through the ordinary checks, with the secret masked in every reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from specialist_builders import (
    checkout,
    make_repo,
    proposal,
    repo_lesson,
    timeouts_record,
)

from active_memory.runlog.record import RunRecord
from active_memory.specialists.answers import MaintenanceAnswer, RepositoryDiscoveryAnswer
from active_memory.specialists.checks import (
    DiscoveryResult,
    Failed,
    check_discovery,
    check_maintenance,
)
from active_memory.specialists.mutations import mutations
from active_memory.specialists.tasks import build_discovery, build_repository_maintenance

KEY = "ghp" + "_" + "Ab3De5Gh7Jk9Mn2Pq4St6Vw8Yz0Cf1HjQr4t"  # a fake GitHub token
PASSWORD_URL = "postgresql://deploy:" + "Tr0ub4dor3@db.internal/app"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


@pytest.fixture
def record(tmp_path: Path, repo: Path) -> RunRecord:
    return timeouts_record(tmp_path, repo)


def _discover(record: RunRecord, repo: Path, *proposals: dict[str, Any]) -> DiscoveryResult:
    task = build_discovery("repository_discovery", record)
    [evidence] = [item.id for item in task.evidence if item.kind == "timeout_crash"]
    lessons = [{**p, "evidence": [evidence]} for p in proposals]
    answer = RepositoryDiscoveryAnswer.model_validate({"lessons": lessons})
    return check_discovery(task, answer, checkout=checkout(repo))


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"title": f"Use the token {KEY} for the registry"}, "lessons[0].title"),
        (
            {"recommendation": f"Export GH_TOKEN={KEY} before `make api-client`."},
            "lessons[0].recommendation",
        ),
        ({"why_recurs": f"the CI connects with {PASSWORD_URL}"}, "lessons[0].why_recurs"),
        (
            {"citations": [{"path": "api/schema.json"}, {"path": f"secrets/{KEY}.txt"}]},
            "lessons[0].citations[1].path",
        ),
    ],
)
def test_a_proposal_with_a_credential_is_refused_and_the_secret_masked(
    record: RunRecord, repo: Path, changes: dict[str, Any], field: str
) -> None:
    result = _discover(record, repo, proposal(**changes))
    assert result.accepted == () and mutations(result, run_id="r", model=None) == []
    [rejection] = result.rejected
    assert f"{field}: contains a credential" in rejection.reason
    report = json.dumps(rejection.to_json())
    assert KEY not in report and "Tr0ub4dor3" not in report
    assert "[REDACTED:" in report


def test_a_clean_proposal_beside_a_leaking_one_is_still_accepted(
    record: RunRecord, repo: Path
) -> None:
    leaking = proposal(title="Authenticate with the deploy key", recommendation=f"Use {KEY}.")
    result = _discover(record, repo, proposal(), leaking)
    assert [a.index for a in result.accepted] == [0]
    assert [r.index for r in result.rejected] == [1]


def test_look_alikes_in_a_proposal_pass_the_screening(record: RunRecord, repo: Path) -> None:
    text = (
        "After editing `api/schema.json` run `make api-client`; pass TOKEN=${GITHUB_TOKEN} "
        "from the environment and never hand-edit `src/generated/client.ts`."
    )
    result = _discover(record, repo, proposal(recommendation=text))
    assert result.rejected == () and len(result.accepted) == 1


def test_an_adapt_decision_with_a_credential_fails_the_batch_masked(
    record: RunRecord, repo: Path
) -> None:
    batch = [repo_lesson("L-1", 2)]
    task = build_repository_maintenance(record, batch, checkout=checkout(repo), living=[])
    card = {
        "title": "Regenerate the client with make api-client",
        "recommendation": f"After editing `api/schema.json` run `make api-client` with {KEY}.",
        "associations": {"files": ["api/schema.json"]},
    }
    decision = {"id": "L-1", "revision": 2, "action": "adapt", "reason": "x", "lesson": card}
    answer = MaintenanceAnswer.model_validate({"decisions": [decision]})
    result = check_maintenance(task, answer, checkout=checkout(repo))
    assert isinstance(result, Failed)
    assert mutations(result, run_id="r", model=None) == []
    assert any(
        "decisions[0].lesson.recommendation: contains a credential" in r for r in result.reasons
    )
    assert KEY not in result.reason and "[REDACTED:github-token]" in result.reason


def test_an_adapt_screens_what_it_changes_not_the_stored_card_again(
    record: RunRecord, repo: Path
) -> None:
    # Stored before the screen knew this shape: an adapt that keeps the title unchanged is
    # judged on what it changes; one that writes the credential anew is refused.
    stored_title = f"Rotate {KEY} yearly"
    batch = [repo_lesson("L-1", 2, title=stored_title)]
    task = build_repository_maintenance(record, batch, checkout=checkout(repo), living=[])

    def decide(title: str) -> Any:
        card = {"title": title, "recommendation": "After editing `api/schema.json` run "
                "`make api-client` and commit the client.",
                "associations": {"files": ["api/schema.json"]}}  # fmt: skip
        decision = {"id": "L-1", "revision": 2, "action": "adapt", "reason": "x", "lesson": card}
        answer = MaintenanceAnswer.model_validate({"decisions": [decision]})
        return check_maintenance(task, answer, checkout=checkout(repo))

    assert not isinstance(decide(stored_title), Failed)
    changed = decide(f"Rotate {KEY} every year")
    assert isinstance(changed, Failed) and "decisions[0].lesson.title" in changed.reason
