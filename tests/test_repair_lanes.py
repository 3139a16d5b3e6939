"""One repair turn in every lane (issue 27, SPEC §6), shown on whole postmortems of the
bundled example through `active-memory postmortem --lane …`: repository discovery's first
answer has an unknown field (`confidence`) and cites lines 200-260 of a 27-line file;
one repair turn lists both and the repaired lesson is published. A destructive card is
refused by its rule's name with no repair turn.

Lanes here: the API (Anthropic and OpenAI against the fake model server), the exchange
lane (task files answered by a host thread) and replay (a recorded answer that breaks a
safety rule is not repaired: asking would miss a recording). The real `claude -p` and
`codex exec` lanes are in tests/test_repair_lanes_real.py; replaying a recorded repair
is tests/test_postmortem_cli.py's report test on the example's recordings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.model_server import ModelServer
from repair_support import (
    RECORDINGS,
    RUN,
    ExchangeAnswerer,
    assert_refused_without_repair,
    assert_repaired_and_published,
    destructive_answer,
    discovery_requests,
    example_checkout,
    first_answer,
    responder,
    run_cli,
    runtime,
)

API = {
    "anthropic": ("claude", ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]),
    "openai": ("codex", ["OPENAI_API_KEY", "OPENAI_BASE_URL"]),
}


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return example_checkout(tmp_path, monkeypatch)


def _api_postmortem(
    provider: str,
    first: dict[str, Any],
    checkout: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[dict[str, Any], ModelServer]:
    harness, env = API[provider]
    config = runtime(tmp_path, harness, provider, env)
    with ModelServer(respond=responder(first)) as server:
        if provider == "anthropic":
            monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-REPAIRLANEkey0123456789")
            monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        else:
            monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-REPAIRLANEkey0123456789abcdef")
            monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        code, out, err = run_cli(
            "postmortem", str(RUN), "--checkout", str(checkout), "--config", str(config),
            "--lane", "api", "--json",
        )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["lane"]["name"] == "api"
    return report, server


@pytest.mark.parametrize("provider", sorted(API))
def test_api_lane_repairs_an_unknown_field_and_a_citation_in_one_turn(
    provider: str, checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, server = _api_postmortem(provider, first_answer(), checkout, tmp_path, monkeypatch)
    asked, repairs = discovery_requests(server.model_requests())
    assert len(asked) == 2 and len(repairs) == 1  # the answer, and one repair turn
    assert_repaired_and_published(report, repairs[0].dump())
    assert report["specialists"]["repository_discovery"]["usage"]["requests"] == 2


@pytest.mark.parametrize("provider", sorted(API))
def test_api_lane_refuses_a_destructive_card_with_no_repair_turn(
    provider: str, checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, server = _api_postmortem(
        provider, destructive_answer(), checkout, tmp_path, monkeypatch
    )
    asked, repairs = discovery_requests(server.model_requests())
    assert len(asked) == 1 and repairs == []
    assert_refused_without_repair(report)


def _exchange_postmortem(
    first: dict[str, Any], checkout: Path, tmp_path: Path
) -> tuple[dict[str, Any], ExchangeAnswerer]:
    folder = tmp_path / "exchange"
    with ExchangeAnswerer(folder, first) as host:
        code, out, err = run_cli(
            "postmortem", str(RUN), "--checkout", str(checkout), "--lane", "exchange",
            "--exchange-dir", str(folder), "--json",
        )  # fmt: skip
    assert code == 0, err
    return json.loads(out), host


def test_exchange_lane_repairs_through_a_repair_task_file(checkout: Path, tmp_path: Path) -> None:
    report, host = _exchange_postmortem(first_answer(), checkout, tmp_path)
    repairs = {name: task for name, task in host.tasks.items() if ".repair." in name}
    [(name, repair)] = repairs.items()
    # The documented name: the first task's `<specialist>-<digest16>`, then `.repair`.
    first_name = name.replace(".repair.task.json", ".task.json")
    assert name.startswith("repository_discovery-") and repair["repair_of"] == first_name
    assert first_name in host.tasks
    failures = "\n".join(repair["failures"])
    assert_repaired_and_published(report, failures)
    assert repair["messages"][-1]["content"].count("\n- ") == len(repair["failures"])
    # Every task file carries its deadline: an absolute time and the seconds left.
    for task in host.tasks.values():
        assert task["deadline"] is not None and 0 < task["seconds_left"] <= 120


def test_exchange_lane_refuses_a_destructive_card_with_no_repair_file(
    checkout: Path, tmp_path: Path
) -> None:
    report, host = _exchange_postmortem(destructive_answer(), checkout, tmp_path)
    assert not [name for name in host.tasks if ".repair." in name]
    assert_refused_without_repair(report)


def test_replay_lane_refuses_a_recorded_destructive_card_without_asking_a_repair(
    checkout: Path, tmp_path: Path
) -> None:
    # The example's recordings with repository discovery's first answers made destructive:
    # a repair turn would have no recording and fail the specialist; none is asked.
    document = json.loads(RECORDINGS.read_text())
    for recording in document["recordings"]:
        if (
            recording["specialist"] == "repository_discovery"
            and len(recording["answer"]["lessons"]) == 2
        ):
            recording["answer"] = destructive_answer()
    recordings = tmp_path / "recordings.json"
    recordings.write_text(json.dumps(document))
    code, out, err = run_cli(
        "postmortem", str(RUN), "--checkout", str(checkout), "--replay", str(recordings), "--json"
    )
    assert code == 0, err
    assert_refused_without_repair(json.loads(out))
