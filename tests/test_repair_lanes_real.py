"""One repair turn in the real `claude -p` and `codex exec` lanes (issue 27, SPEC §6):
whole postmortems of the bundled example against the fake model server, with an
isolated HOME. Repository discovery's first answer has an unknown field and an
out-of-range citation; our one repair turn lists both and the repaired lesson is
published. A destructive card is refused by its rule's name with no repair turn.

Claude Code validates its StructuredOutput against our schema itself and retries (at
most twice, `MAX_STRUCTURED_OUTPUT_RETRIES`): those are its own requests inside the
first turn; what is counted here is our repair turn, a request that carries our repair
message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.harness import codex_config, isolated_home, require_harness
from fakes.model_server import ModelServer
from repair_support import (
    RUN,
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


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return example_checkout(tmp_path, monkeypatch)


def _claude(
    first: dict[str, Any], checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], ModelServer]:
    claude = require_harness("claude")
    config = runtime(tmp_path, "claude", "anthropic", ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"])
    with ModelServer(respond=responder(first)) as server:
        for name, value in isolated_home(tmp_path).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-REPAIRCLIkey0123456789")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ACTIVE_MEMORY_CLAUDE_BIN", str(claude))
        code, out, err = run_cli(
            "postmortem", str(RUN), "--checkout", str(checkout), "--config", str(config),
            "--lane", "claude", "--json",
        )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["lane"]["name"] == "claude"
    return report, server


def _codex(
    first: dict[str, Any], checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], ModelServer]:
    codex = require_harness("codex")
    config = runtime(tmp_path, "codex", "openai", ["OPENAI_API_KEY"])
    with ModelServer(respond=responder(first)) as server:
        home = isolated_home(tmp_path)
        for name, value in home.items():
            monkeypatch.setenv(name, value)
        codex_config(Path(home["CODEX_HOME"]), server.openai_url, key_name="OPENAI_API_KEY")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-REPAIRCLIkey0123456789abcdef")
        monkeypatch.setenv("ACTIVE_MEMORY_CODEX_BIN", str(codex))
        code, out, err = run_cli(
            "postmortem", str(RUN), "--checkout", str(checkout), "--config", str(config),
            "--lane", "codex", "--json",
        )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["lane"]["name"] == "codex"
    return report, server


def test_claude_lane_repairs_an_unknown_field_and_a_citation_in_one_turn(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, server = _claude(first_answer(), checkout, tmp_path, monkeypatch)
    asked, repairs = discovery_requests(server.model_requests())
    assert len(repairs) == 1  # one repair turn (a new claude -p run carrying the talk)
    assert repairs[0] is asked[-1]
    assert_repaired_and_published(report, repairs[0].dump())


def test_claude_lane_refuses_a_destructive_card_with_no_repair_turn(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, server = _claude(destructive_answer(), checkout, tmp_path, monkeypatch)
    asked, repairs = discovery_requests(server.model_requests())
    assert len(asked) == 1 and repairs == []
    assert_refused_without_repair(report)


def test_codex_lane_repairs_an_unknown_field_and_a_citation_in_one_turn(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, server = _codex(first_answer(), checkout, tmp_path, monkeypatch)
    asked, repairs = discovery_requests(server.model_requests())
    # codex resumes its thread for the repair: the request carries the whole thread.
    assert len(repairs) == 1 and repairs[0] is asked[-1]
    assert_repaired_and_published(report, repairs[0].dump())
    assert report["specialists"]["repository_discovery"]["usage"]["requests"] == len(asked)


def test_codex_lane_refuses_a_destructive_card_with_no_repair_turn(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, server = _codex(destructive_answer(), checkout, tmp_path, monkeypatch)
    asked, repairs = discovery_requests(server.model_requests())
    assert len(asked) == 1 and repairs == []
    assert_refused_without_repair(report)
