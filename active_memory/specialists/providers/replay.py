"""Recorded answers: the bundled example and dry runs replay them instead of a model.

A recordings file is one JSON document (`active-memory/recordings@1`) holding answers
keyed by specialist and `input_digest(input)`: the SHA-256 of the canonical JSON of what
the specialist was asked (see `base.build_request`). A repair turn has an input of its
own (`repair.repair_input`: the first input, the refused answer and every failure), so a
recorded repair is replayed like any answer: the first recording is refused by the same
checks, and the repair turn finds its own recording (SPEC §6).

`RecordingSession` wraps a live session and appends each turn's answer (the refused one
too, so that its repair replays), which is how recordings are made. An answer is recorded
as its JSON value, or as its text when it is not JSON (replayed as text).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Final, Literal

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from active_memory.atomic_files import write_atomically
from active_memory.credential_gate import mask_value
from active_memory.errors import InvalidRecord, SpecialistFailed
from active_memory.specialists.providers.base import (
    AnswerT,
    BaseSession,
    Message,
    ProviderSession,
    Reply,
    Request,
    TurnOutput,
    Usage,
    UsageListener,
    build_request,
    decode_answer,
    input_digest,
)
from active_memory.specialists.providers.repair import AnswerCheck
from active_memory.validation import error_lines

RECORDINGS_SCHEMA: Final = "active-memory/recordings@1"


class Recording(BaseModel):
    """One recorded answer."""

    model_config = ConfigDict(extra="forbid")

    specialist: str
    digest: str = Field(pattern=r"^[0-9a-f]{64}$")
    answer: JsonValue
    usage: Usage | None = None
    model: str | None = None


class Recordings(BaseModel):
    """A recordings file."""

    model_config = ConfigDict(extra="forbid")

    schema_: Literal["active-memory/recordings@1"] = Field(RECORDINGS_SCHEMA, alias="schema")
    recordings: list[Recording] = Field(default_factory=list)

    def find(self, specialist: str, digest: str) -> Recording | None:
        """The last recording for this specialist and input digest, if any."""
        for recording in reversed(self.recordings):
            if recording.specialist == specialist and recording.digest == digest:
                return recording
        return None


async def load_recordings(path: Path, *, missing_ok: bool = False) -> Recordings:
    """Read a recordings file; a missing or malformed one is a usage error naming it."""
    from active_memory.reader import read_text

    if missing_ok and not await anyio.Path(path).exists():
        return Recordings()
    # The bounded reader: a regular file only (never blocks), capped, UTF-8 checked.
    text = await anyio.to_thread.run_sync(read_text, path, "recordings file")
    try:
        return Recordings.model_validate_json(text)
    except ValidationError as exc:
        raise InvalidRecord(str(path), "; ".join(error_lines(exc)[:5])) from None


async def save_recordings(path: Path, recordings: Recordings) -> None:
    """Write a recordings file atomically (a temporary file, then a rename), every
    credential in it masked (an answer may quote one)."""
    document = mask_value(recordings.model_dump(mode="json", by_alias=True, exclude_none=True))
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    await anyio.to_thread.run_sync(write_atomically, path, text)


class ReplaySession(BaseSession):
    """Answers from a recordings file; a missing recording fails the specialist clearly."""

    def __init__(
        self, specialist: str, model: str, *, path: Path, deadline: float | None = None
    ) -> None:
        super().__init__(specialist, "replay", model, deadline=deadline)
        self._path = path
        self._recordings: Recordings | None = None

    async def _turn(self, request: Request) -> TurnOutput:
        if self._recordings is None:
            self._recordings = await load_recordings(self._path)
        digest = input_digest(request.input)
        found = self._recordings.find(self.specialist, digest)
        if found is None:
            what = "answer" if request.repair_of is None else "repair turn"
            raise SpecialistFailed(
                self.specialist,
                "missing_recording",
                f"no recorded {what} for {self.specialist} with input digest {digest} in "
                f"{self._path}; record it by running this input once against a live lane "
                f"with RecordingSession(..., path={str(self._path)!r}), or add "
                f'{{"specialist": "{self.specialist}", "digest": "{digest}", "answer": {{...}}}} '
                "to its recordings",
                provider=self.provider,
                model=self.model,
            )
        if isinstance(found.answer, str):  # the lane received text: replay it as text
            return TurnOutput(text=found.answer, usage=found.usage or Usage())
        return TurnOutput(text="", data=found.answer, usage=found.usage or Usage())


def _recorded(turn: TurnOutput) -> JsonValue:
    """What a turn answered: its JSON value when it has one, else its text."""
    if turn.data is not None:
        return turn.data
    value, problem = decode_answer(turn.text)
    return turn.text if problem is not None else value


class RecordingSession:
    """A live session whose answers are appended to a recordings file, every turn's.

    Every session of the process that records into one file shares one lock: the four
    specialists of a postmortem record at once, and each append rewrites the file. A
    wrapped session that cannot report its turns (not a `BaseSession`) has its validated
    answers recorded under the ask's input instead.
    """

    _locks: ClassVar[dict[Path, anyio.Lock]] = {}

    def __init__(self, inner: ProviderSession, path: Path) -> None:
        self._inner = inner
        self._path = path
        self._lock = RecordingSession._locks.setdefault(Path(path).absolute(), anyio.Lock())
        self._turns: list[Recording] | None = None
        listen = getattr(inner, "on_turn", None)
        if callable(listen):
            self._turns = []
            listen(self._heard)

    @property
    def specialist(self) -> str:
        """The wrapped session's specialist."""
        return self._inner.specialist

    @property
    def provider(self) -> str:
        """The wrapped session's provider."""
        return self._inner.provider

    @property
    def model(self) -> str:
        """The wrapped session's model."""
        return self._inner.model

    @property
    def usage(self) -> Usage:
        """The wrapped session's usage."""
        return self._inner.usage

    def on_usage(self, listener: UsageListener) -> None:
        """Listen to the wrapped session's usage (when it can be listened to)."""
        listen = getattr(self._inner, "on_usage", None)
        if callable(listen):
            listen(listener)

    def _heard(self, request: Request, turn: TurnOutput) -> None:
        assert self._turns is not None
        self._turns.append(
            Recording(
                specialist=self.specialist,
                digest=input_digest(request.input),
                answer=_recorded(turn),
                usage=turn.usage,
                model=self.model,
            )
        )

    async def ask(
        self,
        prompt: str | Sequence[Message],
        answer_schema: type[AnswerT],
        *,
        system: str | None = None,
        input: JsonValue = None,
        check: AnswerCheck | None = None,
    ) -> Reply[AnswerT]:
        """Ask the wrapped session, then record what it answered (each turn's answer under
        its own input's digest, a refused one too)."""
        try:
            reply = await self._inner.ask(
                prompt, answer_schema, system=system, input=input, check=check
            )
        except SpecialistFailed:
            await self._save([])  # the turns it heard are what the model said
            raise
        if self._turns is not None:
            await self._save([])
            return reply
        request = build_request(self.specialist, prompt, answer_schema, system, input)
        recording = Recording(
            specialist=self.specialist,
            digest=input_digest(request.input),
            answer=reply.answer.model_dump(mode="json", by_alias=True),
            usage=reply.usage,
            model=self.model,
        )
        await self._save([recording])
        return reply

    async def _save(self, extra: list[Recording]) -> None:
        heard: list[Recording] = []
        if self._turns is not None:
            heard, self._turns = self._turns, []
        if not heard and not extra:
            return
        async with self._lock:
            recordings = await load_recordings(self._path, missing_ok=True)
            recordings.recordings.extend([*heard, *extra])
            await save_recordings(self._path, recordings)

    async def aclose(self) -> None:
        """Close the wrapped session."""
        await self._inner.aclose()
