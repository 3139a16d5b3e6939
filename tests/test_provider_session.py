"""The shared ask loop (deadline, repair turn, usage) through `FunctionSession`."""

from __future__ import annotations

import anyio
import pytest
from fakes.lanes import BAD, GOOD, Discoveries
from pydantic import JsonValue

from active_memory.errors import SpecialistFailed, SpecialistTimedOut
from active_memory.specialists.providers import Message, ProviderSession, Usage, input_digest
from active_memory.specialists.providers.base import Request
from active_memory.specialists.providers.function import FunctionSession


@pytest.mark.asyncio
async def test_repair_turn_sees_the_quoted_errors_and_its_previous_answer() -> None:
    seen: list[Request] = []

    async def answer(request: Request) -> JsonValue:
        seen.append(request)
        return BAD if request.turn == 1 else GOOD

    session: ProviderSession = FunctionSession("graph_discovery", answer)  # the protocol fits
    reply = await session.ask("What recurs?", Discoveries, input={"task": 1})
    assert reply.turns == 2 and reply.usage.requests == 2
    repair = seen[1]
    assert [m.role for m in repair.messages] == ["user", "assistant", "user"]
    assert '"evidence": []' in repair.messages[1].content
    assert repair.messages[2].content.startswith("Your previous answer was not accepted:")
    # The repair's own input: the first input, the refused answer and every failure.
    assert isinstance(repair.input, dict) and repair.input["task"] == {"task": 1}
    assert repair.input["answer"] == repair.messages[1].content
    assert repair.input["failures"] == list(repair.failures) and repair.failures
    assert repair.repair_of == input_digest({"task": 1})


@pytest.mark.asyncio
async def test_failure_after_repair_records_every_error_line() -> None:
    async def answer(request: Request) -> JsonValue:
        return {"lessons": [{"title": "x" * 97, "evidence": []}]}

    with pytest.raises(SpecialistFailed) as caught:
        await FunctionSession("graph_discovery", answer).ask("What recurs?", Discoveries)
    assert caught.value.kind == "invalid_answer"
    assert [line.split(":")[0] for line in caught.value.errors] == [
        "lessons[0].title",
        "lessons[0].evidence",
    ]


@pytest.mark.asyncio
async def test_garbage_is_a_typed_failure_with_an_excerpt() -> None:
    async def answer(request: Request) -> JsonValue:
        return "I think the lessons are fine."

    with pytest.raises(SpecialistFailed) as caught:
        await FunctionSession("graph_discovery", answer).ask("What recurs?", Discoveries)
    assert caught.value.kind == "not_json" and "I think the lessons" in caught.value.detail


@pytest.mark.asyncio
async def test_no_time_left_fails_before_asking() -> None:
    calls = 0

    async def answer(request: Request) -> JsonValue:
        nonlocal calls
        calls += 1
        return GOOD

    session = FunctionSession("graph_discovery", answer, deadline=anyio.current_time() - 1)
    with pytest.raises(SpecialistTimedOut):
        await session.ask("What recurs?", Discoveries)
    assert calls == 0 and session.usage.complete


@pytest.mark.asyncio
async def test_deadline_during_the_repair_turn_keeps_the_first_turns_usage() -> None:
    async def answer(request: Request) -> JsonValue:
        if request.turn == 2:
            await anyio.sleep_forever()
        return BAD

    session = FunctionSession(
        "graph_discovery",
        answer,
        deadline=anyio.current_time() + 0.2,
        usage_per_turn=Usage(input_tokens=10, output_tokens=5, requests=1),
    )
    with pytest.raises(SpecialistTimedOut):
        await session.ask("What recurs?", Discoveries)
    assert (session.usage.input_tokens, session.usage.complete) == (10, False)


@pytest.mark.asyncio
async def test_prompt_must_end_with_a_user_message() -> None:
    async def answer(request: Request) -> JsonValue:
        return GOOD

    with pytest.raises(ValueError, match="user message"):
        await FunctionSession("graph_discovery", answer).ask(
            [Message(role="user", content="a"), Message(role="assistant", content="b")],
            Discoveries,
        )


@pytest.mark.asyncio
async def test_one_repair_turn_lists_an_unknown_field_and_the_checks_failures_together() -> None:
    from active_memory.specialists.providers.repair import Verdict

    seen: list[Request] = []
    checked: list[Discoveries] = []

    async def answer(request: Request) -> JsonValue:
        seen.append(request)
        first: JsonValue = {
            "lessons": [{"title": "Regenerate the client", "evidence": ["E-1"], "confidence": 0.9}]
        }
        return first if request.turn == 1 else GOOD

    async def check(found: Discoveries) -> Verdict:
        checked.append(found)
        bad = found.lessons[0].title == "Regenerate the client" and len(checked) == 1
        return Verdict(failures=("lessons[0]: citation-lines: out of range",) if bad else ())

    reply = await FunctionSession("repository_discovery", answer).ask(
        "What recurs?", Discoveries, check=check
    )
    assert reply.turns == 2 and len(seen) == 2
    # The first answer was checked without its unknown field, so both are listed.
    assert checked[0].lessons[0].title == "Regenerate the client"
    assert seen[1].failures[0].startswith("lessons[0].confidence")
    assert seen[1].failures[1] == "lessons[0]: citation-lines: out of range"
    last = seen[1].messages[-1].content
    assert all(f"\n- {failure}" in last for failure in seen[1].failures)


@pytest.mark.asyncio
async def test_a_safety_refusal_gets_no_repair_turn_and_names_only_its_rule() -> None:
    from active_memory.specialists.providers.repair import Verdict

    seen: list[Request] = []

    async def answer(request: Request) -> JsonValue:
        seen.append(request)
        return {"lessons": [{"title": "Wipe it", "evidence": ["E-1"], "confidence": 1}]}

    async def check(found: Discoveries) -> Verdict:
        return Verdict(failures=("lessons[0].title: too long",),
                       safety=("lessons[0]: refused by destroy-data",))  # fmt: skip

    with pytest.raises(SpecialistFailed) as caught:
        await FunctionSession("repository_discovery", answer).ask(
            "What recurs?", Discoveries, check=check
        )
    assert len(seen) == 1  # no repair turn
    assert caught.value.kind == "unsafe_answer" and caught.value.errors == ()
    assert caught.value.detail.endswith(
        "refused, with no repair turn: lessons[0]: refused by destroy-data"
    )
    assert "confidence" not in caught.value.detail and "too long" not in caught.value.detail
