"""The one repair turn every lane gets (SPEC §6): what it lists, and when there is none.

An ask may carry the caller's `check` (an `AnswerCheck`): an async function that judges
a schema-valid answer (citations, sizes, the content gate) and returns a `Verdict`. The
ask loop (`base.BaseSession`) then judges each answer twice, by its schema and by the
check, and a refused answer gets one repair turn whose message lists **every** failure
of both, exactly as stated: an unknown field and an out-of-range citation are repaired
together. An answer whose only schema fault is unknown fields is checked without them
(`decoding.Decoded.lenient`), so its other faults are listed in the same turn.

No repair turn:
- for a model's refusal (`stop_reason: refusal`): asking again only costs tokens;
- for a safety refusal (`Verdict.safety`: the check's safety rules): telling a hostile
  model how to pass would teach it. The answer stands as checked (its refusal names the
  rule and nothing more); an answer that also failed its schema fails the ask with kind
  `unsafe_answer`, naming only the rules.

The repair turn's `input` (what replay keys on and the exchange lane's repair task file
shows) is complete in itself: `{"task": the first input, "answer": the refused answer's
text, "failures": [...]}`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic

from pydantic import JsonValue

from active_memory.specialists.providers.decoding import AnswerT, Decoded, judge_answer

REPAIR_HEADER = "Your previous answer was not accepted:"
REPAIR_CLOSE = (
    "Answer again with one corrected JSON object that validates against the schema, "
    "and nothing else."
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the caller's checks found in one answer.

    `failures` are what a repair turn lists (each a `json.path: rule: reason` line);
    `safety` the safety refusals (`lessons[0]: refused by destroy-data`): any one of them
    means no repair turn. `again` is the caller's own sentence on how to answer again
    (e.g. "every decision again, not only the ones listed")."""

    failures: tuple[str, ...] = ()
    safety: tuple[str, ...] = ()
    again: str = ""

    @property
    def passed(self) -> bool:
        """Nothing refused."""
        return not self.failures and not self.safety


AnswerCheck = Callable[[Any], Awaitable[Verdict]]
"""The caller's checks of one schema-valid answer (its answer model instance)."""


@dataclass(frozen=True, slots=True)
class Judged(Generic[AnswerT]):
    """One answer judged by its schema and by the caller's check."""

    decoded: Decoded[AnswerT]
    verdict: Verdict | None = None

    @property
    def unsafe(self) -> bool:
        """A safety rule refused it: no repair turn."""
        return self.verdict is not None and bool(self.verdict.safety)

    @property
    def repairable(self) -> bool:
        """Refused for something a repair turn may fix."""
        problem = self.decoded.problem
        if self.unsafe or (problem is not None and problem.kind == "refusal"):
            return False
        return problem is not None or (self.verdict is not None and bool(self.verdict.failures))

    def failures(self) -> tuple[str, ...]:
        """Every failure, the schema's first, then the check's."""
        schema = self.decoded.problem.lines() if self.decoded.problem is not None else ()
        checked = self.verdict.failures if self.verdict is not None else ()
        return (*schema, *checked)


async def judge(
    text: str,
    data: JsonValue | None,
    answer_schema: type[AnswerT],
    check: AnswerCheck | None,
    *,
    refusal: str | None = None,
    truncated: bool = False,
) -> Judged[AnswerT]:
    """Judge one raw answer by its schema, then (when it or its lenient form validates)
    by `check`."""
    decoded = judge_answer(text, data, answer_schema, refusal=refusal, truncated=truncated)
    candidate = decoded.answer if decoded.answer is not None else decoded.lenient
    if check is None or candidate is None:
        return Judged(decoded)
    return Judged(decoded, await check(candidate))


def repair_message(judged: Judged[Any]) -> str:
    """The repair turn's user message: each failure on its own line, exactly."""
    listed = "".join(f"\n- {line}" for line in judged.failures())
    again = judged.verdict.again if judged.verdict is not None else ""
    return REPAIR_HEADER + listed + "\n" + (f"{again} " if again else "") + REPAIR_CLOSE


def repair_input(first: JsonValue, answer: str, failures: Sequence[str]) -> JsonValue:
    """The repair turn's `input`: the first input, the refused answer and every failure."""
    return {"task": first, "answer": answer, "failures": list(failures)}
