"""File exchange: the task is written to a file and the answer read from another.

`init` uses it to let the agent that runs it answer as the specialist. For one ask, in
the exchange folder:

- `<specialist>-<digest16>.task.json`: an `ExchangeTask` (`active-memory/exchange-task@1`):
  what to answer (instructions, messages, the answer's JSON schema) and the answer file
  name;
- `<specialist>-<digest16>.answer.json`: an `ExchangeAnswer`
  (`active-memory/exchange-answer@1`) written by whoever answers: the same specialist and
  digest, the `answer` object, optionally `usage` and `model`.

An absent answer file is *pending* (`submit` returns `Pending`; `ask` waits for it until
the deadline, telling `waiting` once per task where the files are, for a progress
display). A present but malformed one fails the specialist naming the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from active_memory.atomic_files import write_atomically
from active_memory.errors import SpecialistFailed
from active_memory.reader import MAX_DOCUMENT_BYTES, NotReadable, read_file_bytes
from active_memory.specialists.providers.base import (
    AnswerT,
    BaseSession,
    Message,
    Reply,
    Request,
    TurnOutput,
    Usage,
    build_request,
    check_answer,
    input_digest,
)
from active_memory.validation import error_lines

TASK_SCHEMA: Final = "active-memory/exchange-task@1"
ANSWER_SCHEMA: Final = "active-memory/exchange-answer@1"


class ExchangeTask(BaseModel):
    """What the answering agent is asked."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schema_: Literal["active-memory/exchange-task@1"] = Field(TASK_SCHEMA, alias="schema")
    specialist: str
    digest: str
    model: str
    instructions: str
    messages: list[Message]
    answer_schema: dict[str, Any]
    answer_file: str
    written_at: str


class ExchangeAnswer(BaseModel):
    """What the answering agent writes back."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["active-memory/exchange-answer@1"] = Field(ANSWER_SCHEMA, alias="schema")
    specialist: str
    digest: str
    answer: JsonValue
    usage: Usage | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class Pending:
    """No answer yet: `answer_file` is where it is expected."""

    specialist: str
    digest: str
    task_file: Path
    answer_file: Path


def exchange_paths(directory: Path, specialist: str, digest: str) -> tuple[Path, Path]:
    """The task and answer files of one ask."""
    stem = f"{specialist}-{digest[:16]}"
    return directory / f"{stem}.task.json", directory / f"{stem}.answer.json"


class FileExchangeSession(BaseSession):
    """A session whose answers come from files (see the module docstring)."""

    repairable = False  # the answer file is rewritten by its author, not re-asked

    def __init__(
        self,
        specialist: str,
        model: str,
        *,
        directory: Path,
        deadline: float | None = None,
        poll_interval: float = 0.5,
        waiting: Callable[[Pending], None] | None = None,
    ) -> None:
        super().__init__(specialist, "exchange", model, deadline=deadline)
        self._directory = directory
        self._poll = poll_interval
        self._waiting = waiting

    async def submit(
        self,
        prompt: str | Sequence[Message],
        answer_schema: type[AnswerT],
        *,
        system: str | None = None,
        input: JsonValue = None,
    ) -> Reply[AnswerT] | Pending:
        """Write the task if new; the validated answer if its file exists, else `Pending`."""
        request = build_request(self.specialist, prompt, answer_schema, system, input)
        turn = await self._read_or_write(request)
        if isinstance(turn, Pending):
            return turn
        self._usage = self._usage.plus(turn.usage)
        answer, problem = check_answer(turn, answer_schema)
        if answer is None:
            assert problem is not None
            _, answer_file = exchange_paths(
                self._directory, self.specialist, input_digest(request.input)
            )
            raise SpecialistFailed(
                self.specialist,
                problem.kind,
                f"{answer_file}: {problem.detail}",
                provider=self.provider,
                model=self.model,
                errors=problem.errors,
            )
        return Reply(answer=answer, usage=turn.usage, turns=1, raw=turn.text)

    async def _turn(self, request: Request) -> TurnOutput:
        told = False
        while True:
            turn = await self._read_or_write(request)
            if not isinstance(turn, Pending):
                return turn
            if not told and self._waiting is not None:
                told = True
                self._waiting(turn)  # where the task is, for whoever shows progress
            await anyio.sleep(self._poll)

    async def _read_or_write(self, request: Request) -> TurnOutput | Pending:
        digest = input_digest(request.input)
        task_file, answer_file = exchange_paths(self._directory, self.specialist, digest)
        if not await anyio.Path(task_file).exists():
            task = ExchangeTask(
                specialist=self.specialist,
                digest=digest,
                model=self.model,
                instructions=request.instructions(),
                messages=list(request.messages),
                answer_schema=request.schema,
                answer_file=answer_file.name,
                written_at=datetime.now(UTC).isoformat(timespec="seconds"),
            )
            text = task.model_dump_json(by_alias=True, indent=2) + "\n"
            await anyio.to_thread.run_sync(write_atomically, task_file, text)
        try:
            # The bounded reader: a regular file only (a FIFO never blocks us), capped.
            data = await anyio.to_thread.run_sync(read_file_bytes, answer_file, MAX_DOCUMENT_BYTES)
        except NotReadable as exc:
            if exc.reason == "no such file":
                return Pending(self.specialist, digest, task_file, answer_file)
            raise self._malformed(answer_file, f"cannot read it: {exc.reason}") from None
        if data is None:
            raise self._malformed(answer_file, "larger than the reader's cap")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._malformed(answer_file, f"not UTF-8 text (byte {exc.start})") from None
        try:
            envelope = ExchangeAnswer.model_validate_json(text)
        except ValidationError as exc:
            lines = error_lines(exc)
            raise self._malformed(
                answer_file, f"not an {ANSWER_SCHEMA} document: " + "; ".join(lines[:5]), lines
            ) from None
        if envelope.specialist != self.specialist or envelope.digest != digest:
            raise self._malformed(
                answer_file,
                f"answers {envelope.specialist} {envelope.digest[:16]}, not "
                f"{self.specialist} {digest[:16]}; write the answer to the task it names",
            )
        return TurnOutput(text="", data=envelope.answer, usage=envelope.usage or Usage())

    def _malformed(self, path: Path, detail: str, errors: Sequence[str] = ()) -> SpecialistFailed:
        return SpecialistFailed(
            self.specialist,
            "malformed_exchange",
            f"{path}: {detail}",
            provider=self.provider,
            model=self.model,
            errors=errors,
        )
