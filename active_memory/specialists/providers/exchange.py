"""File exchange: the task is written to a file and the answer read from another.

`init` uses it to let the agent that runs it answer as the specialist, and a postmortem's
`--lane exchange` to let any host answer. For one ask, in the exchange folder:

- `<specialist>-<digest16>.task.json`: an `ExchangeTask` (`active-memory/exchange-task@1`):
  what to answer (instructions, messages, the answer's JSON schema), the answer file
  name, and the deadline (`deadline`: an absolute UTC time, `seconds_left` when the task
  was written; both null when the asker has none, as `init`, which waits however long);
- `<specialist>-<digest16>.answer.json`: an `ExchangeAnswer`
  (`active-memory/exchange-answer@1`) written by whoever answers: the same specialist and
  digest, the `answer` object, optionally `usage` and `model`;
- the repair turn (SPEC §6, `repair.py`), when the answer was refused for its schema or
  the checks: `<specialist>-<digest16>.repair.task.json` (digest16 still the first
  task's, so the two sort together) holding `repair_of` (the first task file),
  `failures` (each failure, as the repair message lists them) and the conversation so
  far; its answer goes to `<specialist>-<digest16>.repair.answer.json`, naming the
  repair task's own `digest`. A safety refusal gets no repair file.

An absent answer file is *pending* (`submit` returns `Pending`; `ask` waits for it until
the deadline, telling `waiting` once per task where the files are, for a progress
display). A present but malformed one fails the specialist naming the file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from active_memory.atomic_files import write_atomically
from active_memory.credential_gate import mask_value
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
    input_digest,
)
from active_memory.specialists.providers.repair import AnswerCheck
from active_memory.validation import error_lines

TASK_SCHEMA: Final = "active-memory/exchange-task@1"
ANSWER_SCHEMA: Final = "active-memory/exchange-answer@1"
REPAIR_SUFFIX: Final = ".repair"
"""Added to a repair turn's file stem: `<specialist>-<digest16>.repair.task.json`."""


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
    deadline: str | None = None
    seconds_left: int | None = None
    repair_of: str | None = None
    failures: list[str] | None = None


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
    """No answer yet: `answer_file` is where it is expected. A repair task also names the
    task file it repairs (`repair_of`) and the failures it lists."""

    specialist: str
    digest: str
    task_file: Path
    answer_file: Path
    repair_of: Path | None = None
    failures: tuple[str, ...] = ()


class _NotYet(Exception):
    """Raised through the ask loop by `submit`, which never waits for an answer."""

    def __init__(self, pending: Pending) -> None:
        super().__init__(pending.answer_file)
        self.pending = pending


def exchange_paths(
    directory: Path, specialist: str, digest: str, *, repair: bool = False
) -> tuple[Path, Path]:
    """The task and answer files of one ask (`digest`: the first task's), or of its repair."""
    stem = f"{specialist}-{digest[:16]}" + (REPAIR_SUFFIX if repair else "")
    return directory / f"{stem}.task.json", directory / f"{stem}.answer.json"


def request_paths(directory: Path, request: Request) -> tuple[Path, Path]:
    """The files of `request`: its own, or its repair files when it is a repair turn."""
    if request.repair_of is not None:
        return exchange_paths(directory, request.specialist, request.repair_of, repair=True)
    return exchange_paths(directory, request.specialist, input_digest(request.input))


class FileExchangeSession(BaseSession):
    """A session whose answers come from files (see the module docstring)."""

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
        self._wait = True
        self._written: set[str] = set()  # digests whose task file this session wrote

    async def submit(
        self,
        prompt: str | Sequence[Message],
        answer_schema: type[AnswerT],
        *,
        system: str | None = None,
        input: JsonValue = None,
        check: AnswerCheck | None = None,
    ) -> Reply[AnswerT] | Pending:
        """Write the task (and, for a refused answer, the repair task) if new; the
        validated answer when its file exists, else `Pending` for the file awaited."""
        self._wait = False
        try:
            return await self.ask(prompt, answer_schema, system=system, input=input, check=check)
        except _NotYet as waiting:
            return waiting.pending
        finally:
            self._wait = True

    async def _turn(self, request: Request) -> TurnOutput:
        told = False
        while True:
            turn = await self._read_or_write(request)
            if not isinstance(turn, Pending):
                return turn
            if not self._wait:
                raise _NotYet(turn)
            if not told and self._waiting is not None:
                told = True
                self._waiting(turn)  # where the task is, for whoever shows progress
            await anyio.sleep(self._poll)

    def _where(self, request: Request) -> str:
        return f"{request_paths(self._directory, request)[1]}: "

    async def _read_or_write(self, request: Request) -> TurnOutput | Pending:
        digest = input_digest(request.input)
        task_file, answer_file = request_paths(self._directory, request)
        if digest not in self._written:
            await self._write_task(request, digest, task_file, answer_file)
            self._written.add(digest)
        try:
            # The bounded reader: a regular file only (a FIFO never blocks us), capped.
            data = await anyio.to_thread.run_sync(read_file_bytes, answer_file, MAX_DOCUMENT_BYTES)
        except NotReadable as exc:
            if exc.reason == "no such file":
                repair_of = None
                if request.repair_of is not None:
                    repair_of = exchange_paths(self._directory, self.specialist, request.repair_of)[
                        0
                    ]
                return Pending(
                    self.specialist, digest, task_file, answer_file, repair_of, request.failures
                )
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

    async def _write_task(
        self, request: Request, digest: str, task_file: Path, answer_file: Path
    ) -> None:
        """Write the task file, unless the same task without a deadline is there already
        (`init` calls again and again); a task with a deadline is rewritten with this
        ask's (a new postmortem), and a repair file with another digest (the first
        answer was rewritten and refused for other reasons) is replaced."""
        if self.deadline == math.inf and await _holds_task(task_file, digest):
            return
        now = datetime.now(UTC)
        left = self.remaining()
        finite = math.isfinite(left)
        task = ExchangeTask(
            specialist=self.specialist,
            digest=digest,
            model=self.model,
            instructions=request.instructions(),
            messages=list(request.messages),
            answer_schema=request.schema,
            answer_file=answer_file.name,
            written_at=now.isoformat(timespec="seconds"),
            deadline=(now + timedelta(seconds=left)).isoformat(timespec="seconds")
            if finite
            else None,
            seconds_left=max(0, int(left)) if finite else None,
        )
        if request.repair_of is not None:
            first, _ = exchange_paths(self._directory, self.specialist, request.repair_of)
            task.repair_of = first.name
            task.failures = list(request.failures)
        document = task.model_dump(by_alias=True, mode="json")
        if request.repair_of is None:
            del document["repair_of"], document["failures"]
        # No credential at rest in a task file (the prompt is screened where it is built;
        # this is the one screen again at the writer). Digests and names stay as they are.
        for key in ("instructions", "messages", "failures"):
            if key in document:
                document[key] = mask_value(document[key])
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        await anyio.to_thread.run_sync(write_atomically, task_file, text)

    def _malformed(self, path: Path, detail: str, errors: Sequence[str] = ()) -> SpecialistFailed:
        return SpecialistFailed(
            self.specialist,
            "malformed_exchange",
            f"{path}: {detail}",
            provider=self.provider,
            model=self.model,
            errors=errors,
        )


async def _holds_task(task_file: Path, digest: str) -> bool:
    """Whether `task_file` is a task for `digest` already."""
    try:
        data = await anyio.to_thread.run_sync(read_file_bytes, task_file, MAX_DOCUMENT_BYTES)
    except NotReadable:
        return False
    if data is None:
        return False
    try:
        return bool(json.loads(data).get("digest") == digest)
    except (ValueError, AttributeError):
        return False
