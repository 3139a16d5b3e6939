"""Choosing the specialists' lane: `--lane`, else the runtime plan (as zeroshot does)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from fakes.cli import install_fake
from orchestrator_support import config as base_config
from run_builder import software_change

from active_memory.config import RuntimeConfig, parse_runtime_settings, resolve_config
from active_memory.errors import UsageError
from active_memory.orchestrator import LaneOptions, choose_lane
from active_memory.runlog.graph import Graph
from active_memory.specialists.providers.anthropic_api import AnthropicSession
from active_memory.specialists.providers.cli_harness import ClaudeCliSession, CodexCliSession
from active_memory.specialists.providers.exchange import FileExchangeSession
from active_memory.specialists.providers.replay import ReplaySession


def plan(
    harness: str = "claude", provider: str = "anthropic", env: list[str] | None = None
) -> RuntimeConfig:
    model = "claude-sonnet-5" if harness == "claude" else "gpt-5"
    node: dict[str, object] = {"kind": "agent", "model": model}
    if env is not None:
        node["env"] = env
    settings = parse_runtime_settings(
        {"harness": harness, "provider": provider, "size": "standard", "nodes": {"worker": node}}
    )
    return resolve_config(settings, Graph.from_json(software_change()))


def bin_dir(tmp_path: Path, *names: str) -> str:
    for name in names:
        install_fake(name, tmp_path)
    return str(tmp_path / "bin")


def open_one(chosen_sessions: object) -> object:
    assert callable(chosen_sessions)
    return chosen_sessions("repository_discovery", deadline=anyio.current_time() + 5)


@pytest.mark.asyncio
async def test_plan_without_a_declared_key_runs_the_harness_cli_in_the_checkout(
    tmp_path: Path,
) -> None:
    path = bin_dir(tmp_path, "claude")
    chosen = choose_lane(plan(), options=LaneOptions(checkout=tmp_path, environ={"PATH": path}))
    assert (chosen.name, chosen.chosen_by) == ("claude", "plan")
    assert "harness claude" in chosen.reason
    assert chosen.executable == f"{path}/claude"
    session = open_one(chosen.sessions)
    assert isinstance(session, ClaudeCliSession)
    assert session.workdir == tmp_path and session.investigates


@pytest.mark.asyncio
async def test_codex_plan_runs_codex_exec(tmp_path: Path) -> None:
    path = bin_dir(tmp_path, "codex")
    chosen = choose_lane(plan("codex", "openai"), options=LaneOptions(environ={"PATH": path}))
    assert chosen.name == "codex"
    session = open_one(chosen.sessions)
    assert isinstance(session, CodexCliSession)
    assert not session.investigates  # no checkout: nothing to read
    await session.aclose()


@pytest.mark.asyncio
async def test_plan_with_its_provider_key_declared_and_set_uses_the_api(tmp_path: Path) -> None:
    config = plan(env=["ANTHROPIC_API_KEY"])
    environ = {"PATH": bin_dir(tmp_path, "claude"), "ANTHROPIC_API_KEY": "sk-ant-x"}
    chosen = choose_lane(config, options=LaneOptions(environ=environ))
    assert (
        chosen.name == "api" and "ANTHROPIC_API_KEY declared by nodes.worker.env" in chosen.reason
    )
    session = open_one(chosen.sessions)
    assert isinstance(session, AnthropicSession)
    await session.aclose()


def test_a_declared_key_that_is_not_set_leaves_the_plan_on_the_harness(tmp_path: Path) -> None:
    config = plan(env=["ANTHROPIC_API_KEY"])
    chosen = choose_lane(config, options=LaneOptions(environ={"PATH": bin_dir(tmp_path, "claude")}))
    assert chosen.name == "claude"


def test_cli_binary_from_its_variable_when_not_on_path(tmp_path: Path) -> None:
    install_fake("claude", tmp_path)
    environ = {"PATH": "/nonexistent", "ACTIVE_MEMORY_CLAUDE_BIN": str(tmp_path / "bin" / "claude")}
    chosen = choose_lane(plan(), "claude", LaneOptions(environ=environ))
    assert (chosen.name, chosen.chosen_by) == ("claude", "option")
    assert chosen.executable == str(tmp_path / "bin" / "claude")


@pytest.mark.asyncio
async def test_replay_and_exchange_lanes(tmp_path: Path) -> None:
    recordings = tmp_path / "recordings.json"
    replay = choose_lane(plan(), options=LaneOptions(recordings=recordings, environ={}))
    assert (replay.name, replay.chosen_by) == ("replay", "option")
    assert isinstance(open_one(replay.sessions), ReplaySession)
    exchange = choose_lane(plan(), "exchange", LaneOptions(exchange_dir=tmp_path, environ={}))
    assert isinstance(open_one(exchange.sessions), FileExchangeSession)


def test_nothing_collects_means_no_sessions() -> None:
    # A plan with no source node (postmortem off, nothing bound) resolves to no lane.
    quiet = base_config(enabled=False).model_copy(update={"lane": None})
    chosen = choose_lane(quiet, "claude", LaneOptions(environ={}))
    assert chosen.sessions is None and chosen.reason == "the postmortem collects nothing"


@pytest.mark.parametrize(
    ("requested", "options", "message"),
    [
        ("replay", LaneOptions(environ={}), "--lane replay needs --replay RECORDINGS.json"),
        ("exchange", LaneOptions(environ={}), "--lane exchange needs --exchange-dir DIR"),
        (
            "claude",
            LaneOptions(recordings=Path("r.json"), environ={}),
            "--replay answers from recordings, which the claude lane does not use",
        ),
        (
            "api",
            LaneOptions(environ={"ANTHROPIC_API_KEY": "sk-ant-x"}),
            "needs ANTHROPIC_API_KEY, which nodes.worker.env does not declare",
        ),
        (
            "codex",
            LaneOptions(environ={"PATH": "/nonexistent"}),
            "the plan's harness is claude (model 'claude-sonnet-5'), which codex exec does not run",
        ),
        (
            "claude",
            LaneOptions(environ={"PATH": "/nonexistent"}),
            "`claude` was not found on PATH; install Claude Code",
        ),
        (
            "claude",
            LaneOptions(environ={"ACTIVE_MEMORY_CLAUDE_BIN": "/nonexistent/claude"}),
            "ACTIVE_MEMORY_CLAUDE_BIN=/nonexistent/claude is not an executable file",
        ),
        (
            None,
            LaneOptions(environ={"PATH": "/nonexistent"}),
            "the claude lane (the plan's harness claude",
        ),
    ],
)
def test_impossible_lanes_are_usage_errors(
    requested: str | None, options: LaneOptions, message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        choose_lane(plan(), requested, options)  # type: ignore[arg-type]
    assert message in str(caught.value)


def test_api_key_declared_but_unset_says_to_export_it() -> None:
    with pytest.raises(UsageError) as caught:
        choose_lane(plan(env=["ANTHROPIC_API_KEY"]), "api", LaneOptions(environ={}))
    assert "ANTHROPIC_API_KEY is declared in nodes.worker.env but not set" in str(caught.value)
