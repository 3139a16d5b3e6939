"""Replay: recorded answers keyed by specialist and the digest of the input."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fakes.http_server import FakeServer
from fakes.lanes import ANTHROPIC_KEY, BAD, GOOD, Discoveries, lane
from fakes.network import NetworkGuard
from fakes.wire import anthropic_message
from pydantic import JsonValue

from active_memory.errors import InvalidRecord, SpecialistFailed, UsageError
from active_memory.specialists.providers import (
    BaseSession,
    SessionOptions,
    input_digest,
    open_session,
)
from active_memory.specialists.providers.base import Request
from active_memory.specialists.providers.function import FunctionSession
from active_memory.specialists.providers.replay import (
    Recording,
    Recordings,
    RecordingSession,
    save_recordings,
)

INPUT: dict[str, JsonValue] = {"run_id": "run-1", "manifest": [{"id": "L-7", "revision": 3}]}


@pytest.fixture(autouse=True)
def local_network_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    guard = NetworkGuard()
    guard.install(monkeypatch)
    yield
    guard.check()


def replay(path: Path, specialist: str = "repository_discovery") -> BaseSession:
    return open_session(
        lane(), specialist, deadline=None, options=SessionOptions(mode="replay", recordings=path)
    )


def test_digest_is_sha256_of_canonical_json() -> None:
    reordered: JsonValue = {"manifest": [{"revision": 3, "id": "L-7"}], "run_id": "run-1"}
    assert input_digest(INPUT) == input_digest(reordered)
    assert input_digest(INPUT) != input_digest({**INPUT, "run_id": "run-2"})
    # canonical: sorted keys, no whitespace, UTF-8
    expected = hashlib.sha256('{"a":"é","b":[1,null]}'.encode()).hexdigest()
    assert input_digest({"b": [1, None], "a": "é"}) == expected


@pytest.mark.asyncio
async def test_replay_hit_returns_the_recorded_answer(tmp_path: Path) -> None:
    path = tmp_path / "recordings.json"
    recording = Recording(
        specialist="repository_discovery", digest=input_digest(INPUT), answer=GOOD
    )
    await save_recordings(path, Recordings(recordings=[recording]))
    session = replay(path)
    reply = await session.ask("ignored prompt text", Discoveries, input=INPUT)
    assert reply.answer == Discoveries.model_validate(GOOD)
    assert session.provider == "replay"


@pytest.mark.asyncio
async def test_replay_miss_names_specialist_digest_and_how_to_record(tmp_path: Path) -> None:
    path = tmp_path / "recordings.json"
    other = Recording(specialist="graph_discovery", digest=input_digest(INPUT), answer=GOOD)
    await save_recordings(path, Recordings(recordings=[other]))
    with pytest.raises(SpecialistFailed) as caught:
        await replay(path).ask("prompt", Discoveries, input=INPUT)
    message = str(caught.value)
    assert caught.value.kind == "missing_recording"
    assert "repository_discovery" in message and input_digest(INPUT) in message
    assert "RecordingSession" in message and str(path) in message


@pytest.mark.asyncio
async def test_an_invalid_recording_without_its_recorded_repair_names_the_repair(
    tmp_path: Path,
) -> None:
    path = tmp_path / "recordings.json"
    bad = Recording(specialist="repository_discovery", digest=input_digest(INPUT), answer=BAD)
    await save_recordings(path, Recordings(recordings=[bad]))
    with pytest.raises(SpecialistFailed) as caught:
        await replay(path).ask("prompt", Discoveries, input=INPUT)
    assert caught.value.kind == "missing_recording"
    assert "no recorded repair turn for repository_discovery" in caught.value.detail


@pytest.mark.asyncio
async def test_a_recorded_repair_is_replayed(tmp_path: Path) -> None:
    # Recorded through a live session: the refused first answer and its repair, each
    # under its own input's digest; replay then asks the same two turns.
    path = tmp_path / "recordings.json"

    async def model(request: Request) -> JsonValue:
        return GOOD if request.turn == 2 else BAD

    recorder = RecordingSession(FunctionSession("repository_discovery", model), path)
    first = await recorder.ask("prompt", Discoveries, input=INPUT)
    assert first.turns == 2
    stored = Recordings.model_validate_json(path.read_text()).recordings
    assert [r.answer for r in stored] == [BAD, GOOD]
    assert stored[0].digest == input_digest(INPUT) and stored[1].digest != stored[0].digest
    reply = await replay(path).ask("prompt", Discoveries, input=INPUT)
    assert reply.turns == 2 and reply.answer == Discoveries.model_validate(GOOD)


@pytest.mark.asyncio
async def test_missing_or_malformed_recordings_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such recordings file"):
        await replay(tmp_path / "absent.json").ask("p", Discoveries, input=INPUT)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"schema": "active-memory/recordings@1", "recordings": [{}]}))
    with pytest.raises(InvalidRecord, match=r"recordings\[0\]\.specialist"):
        await replay(broken).ask("p", Discoveries, input=INPUT)


@pytest.mark.asyncio
async def test_recording_session_records_what_replay_then_returns(tmp_path: Path) -> None:
    path = tmp_path / "recordings.json"
    with FakeServer([anthropic_message(GOOD, input_tokens=9, output_tokens=4)]) as server:
        live = open_session(
            lane(),
            "repository_discovery",
            deadline=anyio.current_time() + 10,
            options=SessionOptions(base_url=server.url),
            environ={"ANTHROPIC_API_KEY": ANTHROPIC_KEY},
        )
        recorder = RecordingSession(live, path)
        try:
            await recorder.ask("What recurs?", Discoveries, input=INPUT)
        finally:
            await recorder.aclose()
    stored = json.loads(path.read_text())
    assert stored["schema"] == "active-memory/recordings@1"
    assert stored["recordings"][0]["digest"] == input_digest(INPUT)
    assert stored["recordings"][0]["usage"]["output_tokens"] == 4
    reply = await replay(path).ask("a different prompt", Discoveries, input=INPUT)
    assert reply.answer == Discoveries.model_validate(GOOD)
    assert reply.usage.output_tokens == 4
