"""A session whose answers come from a Python function, for testing code that uses sessions
(the orchestrator, the checks) without a server; like pydantic-ai's `FunctionModel`.

It goes through the same ask loop as every adapter: the deadline, the one repair turn
(the function sees `request.turn == 2` and the quoted errors), usage accounting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import JsonValue

from active_memory.specialists.providers.base import BaseSession, Request, TurnOutput, Usage

AnswerFunction = Callable[[Request], Awaitable[JsonValue]]


class FunctionSession(BaseSession):
    """Answers with `await function(request)`: a string is the model's text (decoded like
    any answer, so it may be garbage), anything else an already decoded JSON answer."""

    def __init__(
        self,
        specialist: str,
        function: AnswerFunction,
        *,
        model: str = "function",
        deadline: float | None = None,
        usage_per_turn: Usage | None = None,
    ) -> None:
        super().__init__(specialist, "function", model, deadline=deadline)
        self._function = function
        self._turn_usage = usage_per_turn or Usage(requests=1)

    async def _turn(self, request: Request) -> TurnOutput:
        value = await self._function(request)
        if isinstance(value, str):
            return TurnOutput(text=value, usage=self._turn_usage)
        return TurnOutput(text="", data=value, usage=self._turn_usage)
