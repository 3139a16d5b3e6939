"""OpenAI, OpenRouter and OpenAI-compatible servers: the real `openai` SDK against fakes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest
from fakes.http_server import FakeServer, Scripted
from fakes.lanes import BAD, GOOD, OPENAI_KEY, OPENROUTER_KEY, Discoveries, lane
from fakes.network import NetworkGuard
from fakes.wire import openai_completion, openai_error, vllm_error

from active_memory.config import SpecialistLane
from active_memory.errors import ProviderError, SpecialistFailed, SpecialistTimedOut
from active_memory.specialists.kinds import SPECIALISTS
from active_memory.specialists.providers import RetryPolicy, SessionOptions, open_session
from active_memory.specialists.providers.openai_api import OpenAICompatibleSession

FAST = RetryPolicy(attempts=3, initial_wait=0.01, max_wait=0.05)
CODEX_LANE = lane(harness="codex", provider="openai", model="gpt-5", env=["OPENAI_API_KEY"])
ROUTER_LANE = lane(
    harness="codex",
    provider="openrouter",
    model="openai/gpt-5",
    effort="max",
    env=[],
    connections={"openrouter": ["OPENROUTER_API_KEY"]},
)
ENV = {"OPENAI_API_KEY": OPENAI_KEY, "OPENROUTER_API_KEY": OPENROUTER_KEY}


@pytest.fixture(autouse=True)
def local_network_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    guard = NetworkGuard()
    guard.install(monkeypatch)
    yield
    guard.check()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def session_for(
    server: FakeServer,
    lane: SpecialistLane = CODEX_LANE,
    seconds: float = 10.0,
    send_effort: bool | None = None,
) -> OpenAICompatibleSession:
    opened = open_session(
        lane,
        "graph_discovery",
        deadline=anyio.current_time() + seconds,
        options=SessionOptions(base_url=server.url + "/v1", retry=FAST, send_effort=send_effort),
        environ=ENV,
    )
    assert isinstance(opened, OpenAICompatibleSession)
    return opened


@pytest.mark.asyncio
async def test_answer_with_json_schema_response_format(server: FakeServer) -> None:
    server.script(openai_completion(GOOD, prompt_tokens=90, completion_tokens=12))
    session = session_for(server, send_effort=True)
    try:
        reply = await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert reply.answer == Discoveries.model_validate(GOOD)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (90, 12)
    sent = server.received[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert sent.body["response_format"]["type"] == "json_schema"
    assert sent.body["response_format"]["json_schema"]["name"] == "Discoveries"
    assert sent.body["reasoning_effort"] == "high"
    assert sent.body["messages"][0]["role"] == "system"


@pytest.mark.asyncio
async def test_self_hosted_server_gets_no_effort_by_default(server: FakeServer) -> None:
    server.script(openai_completion(GOOD))
    session = session_for(server)
    try:
        await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert "reasoning_effort" not in server.received[0].body


@pytest.mark.asyncio
async def test_openrouter_reports_cost_and_gets_max_effort(server: FakeServer) -> None:
    server.script(openai_completion(GOOD, cost=0.00078))
    session = session_for(server, lane=ROUTER_LANE)
    try:
        reply = await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert reply.usage.cost_usd == pytest.approx(0.00078)
    assert session.provider == "openrouter"
    sent = server.received[0]
    assert sent.headers["authorization"] == f"Bearer {OPENROUTER_KEY}"
    assert sent.body["reasoning_effort"] == "max"
    assert sent.body["model"] == "openai/gpt-5"


@pytest.mark.asyncio
async def test_server_without_json_schema_falls_back_to_json_mode(server: FakeServer) -> None:
    server.script(
        vllm_error(400, "response_format type json_schema is not supported by this model"),
        openai_completion(GOOD),
        openai_completion(GOOD),
    )
    session = session_for(server)
    try:
        await session.ask("What recurs?", Discoveries)
        await session.ask("And now?", Discoveries)
    finally:
        await session.aclose()
    formats = [r.body.get("response_format") for r in server.received]
    assert formats[0]["type"] == "json_schema"
    assert formats[1:] == [{"type": "json_object"}, {"type": "json_object"}]
    assert session.format_mode == "json_object"


@pytest.mark.asyncio
async def test_server_without_any_json_mode_is_asked_plainly(server: FakeServer) -> None:
    server.script(
        openai_error(400, "Unsupported parameter: 'response_format'", param="response_format"),
        openai_error(400, "'response_format' of type 'json_object' is not supported"),
        openai_completion(GOOD),
    )
    session = session_for(server)
    try:
        reply = await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert reply.answer.lessons[0].title == "Regenerate the client"
    assert "response_format" not in server.received[2].body
    assert "JSON schema" in server.received[2].body["messages"][0]["content"]


@pytest.mark.asyncio
async def test_rate_limit_then_success_honours_retry_after_ms(server: FakeServer) -> None:
    server.script(
        openai_error(429, "Rate limit reached for requests", code="rate_limit_exceeded",
                     retry_after_ms="400"),
        openai_completion(GOOD),
    )  # fmt: skip
    session = session_for(server)
    try:
        await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    gap = server.received[1].at - server.received[0].at
    assert 0.35 <= gap < 2, gap


@pytest.mark.asyncio
async def test_server_error_three_times_fails(server: FakeServer) -> None:
    server.script(
        *[openai_error(500, "The server had an error while processing your request.")] * 3
    )
    session = session_for(server)
    try:
        with pytest.raises(ProviderError) as caught:
            await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert len(server.received) == 3
    assert caught.value.status_code == 500 and "server had an error" in caught.value.body


@pytest.mark.asyncio
async def test_hanging_server_is_cut_by_the_deadline(server: FakeServer) -> None:
    server.script(Scripted(hang=True))
    session = session_for(server, seconds=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(SpecialistTimedOut):
            await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert time.monotonic() - started < 1.5
    assert not session.usage.complete


@pytest.mark.asyncio
async def test_invalid_answer_is_repaired_once(server: FakeServer) -> None:
    server.script(openai_completion(BAD), openai_completion(GOOD))
    session = session_for(server)
    try:
        reply = await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert reply.turns == 2
    repair = server.received[1].body["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert "lessons[0].evidence" in repair[3]["content"]


@pytest.mark.asyncio
async def test_refusal_is_a_typed_failure(server: FakeServer) -> None:
    server.script(openai_completion(None, refusal="I can't help with that."))
    session = session_for(server)
    try:
        with pytest.raises(SpecialistFailed) as caught:
            await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert caught.value.kind == "refusal" and "can't help" in caught.value.detail


@pytest.mark.asyncio
async def test_empty_choices_are_an_empty_answer(server: FakeServer) -> None:
    empty = openai_completion(GOOD)
    empty.body["choices"] = []
    server.script(empty, empty)
    session = session_for(server)
    try:
        with pytest.raises(SpecialistFailed) as caught:
            await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert caught.value.kind == "empty_answer"


@pytest.mark.asyncio
async def test_answer_echoing_the_key_is_masked_in_the_failure(server: FakeServer) -> None:
    server.script(*[openai_completion(f"my key is {OPENAI_KEY}, not JSON")] * 2)
    session = session_for(server)
    try:
        with pytest.raises(SpecialistFailed) as caught:
            await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert caught.value.kind == "not_json"
    assert OPENAI_KEY not in str(caught.value) and "my key is ***" in caught.value.detail


@pytest.mark.asyncio
async def test_four_sessions_run_concurrently_with_their_own_usage(server: FakeServer) -> None:
    server.script(*[openai_completion(GOOD, prompt_tokens=10, completion_tokens=1, cost=0.5)] * 4)
    sessions = [
        open_session(
            ROUTER_LANE,
            name,
            deadline=anyio.current_time() + 10,
            options=SessionOptions(base_url=server.url + "/v1", retry=FAST),
            environ=ENV,
        )
        for name in SPECIALISTS
    ]
    try:
        async with anyio.create_task_group() as group:
            for session in sessions:
                group.start_soon(session.ask, "What recurs?", Discoveries)
    finally:
        for session in sessions:
            await session.aclose()
    assert len(server.received) == 4
    for session in sessions:
        assert (session.usage.input_tokens, session.usage.requests) == (10, 1)
        assert session.usage.cost_usd == pytest.approx(0.5)
