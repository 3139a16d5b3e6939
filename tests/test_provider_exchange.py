"""File exchange: a task file out, an answer file in; absent means pending."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from fakes.lanes import BAD, GOOD, Discoveries, lane
from fakes.network import NetworkGuard
from pydantic import JsonValue

from active_memory.errors import SpecialistFailed, SpecialistTimedOut
from active_memory.specialists.providers import SessionOptions, input_digest, open_session
from active_memory.specialists.providers.exchange import (
    ExchangeAnswer,
    ExchangeTask,
    FileExchangeSession,
    Pending,
    exchange_paths,
)

INPUT: dict[str, JsonValue] = {"run_id": "run-1", "batch": 1}


@pytest.fixture(autouse=True)
def local_network_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    guard = NetworkGuard()
    guard.install(monkeypatch)
    yield
    guard.check()


def exchange(folder: Path, seconds: float | None = None) -> FileExchangeSession:
    session = open_session(
        lane(),
        "graph_maintenance",
        deadline=None if seconds is None else anyio.current_time() + seconds,
        options=SessionOptions(mode="exchange", exchange_dir=folder),
    )
    assert isinstance(session, FileExchangeSession)
    return session


def answer_document(answer: object, digest: str = input_digest(INPUT)) -> str:
    return json.dumps(
        {
            "schema": "active-memory/exchange-answer@1",
            "specialist": "graph_maintenance",
            "digest": digest,
            "answer": answer,
            "usage": {"input_tokens": 10, "output_tokens": 3},
        }
    )


@pytest.mark.asyncio
async def test_absent_answer_is_pending_and_the_task_is_written(tmp_path: Path) -> None:
    status = await exchange(tmp_path).submit("Keep or retire?", Discoveries, input=INPUT)
    assert isinstance(status, Pending)
    task = ExchangeTask.model_validate_json(status.task_file.read_text())
    assert task.specialist == "graph_maintenance" and task.digest == input_digest(INPUT)
    assert task.messages[0].content == "Keep or retire?"
    assert task.answer_schema["title"] == "Discoveries"
    assert (tmp_path / task.answer_file) == status.answer_file
    assert not status.answer_file.exists()


@pytest.mark.asyncio
async def test_answered_exchange_returns_the_validated_answer(tmp_path: Path) -> None:
    _, answer_file = exchange_paths(tmp_path, "graph_maintenance", input_digest(INPUT))
    answer_file.write_text(answer_document(GOOD))
    reply = await exchange(tmp_path).submit("Keep or retire?", Discoveries, input=INPUT)
    assert not isinstance(reply, Pending)
    assert reply.answer == Discoveries.model_validate(GOOD)
    assert reply.usage.output_tokens == 3


@pytest.mark.asyncio
async def test_malformed_answer_file_names_the_file(tmp_path: Path) -> None:
    _, answer_file = exchange_paths(tmp_path, "graph_maintenance", input_digest(INPUT))
    answer_file.write_text("{not json")
    with pytest.raises(SpecialistFailed) as caught:
        await exchange(tmp_path).submit("Keep or retire?", Discoveries, input=INPUT)
    assert caught.value.kind == "malformed_exchange" and str(answer_file) in caught.value.detail


@pytest.mark.asyncio
async def test_answer_for_another_task_is_malformed(tmp_path: Path) -> None:
    _, answer_file = exchange_paths(tmp_path, "graph_maintenance", input_digest(INPUT))
    answer_file.write_text(answer_document(GOOD, digest="0" * 64))
    with pytest.raises(SpecialistFailed, match="write the answer to the task it names"):
        await exchange(tmp_path).submit("Keep or retire?", Discoveries, input=INPUT)


@pytest.mark.asyncio
async def test_an_invalid_answer_gets_a_repair_task_listing_each_failure(tmp_path: Path) -> None:
    task_file, answer_file = exchange_paths(tmp_path, "graph_maintenance", input_digest(INPUT))
    answer_file.write_text(answer_document(BAD))
    status = await exchange(tmp_path).submit("Keep or retire?", Discoveries, input=INPUT)
    assert isinstance(status, Pending)
    # The documented name: the first task's stem, then `.repair`.
    repair_task, repair_answer = exchange_paths(
        tmp_path, "graph_maintenance", input_digest(INPUT), repair=True
    )
    assert (status.task_file, status.answer_file) == (repair_task, repair_answer)
    assert status.task_file.name.endswith(".repair.task.json")
    assert status.repair_of == task_file
    assert status.failures and status.failures[0].startswith("lessons[0].evidence")
    task = json.loads(repair_task.read_text())
    assert task["repair_of"] == task_file.name and task["failures"] == list(status.failures)
    assert task["answer_file"] == repair_answer.name and task["digest"] == status.digest
    roles = [m["role"] for m in task["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert "not accepted" in task["messages"][-1]["content"]
    assert status.failures[0] in task["messages"][-1]["content"]
    # A repair answer that fails again fails the specialist, naming the repair file.
    repair_answer.write_text(answer_document(BAD, digest=status.digest))
    with pytest.raises(SpecialistFailed) as caught:
        await exchange(tmp_path).submit("Keep or retire?", Discoveries, input=INPUT)
    assert caught.value.kind == "invalid_answer" and str(repair_answer) in caught.value.detail
    assert "after one repair turn" in caught.value.detail
    assert caught.value.errors[0].startswith("lessons[0].evidence")
    # A good repair answer is the reply.
    repair_answer.write_text(answer_document(GOOD, digest=status.digest))
    reply = await exchange(tmp_path).submit("Keep or retire?", Discoveries, input=INPUT)
    assert not isinstance(reply, Pending)
    assert reply.turns == 2 and reply.answer == Discoveries.model_validate(GOOD)


@pytest.mark.asyncio
async def test_a_task_file_carries_its_deadline_and_none_without_one(tmp_path: Path) -> None:
    before = datetime.now(UTC)
    status = await exchange(tmp_path / "a", seconds=90).submit("Keep?", Discoveries, input=INPUT)
    assert isinstance(status, Pending)
    task = json.loads(status.task_file.read_text())
    deadline = datetime.fromisoformat(task["deadline"])
    assert 85 <= task["seconds_left"] <= 90
    assert before + timedelta(seconds=85) <= deadline <= before + timedelta(seconds=92)
    status = await exchange(tmp_path / "b").submit("Keep?", Discoveries, input=INPUT)
    assert isinstance(status, Pending)
    task = json.loads(status.task_file.read_text())
    assert task["deadline"] is None and task["seconds_left"] is None
    assert "repair_of" not in task and "failures" not in task


@pytest.mark.asyncio
async def test_ask_waits_for_the_answer_file(tmp_path: Path) -> None:
    session = exchange(tmp_path, seconds=10)
    _, answer_file = exchange_paths(tmp_path, "graph_maintenance", input_digest(INPUT))

    async def answer_later() -> None:
        await anyio.sleep(0.3)
        document = ExchangeAnswer(
            specialist="graph_maintenance", digest=input_digest(INPUT), answer=GOOD
        )
        answer_file.write_text(document.model_dump_json(by_alias=True))

    async with anyio.create_task_group() as group:
        group.start_soon(answer_later)
        reply = await session.ask("Keep or retire?", Discoveries, input=INPUT)
    assert reply.answer.lessons[0].title == "Regenerate the client"


@pytest.mark.asyncio
async def test_ask_times_out_while_pending(tmp_path: Path) -> None:
    with pytest.raises(SpecialistTimedOut):
        await exchange(tmp_path, seconds=0.3).ask("Keep or retire?", Discoveries, input=INPUT)
