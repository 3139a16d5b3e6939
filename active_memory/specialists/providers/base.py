"""The provider session interface: one session per specialist, typed answers, usage.

A session answers `ask(prompt, AnswerModel)` with a validated `AnswerModel` and the usage
it cost. `BaseSession` holds what every adapter shares: the deadline (an absolute
`anyio.current_time()` value), the one repair turn after an answer fails validation, and
usage accounting that is marked incomplete when a turn is interrupted. An adapter only
implements `_turn`: send one request, return the raw answer and its usage.

Usage is counted at one point, `_charge`, as each request's usage becomes known (a
streaming adapter may charge parts of a turn as they arrive and return the rest), and
every listener registered with `on_usage` hears of it at once: the postmortem journals
what it has spent while it runs, so a cancel or a crash does not lose it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Literal, Protocol

import anyio
from pydantic import (
    BaseModel,
    ConfigDict,
    JsonValue,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from active_memory.errors import SpecialistFailed, SpecialistTimedOut
from active_memory.specialists.kinds import SpecialistName as SpecialistName
from active_memory.specialists.providers.credentials import Secrets
from active_memory.specialists.providers.decoding import AnswerT as AnswerT
from active_memory.specialists.providers.decoding import answer_text
from active_memory.specialists.providers.decoding import decode_answer as decode_answer
from active_memory.specialists.providers.decoding import excerpt as excerpt
from active_memory.specialists.providers.repair import (
    AnswerCheck,
    Judged,
    judge,
    repair_input,
    repair_message,
)

UsageListener = Callable[["Usage"], None]
"""Called with each request's usage (or an incomplete mark) as soon as it is known."""

TurnListener = Callable[["Request", "TurnOutput"], None]
"""Called with each turn's request and raw answer (`RecordingSession` records them)."""

log = logging.getLogger("active_memory.providers")


class Message(BaseModel):
    """One turn of a conversation, as every adapter sends it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    content: str


def without_idle_tools(dumped: dict[str, Any]) -> dict[str, Any]:
    """A usage dump without `tool_calls` / `tool_errors` when no tool was used."""
    if not dumped.get("tool_calls") and not dumped.get("tool_errors"):
        dumped.pop("tool_calls", None)
        dumped.pop("tool_errors", None)
    return dumped


class Usage(BaseModel):
    """Model usage of a session or of one ask.

    `cost_usd` is None unless the lane reports cost (OpenRouter, the `claude` CLI).
    `complete` is False when a turn was interrupted (cancelled or cut by the deadline):
    the tokens of that turn are unknown, so the counts are a lower bound.
    `tool_calls` counts the read-only investigation calls of the harness CLI lanes (file
    reads, searches, commands); `tool_errors` those that came back as an error (refused
    by the harness's permissions or sandbox, or failed).
    """

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    requests: int = 0
    complete: bool = True
    tool_calls: int = 0
    tool_errors: int = 0

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Lanes without tools keep the shape they always had (recordings, reports).
        return without_idle_tools(handler(self))

    def plus(self, other: Usage) -> Usage:
        """The sum of two usages; cost stays None only when neither reports one."""
        cost = (
            None
            if self.cost_usd is None and other.cost_usd is None
            else (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        )
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=cost,
            requests=self.requests + other.requests,
            complete=self.complete and other.complete,
            tool_calls=self.tool_calls + other.tool_calls,
            tool_errors=self.tool_errors + other.tool_errors,
        )


class Reply(BaseModel, Generic[AnswerT]):
    """A validated answer, what this ask cost (all its turns) and how many turns it took."""

    model_config = ConfigDict(frozen=True)

    answer: AnswerT
    usage: Usage
    turns: int
    raw: str


@dataclass(frozen=True, slots=True)
class Request:
    """What an adapter sends for one turn.

    `resume` carries the adapter's own handle of the conversation so far (a CLI session
    or thread ID) on a repair turn; adapters without one resend every message. A repair
    turn also names the digest of the input it repairs (`repair_of`) and every failure
    it lists (`failures`), for lanes that show them (the exchange lane's repair file).
    """

    specialist: str
    system: str | None
    messages: tuple[Message, ...]
    schema: dict[str, Any]
    schema_name: str
    input: JsonValue
    turn: int = 1
    resume: str | None = None
    repair_of: str | None = None
    failures: tuple[str, ...] = ()

    def instructions(self) -> str:
        """The system prompt with the answer contract appended (every lane gets it)."""
        contract = (
            "Answer with exactly one JSON object and nothing else. It must validate "
            f"against this JSON schema ({self.schema_name}):\n"
            + json.dumps(self.schema, ensure_ascii=False, sort_keys=True)
        )
        return f"{self.system}\n\n{contract}" if self.system else contract


@dataclass(frozen=True, slots=True)
class TurnOutput:
    """One raw answer: its text, or `data` when the lane already decoded the JSON."""

    text: str
    usage: Usage
    data: JsonValue | None = None
    refusal: str | None = None
    resume: str | None = None
    truncated: bool = False  # the answer hit the output token limit


class ProviderSession(Protocol):
    """One specialist's conversation with its model lane."""

    @property
    def specialist(self) -> str:
        """The specialist this session serves (`SpecialistName`)."""
        ...

    @property
    def provider(self) -> str:
        """Where answers come from: anthropic, openai, openrouter, claude-cli, ..."""
        ...

    @property
    def model(self) -> str:
        """The model ID the lane names."""
        ...

    @property
    def usage(self) -> Usage:
        """Everything this session has cost so far."""
        ...

    async def ask(
        self,
        prompt: str | Sequence[Message],
        answer_schema: type[AnswerT],
        *,
        system: str | None = None,
        input: JsonValue = None,
        check: AnswerCheck | None = None,
    ) -> Reply[AnswerT]:
        """One validated answer; raises `SpecialistFailed` (or a subclass) otherwise.

        `check` judges a schema-valid answer too; a refused one gets the one repair turn
        (`repair.py`). The answer returned is the last one, whatever `check` said of it.
        """
        ...

    async def aclose(self) -> None:
        """Release the session's client or files."""
        ...


def build_request(
    specialist: str,
    prompt: str | Sequence[Message],
    answer_schema: type[BaseModel],
    system: str | None,
    input: JsonValue,
) -> Request:
    """The first turn of an ask. Without an explicit `input`, the input that identifies the
    ask (for replay digests and exchange files) is the system prompt and the messages."""
    messages = (Message(role="user", content=prompt),) if isinstance(prompt, str) else tuple(prompt)
    if not messages or messages[-1].role != "user":
        raise ValueError("a prompt must end with a user message")
    if input is None:
        input = {"system": system, "messages": [m.model_dump() for m in messages]}
    return Request(
        specialist=specialist,
        system=system,
        messages=messages,
        schema=answer_json_schema(answer_schema),
        schema_name=answer_schema.__name__,
        input=input,
    )


@functools.cache
def _cached_json_schema(answer_schema: type[BaseModel]) -> str:
    return json.dumps(answer_schema.model_json_schema())


def answer_json_schema(answer_schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of an answer model: built once per model (it costs milliseconds and
    every batch asks again), handed out as a fresh copy so no adapter can change the
    cached one (decoded from its JSON text: a tenth of a `deepcopy`'s cost)."""
    schema: dict[str, Any] = json.loads(_cached_json_schema(answer_schema))
    return schema


def input_digest(value: JsonValue) -> str:
    """Lowercase hex SHA-256 of the canonical JSON of a specialist's input (keys sorted,
    no whitespace, UTF-8, no NaN): the key of recorded and exchanged answers."""
    canonical = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class BaseSession:
    """The shared ask loop; subclasses implement `_turn` (and `aclose` if they hold a client)."""

    #: Whether a refused answer gets the one repair turn (every lane: SPEC §6).
    repairable = True

    def __init__(
        self, specialist: str, provider: str, model: str, *, deadline: float | None
    ) -> None:
        self._specialist = specialist
        self._provider = provider
        self._model = model
        self._deadline = math.inf if deadline is None else deadline
        self._usage = Usage()
        self._usage_listeners: list[UsageListener] = []
        self._turn_listeners: list[TurnListener] = []
        # Adapters that hold keys replace this; a failure quoting an answer is masked too.
        self._secrets = Secrets()

    @property
    def specialist(self) -> str:
        """The specialist this session serves."""
        return self._specialist

    @property
    def provider(self) -> str:
        """The lane answers come from."""
        return self._provider

    @property
    def model(self) -> str:
        """The model ID of the lane."""
        return self._model

    @property
    def usage(self) -> Usage:
        """Everything this session has cost so far."""
        return self._usage

    def on_usage(self, listener: UsageListener) -> None:
        """Call `listener` with every usage this session is charged from now on: each
        request's as soon as it is known, and `Usage(complete=False)` when a turn is cut."""
        self._usage_listeners.append(listener)

    def _charge(self, usage: Usage) -> None:
        """The one accumulation point: add `usage` and tell the listeners."""
        self._usage = self._usage.plus(usage)
        for listener in self._usage_listeners:
            try:
                listener(usage)
            except Exception:  # an observer must never cost the specialist its answer
                log.exception("a usage listener of %s failed", self._specialist)

    @property
    def deadline(self) -> float:
        """The absolute anyio time after which no turn may run (inf: none)."""
        return self._deadline

    def remaining(self) -> float:
        """Seconds left before the deadline."""
        return self._deadline - anyio.current_time()

    async def ask(
        self,
        prompt: str | Sequence[Message],
        answer_schema: type[AnswerT],
        *,
        system: str | None = None,
        input: JsonValue = None,
        check: AnswerCheck | None = None,
    ) -> Reply[AnswerT]:
        """Ask once, repair once if needed (`repair.py`); raise `SpecialistFailed` or
        `SpecialistTimedOut`. `check` runs inside the deadline, like the turns."""
        request = build_request(self._specialist, prompt, answer_schema, system, input)
        left = self.remaining()
        if left <= 0:
            raise SpecialistTimedOut(
                self._specialist, 0.0, provider=self._provider, model=self._model
            )
        before = self._usage
        reply: Reply[AnswerT] | None = None
        try:
            with anyio.CancelScope(deadline=self._deadline) as scope:
                reply = await self._converse(request, answer_schema, before, check)
        except anyio.get_cancelled_exc_class():
            self._charge(Usage(complete=False))  # the cut turn's tokens are unknown
            raise
        if reply is None or scope.cancelled_caught:
            self._charge(Usage(complete=False))
            raise SpecialistTimedOut(
                self._specialist, round(left, 3), provider=self._provider, model=self._model
            )
        return reply

    async def _converse(
        self,
        request: Request,
        answer_schema: type[AnswerT],
        before: Usage,
        check: AnswerCheck | None,
    ) -> Reply[AnswerT]:
        turn = await self._counted_turn(request)
        judged = await _judge(turn, answer_schema, check)
        turns = 1
        if judged.repairable and self.repairable:
            shown = answer_text(turn.text, turn.data)
            failures = judged.failures()
            repair = replace(
                request,
                messages=(
                    *request.messages,
                    Message(role="assistant", content=shown),
                    Message(role="user", content=repair_message(judged)),
                ),
                input=repair_input(request.input, shown, failures),
                turn=2,
                resume=turn.resume,
                repair_of=input_digest(request.input),
                failures=failures,
            )
            turn = await self._counted_turn(repair)
            turns, request = 2, repair
            judged = await _judge(turn, answer_schema, check)
        answer = judged.decoded.answer
        if answer is None:
            raise self._failure(request, judged, turns)
        raw = turn.text if turn.data is None else json.dumps(turn.data, ensure_ascii=False)
        return Reply(answer=answer, usage=_difference(self._usage, before), turns=turns, raw=raw)

    def _failure(self, request: Request, judged: Judged[Any], turns: int) -> SpecialistFailed:
        """Why the last answer is not usable. A safety refusal names its rules, nothing
        more: its schema errors would tell a hostile model how close it came."""
        where = self._where(request)
        if judged.unsafe and judged.verdict is not None:
            detail = "refused, with no repair turn: " + "; ".join(judged.verdict.safety)
            return SpecialistFailed(
                self._specialist,
                "unsafe_answer",
                where + detail,
                provider=self._provider,
                model=self._model,
            )
        problem = judged.decoded.problem
        assert problem is not None
        return SpecialistFailed(
            self._specialist,
            problem.kind,
            where
            + self._secrets.mask(problem.detail)
            + (" (after one repair turn)" if turns == 2 else ""),
            provider=self._provider,
            model=self._model,
            errors=[self._secrets.mask(line) for line in problem.errors],
        )

    def _where(self, request: Request) -> str:
        """What a failure's detail starts with (the exchange lane names its answer file)."""
        return ""

    async def _counted_turn(self, request: Request) -> TurnOutput:
        turn = await self._turn(request)
        self._charge(turn.usage)
        for listener in self._turn_listeners:
            listener(request, turn)
        return turn

    def on_turn(self, listener: TurnListener) -> None:
        """Call `listener(request, turn)` after every turn's answer arrives (recording)."""
        self._turn_listeners.append(listener)

    async def _turn(self, request: Request) -> TurnOutput:
        """Send one request and return the raw answer. Adapters override this."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Nothing to release by default."""

    async def __aenter__(self) -> BaseSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        with anyio.CancelScope(shield=True):
            await self.aclose()


async def _judge(
    turn: TurnOutput, answer_schema: type[AnswerT], check: AnswerCheck | None
) -> Judged[AnswerT]:
    return await judge(
        turn.text,
        turn.data,
        answer_schema,
        check,
        refusal=turn.refusal,
        truncated=turn.truncated,
    )


def _difference(after: Usage, before: Usage) -> Usage:
    """What one finished ask cost: every one of its turns returned, so it is complete."""
    cost = None if after.cost_usd is None else after.cost_usd - (before.cost_usd or 0.0)
    return Usage(
        input_tokens=after.input_tokens - before.input_tokens,
        output_tokens=after.output_tokens - before.output_tokens,
        cost_usd=cost,
        requests=after.requests - before.requests,
        tool_calls=after.tool_calls - before.tool_calls,
        tool_errors=after.tool_errors - before.tool_errors,
    )
