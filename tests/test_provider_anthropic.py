"""The Anthropic lane: the real `anthropic` SDK against a fake Messages API on loopback."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator

import anthropic
import anyio
import pytest
import pytest_asyncio
from fakes.http_server import FakeServer, Scripted
from fakes.lanes import ANTHROPIC_KEY, BAD, GOOD, Discoveries, lane
from fakes.network import NetworkGuard
from fakes.wire import anthropic_error, anthropic_message

from active_memory.errors import ProviderError, SpecialistFailed, SpecialistTimedOut
from active_memory.specialists.answers import answer_schema, example_answer
from active_memory.specialists.kinds import SPECIALISTS
from active_memory.specialists.providers import RetryPolicy, SessionOptions, open_session
from active_memory.specialists.providers.anthropic_api import AnthropicSession

FAST = RetryPolicy(attempts=3, initial_wait=0.01, max_wait=0.05)
ENV = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY}


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


def session_for(server: FakeServer, seconds: float = 10.0) -> AnthropicSession:
    opened = open_session(
        lane(),
        "repository_discovery",
        deadline=anyio.current_time() + seconds,
        options=SessionOptions(base_url=server.url, retry=FAST),
        environ=ENV,
    )
    assert isinstance(opened, AnthropicSession)
    return opened


@pytest_asyncio.fixture
async def session(server: FakeServer) -> AsyncIterator[AnthropicSession]:
    opened = session_for(server)
    yield opened
    await opened.aclose()


@pytest.mark.asyncio
async def test_answer_is_validated_and_usage_counted(
    server: FakeServer, session: AnthropicSession
) -> None:
    server.script(anthropic_message(GOOD, input_tokens=100, cache_read=20, output_tokens=7))
    reply = await session.ask("What recurs?", Discoveries, system="You are a specialist.")
    assert reply.answer == Discoveries.model_validate(GOOD)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (120, 7)
    assert reply.usage.cost_usd is None  # the Messages API reports no cost
    assert reply.turns == 1 and session.usage.complete


@pytest.mark.asyncio
async def test_request_carries_schema_effort_and_key(
    server: FakeServer, session: AnthropicSession
) -> None:
    server.script(anthropic_message(GOOD, thinking=True))
    await session.ask("What recurs?", Discoveries)
    sent = server.received[0]
    assert sent.path == "/v1/messages"
    # This SDK generation sends the key as a bearer token; older ones used x-api-key.
    bearer = sent.headers.get("authorization", "").removeprefix("Bearer ")
    assert ANTHROPIC_KEY in (sent.headers.get("x-api-key"), bearer)
    assert sent.body["model"] == "claude-sonnet-5"
    assert sent.body["output_config"]["effort"] == "high"
    assert sent.body["output_config"]["format"]["type"] == "json_schema"
    assert "lessons" in sent.body["output_config"]["format"]["schema"]["properties"]
    assert sent.body["thinking"] == {"type": "adaptive"}
    assert "Discoveries" in sent.body["system"]


@pytest.mark.asyncio
async def test_rate_limit_then_success_honours_retry_after(
    server: FakeServer, session: AnthropicSession
) -> None:
    server.script(
        anthropic_error(429, "Number of requests has exceeded your rate limit", retry_after="1")
    )
    server.script(anthropic_message(GOOD))
    started = time.monotonic()
    reply = await session.ask("What recurs?", Discoveries)
    assert reply.answer.lessons[0].evidence == ["E-1"]
    assert len(server.received) == 2
    gap = server.received[1].at - server.received[0].at
    assert 0.9 <= gap < 3, gap
    assert time.monotonic() - started >= 0.9


@pytest.mark.asyncio
async def test_server_error_three_times_fails_with_status_and_body(
    server: FakeServer, session: AnthropicSession
) -> None:
    server.script(*[anthropic_error(500, "Internal server error")] * 3)
    with pytest.raises(ProviderError) as caught:
        await session.ask("What recurs?", Discoveries)
    assert len(server.received) == 3
    error = caught.value
    assert (error.status_code, error.provider, error.model) == (500, "anthropic", "claude-sonnet-5")
    assert "api_error" in error.body and "Internal server error" in error.body
    assert error.specialist == "repository_discovery"


@pytest.mark.asyncio
async def test_connection_reset_then_success(server: FakeServer, session: AnthropicSession) -> None:
    server.script(Scripted(reset=True), anthropic_message(GOOD))
    reply = await session.ask("What recurs?", Discoveries)
    assert reply.answer.lessons and len(server.received) == 2


@pytest.mark.asyncio
async def test_retry_log_masks_the_key(
    server: FakeServer, session: AnthropicSession, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(anthropic_error(429, f"slow down, {ANTHROPIC_KEY}"), anthropic_message(GOOD))
    with caplog.at_level(logging.WARNING, logger="active_memory.providers"):
        await session.ask("What recurs?", Discoveries)
    (record,) = caplog.records
    assert "HTTP 429" in record.getMessage() and "slow down" in record.getMessage()
    assert ANTHROPIC_KEY not in record.getMessage()


@pytest.mark.asyncio
async def test_overloaded_529_is_retried(server: FakeServer, session: AnthropicSession) -> None:
    server.script(anthropic_error(529, "Overloaded"), anthropic_message(GOOD))
    reply = await session.ask("What recurs?", Discoveries)
    assert reply.usage.requests == 1 and len(server.received) == 2


@pytest.mark.asyncio
async def test_bad_request_is_not_retried(server: FakeServer, session: AnthropicSession) -> None:
    server.script(anthropic_error(400, "max_tokens: too large"), anthropic_message(GOOD))
    with pytest.raises(ProviderError) as caught:
        await session.ask("What recurs?", Discoveries)
    assert caught.value.status_code == 400 and len(server.received) == 1


@pytest.mark.asyncio
async def test_retry_after_past_the_deadline_fails_at_once(server: FakeServer) -> None:
    server.script(anthropic_error(429, "rate limited", retry_after="30"), anthropic_message(GOOD))
    session = session_for(server, seconds=3)
    started = time.monotonic()
    try:
        with pytest.raises(ProviderError) as caught:
            await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert caught.value.status_code == 429
    assert time.monotonic() - started < 1
    assert len(server.received) == 1


@pytest.mark.asyncio
async def test_hanging_server_is_cut_by_the_deadline(server: FakeServer) -> None:
    server.script(Scripted(hang=True))
    started = time.monotonic()  # the deadline counts from the session's creation
    session = session_for(server, seconds=0.5)
    try:
        with pytest.raises(SpecialistTimedOut) as caught:
            await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert 0.4 <= time.monotonic() - started < 1.5
    assert caught.value.kind == "timed_out"
    assert not session.usage.complete


@pytest.mark.asyncio
async def test_invalid_answer_gets_one_repair_turn_quoting_the_error(
    server: FakeServer, session: AnthropicSession
) -> None:
    server.script(anthropic_message(BAD, output_tokens=5), anthropic_message(GOOD, output_tokens=6))
    reply = await session.ask("What recurs?", Discoveries)
    assert reply.turns == 2 and reply.answer.lessons[0].evidence == ["E-1"]
    assert reply.usage.output_tokens == 11 and reply.usage.requests == 2
    repair = server.received[1].body["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert "lessons[0].evidence" in repair[2]["content"]
    assert "at least 1 item" in repair[2]["content"]


@pytest.mark.asyncio
async def test_second_invalid_answer_fails_with_the_validation_error(
    server: FakeServer, session: AnthropicSession
) -> None:
    server.script(anthropic_message(BAD), anthropic_message({"lessons": "none"}))
    with pytest.raises(SpecialistFailed) as caught:
        await session.ask("What recurs?", Discoveries)
    assert len(server.received) == 2  # one ask, one repair, no third turn
    assert caught.value.kind == "invalid_answer"
    assert caught.value.errors == ("lessons: expected a list",)
    assert "after one repair turn" in str(caught.value)


@pytest.mark.asyncio
async def test_garbage_then_empty_answer_fails_as_empty(
    server: FakeServer, session: AnthropicSession
) -> None:
    server.script(anthropic_message("Sure! Here are the lessons."), anthropic_message(""))
    with pytest.raises(SpecialistFailed) as caught:
        await session.ask("What recurs?", Discoveries)
    assert caught.value.kind == "empty_answer"
    assert "not JSON" in server.received[1].body["messages"][2]["content"]


@pytest.mark.asyncio
async def test_fenced_json_is_accepted(server: FakeServer, session: AnthropicSession) -> None:
    server.script(anthropic_message('```json\n{"lessons": []}\n```'))
    reply = await session.ask("What recurs?", Discoveries)
    assert reply.answer.lessons == []


@pytest.mark.asyncio
async def test_refusal_fails_without_a_repair_turn(
    server: FakeServer, session: AnthropicSession
) -> None:
    server.script(anthropic_message("", stop_reason="refusal"), anthropic_message(GOOD))
    with pytest.raises(SpecialistFailed) as caught:
        await session.ask("What recurs?", Discoveries)
    assert caught.value.kind == "refusal" and len(server.received) == 1


@pytest.mark.asyncio
async def test_key_is_masked_in_an_echoed_error(
    server: FakeServer, session: AnthropicSession
) -> None:
    server.script(anthropic_error(401, f"invalid x-api-key {ANTHROPIC_KEY}"))
    with pytest.raises(ProviderError) as caught:
        await session.ask("What recurs?", Discoveries)
    assert ANTHROPIC_KEY not in str(caught.value) and ANTHROPIC_KEY not in caught.value.body
    assert "***" in caught.value.body and "check the API key" in str(caught.value)


@pytest.mark.asyncio
async def test_unreachable_server_fails_after_retries(session: AnthropicSession) -> None:
    with FakeServer() as gone:
        url = gone.url
    session = session_for_url(url)
    try:
        with pytest.raises(ProviderError) as caught:
            await session.ask("What recurs?", Discoveries)
    finally:
        await session.aclose()
    assert caught.value.status_code is None and "cannot reach anthropic" in str(caught.value)


def session_for_url(url: str) -> AnthropicSession:
    opened = open_session(
        lane(),
        "repository_discovery",
        deadline=anyio.current_time() + 10,
        options=SessionOptions(base_url=url, retry=FAST),
        environ=ENV,
    )
    assert isinstance(opened, AnthropicSession)
    return opened


@pytest.mark.asyncio
async def test_outer_cancellation_marks_usage_incomplete(server: FakeServer) -> None:
    server.script(anthropic_message(GOOD), Scripted(hang=True))
    session = session_for(server)
    try:
        await session.ask("first", Discoveries)
        assert session.usage.complete and session.usage.requests == 1
        with anyio.move_on_after(0.3):
            await session.ask("second", Discoveries)
    finally:
        await session.aclose()
    assert not session.usage.complete
    assert session.usage.requests == 1  # the first ask's tokens are kept


@pytest.mark.asyncio
@pytest.mark.parametrize("name", list(SPECIALISTS))
async def test_every_specialist_answer_schema_round_trips(server: FakeServer, name: str) -> None:
    example = example_answer(name)
    server.script(anthropic_message(example.model_dump(mode="json", by_alias=True)))
    session = session_for(server)
    try:
        reply = await session.ask("Answer.", answer_schema(name), input={"specialist": name})
    finally:
        await session.aclose()
    assert reply.answer == example
    sent = server.received[0].body["output_config"]["format"]["schema"]
    assert sent == anthropic.transform_schema(answer_schema(name).model_json_schema())


@pytest.mark.asyncio
async def test_answer_cut_at_max_tokens_says_so(
    server: FakeServer, session: AnthropicSession
) -> None:
    cut = anthropic_message('{"lessons": [{"title": "Regen', stop_reason="max_tokens")
    server.script(cut, cut)
    with pytest.raises(SpecialistFailed) as caught:
        await session.ask("What recurs?", Discoveries)
    assert caught.value.kind == "not_json"
    assert "cut off at the output token limit" in caught.value.detail
