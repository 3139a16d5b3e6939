"""`open_session`: which adapter a lane gets, where its key comes from, and the guards."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.lanes import ANTHROPIC_KEY, OPENAI_KEY, OPENROUTER_KEY, lane
from fakes.network import NetworkGuard, StrayRequest

from active_memory.errors import SpecialistFailed, UsageError
from active_memory.specialists.providers import SessionOptions, Usage, open_session
from active_memory.specialists.providers.anthropic_api import AnthropicSession
from active_memory.specialists.providers.cli_harness import ClaudeCliSession, CodexCliSession
from active_memory.specialists.providers.credentials import Secrets
from active_memory.specialists.providers.exchange import FileExchangeSession
from active_memory.specialists.providers.openai_api import (
    OPENAI_BASE_URL,
    OPENROUTER_BASE_URL,
    OpenAICompatibleSession,
)
from active_memory.specialists.providers.replay import ReplaySession
from active_memory.specialists.providers.retry import retry_after_seconds

ENV = {
    "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
    "OPENAI_API_KEY": OPENAI_KEY,
    "OPENROUTER_API_KEY": OPENROUTER_KEY,
}


@pytest.fixture(autouse=True)
def local_network_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetworkGuard]:
    guard = NetworkGuard()
    guard.install(monkeypatch)
    yield guard
    guard.refused.clear()  # the guard's own test trips it on purpose


@pytest.mark.asyncio
async def test_each_lane_gets_its_adapter(tmp_path: Path) -> None:
    opened = [
        open_session(lane(), "graph_discovery", deadline=None, environ=ENV),
        open_session(
            lane(harness="codex", provider="openai", env=["OPENAI_API_KEY"]),
            "graph_discovery",
            deadline=None,
            environ=ENV,
        ),
        open_session(
            lane(provider="openrouter", env=["OPENROUTER_API_KEY"]),
            "graph_discovery",
            deadline=None,
            environ=ENV,
        ),
    ]
    try:
        anthropic, openai, openrouter = opened
        assert isinstance(anthropic, AnthropicSession)
        assert isinstance(openai, OpenAICompatibleSession)
        assert isinstance(openrouter, OpenAICompatibleSession)
        assert openai.provider == "openai" and openai._base_url == OPENAI_BASE_URL
        assert openrouter.provider == "openrouter" and openrouter._base_url == OPENROUTER_BASE_URL
    finally:
        for session in opened:
            await session.aclose()
    cli = SessionOptions(mode="cli")
    assert isinstance(open_session(lane(), "x", deadline=None, options=cli), ClaudeCliSession)
    codex = lane(harness="codex", provider="openai")
    assert isinstance(open_session(codex, "x", deadline=None, options=cli), CodexCliSession)
    replay = SessionOptions(mode="replay", recordings=tmp_path / "r.json")
    assert isinstance(open_session(lane(), "x", deadline=None, options=replay), ReplaySession)
    files = SessionOptions(mode="exchange", exchange_dir=tmp_path)
    assert isinstance(open_session(lane(), "x", deadline=None, options=files), FileExchangeSession)


@pytest.mark.asyncio
async def test_declared_openai_base_url_points_at_a_compatible_server() -> None:
    local = lane(provider="openai", harness="codex", env=["OPENAI_API_KEY", "OPENAI_BASE_URL"])
    session = open_session(
        local,
        "graph_discovery",
        deadline=None,
        environ={**ENV, "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"},
    )
    try:
        assert isinstance(session, OpenAICompatibleSession)
        assert session._base_url == "http://127.0.0.1:11434/v1"
        assert session._effort is None  # self-hosted servers get no reasoning_effort
    finally:
        await session.aclose()


def test_undeclared_key_is_refused_even_when_set() -> None:
    with pytest.raises(SpecialistFailed) as caught:
        open_session(lane(env=[]), "graph_discovery", deadline=None, environ=ENV)
    assert caught.value.kind == "credentials"
    assert "nodes.worker.env" in caught.value.detail and ANTHROPIC_KEY not in str(caught.value)


def test_declared_but_unset_key_says_set_it() -> None:
    with pytest.raises(SpecialistFailed, match="declared but not set"):
        open_session(lane(), "graph_discovery", deadline=None, environ={})


def test_key_from_a_connection_is_used() -> None:
    connected = lane(env=[], connections={"anthropic": ["ANTHROPIC_API_KEY"]})
    session = open_session(connected, "graph_discovery", deadline=None, environ=ENV)
    assert isinstance(session, AnthropicSession)


def test_replay_without_recordings_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="recordings"):
        open_session(lane(), "x", deadline=None, options=SessionOptions(mode="replay"))


def test_secrets_are_masked_longest_first_and_by_shape() -> None:
    secrets = Secrets(["abcd1234", "abcd1234efgh5678"])
    text = secrets.mask("k=abcd1234efgh5678 j=abcd1234 other=sk-live-0123456789abcdef")
    assert text == "k=*** j=*** other=***"


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_usage_adds_up_and_keeps_unknown_cost_unknown() -> None:
    first = Usage(input_tokens=1, output_tokens=2, requests=1)
    assert first.plus(first).cost_usd is None
    total = first.plus(Usage(cost_usd=0.5, complete=False))
    assert (total.input_tokens, total.cost_usd, total.complete) == (1, 0.5, False)


def test_network_guard_refuses_remote_hosts(local_network_only: NetworkGuard) -> None:
    with pytest.raises(StrayRequest):
        socket.getaddrinfo("api.anthropic.com", 443)
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(StrayRequest):
            probe.connect(("203.0.113.7", 443))
    finally:
        probe.close()
    assert len(local_network_only.refused) == 2
    with pytest.raises(StrayRequest):
        local_network_only.check()
