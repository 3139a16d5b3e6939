"""How long a model needs for a postmortem's questions, against its `timeoutMs`
(`postmortem --show-tasks`; docs/specialists.md "Does timeoutMs fit?").

The time model, stated so that a reader can redo the sum:

- a prompt is `(prompt + system characters) / CHARS_PER_TOKEN` tokens, read at
  `READ_TOKENS_PER_SECOND`;
- a turn writes its reasoning (`REASONING_TOKENS` for the lane's effort) and its answer
  (`ANSWER_TOKENS_DISCOVERY` for a discovery, `ANSWER_TOKENS_PER_LESSON` per supplied
  lesson for a maintenance batch) at `WRITE_TOKENS_PER_SECOND`;
- every ask is counted with its one repair turn (SPEC §6), the worst case a deadline
  must allow: the repair reads the prompt, the refused answer and the failures
  (`REPAIR_TOKENS`) again and writes both again;
- a specialist's asks run one after another (maintenance batches, `batch_concurrency`
  at a time); the four specialists run at once, so each must fit the one shared
  `timeoutMs` on its own.

Not counted: a harness CLI's start-up, the CLI lanes' read-only investigation (each
tool call is another model request), queueing at the provider. The estimate is a floor
for the CLI lanes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import JsonValue

CHARS_PER_TOKEN: Final = 4
READ_TOKENS_PER_SECOND: Final = 2_000
WRITE_TOKENS_PER_SECOND: Final = 50
REASONING_TOKENS: Final[dict[str | None, int]] = {
    None: 4_000,  # no effort named: the provider's default, taken as medium
    "low": 1_000,
    "medium": 4_000,
    "high": 8_000,
    "xhigh": 12_000,
    "max": 16_000,
}
ANSWER_TOKENS_DISCOVERY: Final = 1_200
"""Two or three proposals with citations and `why_recurs`."""
ANSWER_TOKENS_PER_LESSON: Final = 150
"""Between a `keep` (about 60 tokens) and an `adapt` with a new card (about 300)."""
REPAIR_TOKENS: Final = 300
"""The repair message: the failures, listed."""


@dataclass(frozen=True, slots=True)
class Asked:
    """One question as sent: its specialist, its text's size, and its task data."""

    specialist: str
    characters: int
    input: JsonValue


@dataclass(frozen=True, slots=True)
class SpecialistTime:
    """The estimate of one specialist's asks."""

    specialist: str
    asks: int
    prompt_tokens: int
    answer_tokens: int
    reasoning_tokens: int
    repair_turns: int
    seconds: float
    fits: bool

    def to_json(self) -> dict[str, Any]:
        """The specialist's entry of `--show-tasks --json`'s `estimate`."""
        return {
            "asks": self.asks,
            "prompt_tokens": self.prompt_tokens,
            "answer_tokens": self.answer_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "repair_turns": self.repair_turns,
            "seconds": round(self.seconds, 1),
            "fits": self.fits,
        }


def _answer_tokens(specialist: str, data: JsonValue) -> int:
    if not specialist.endswith("maintenance"):
        return ANSWER_TOKENS_DISCOVERY
    lessons = data.get("lessons") if isinstance(data, dict) else None
    return ANSWER_TOKENS_PER_LESSON * max(1, len(lessons) if isinstance(lessons, list) else 1)


def _ask_seconds(prompt: int, answer: int, reasoning: int) -> float:
    first = prompt / READ_TOKENS_PER_SECOND + (reasoning + answer) / WRITE_TOKENS_PER_SECOND
    again = (prompt + answer + REPAIR_TOKENS) / READ_TOKENS_PER_SECOND
    return first + again + (reasoning + answer) / WRITE_TOKENS_PER_SECOND


def estimate(
    asked: Sequence[Asked],
    *,
    effort: str | None,
    timeout_seconds: float,
    concurrency: int = 1,
) -> list[SpecialistTime]:
    """Per specialist that asked anything, in the order they first asked."""
    reasoning = REASONING_TOKENS.get(effort, REASONING_TOKENS["high"])
    found: dict[str, list[tuple[int, int]]] = {}
    for question in asked:
        prompt = math.ceil(question.characters / CHARS_PER_TOKEN)
        found.setdefault(question.specialist, []).append(
            (prompt, _answer_tokens(question.specialist, question.input))
        )
    out: list[SpecialistTime] = []
    for name, asks in found.items():
        times = [_ask_seconds(prompt, answer, reasoning) for prompt, answer in asks]
        seconds = sum(times) / max(1, min(concurrency, len(times)))
        out.append(
            SpecialistTime(
                specialist=name,
                asks=len(asks),
                prompt_tokens=sum(prompt for prompt, _ in asks),
                answer_tokens=sum(answer for _, answer in asks),
                reasoning_tokens=reasoning * len(asks),
                repair_turns=len(asks),
                seconds=seconds,
                fits=seconds <= timeout_seconds,
            )
        )
    return out


def rates() -> dict[str, Any]:
    """The constants of the time model, for the `--json` document."""
    return {
        "chars_per_token": CHARS_PER_TOKEN,
        "read_tokens_per_second": READ_TOKENS_PER_SECOND,
        "write_tokens_per_second": WRITE_TOKENS_PER_SECOND,
        "repair_turns_per_ask": 1,
    }
