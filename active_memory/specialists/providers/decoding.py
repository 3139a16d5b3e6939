"""A model's raw answer turned into a validated answer, or into a problem that says why not.

Nothing here raises on a bad answer: an empty text, text that is not JSON, JSON past the
bounded reader's limits and an answer that fails its model are all a `Problem` (kind,
detail, and one `path: message` line per validation error), which the ask loop quotes
back in its one repair turn or turns into a `SpecialistFailed`.

An answer whose only fault is unknown fields (a `confidence` the schema does not have)
also yields `lenient`: the same answer validated without those fields. The repair turn
then lists the unknown fields *and* what the caller's checks find in the rest of the
answer (an out-of-range citation), so one repair turn can fix both (SPEC §6).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, JsonValue, ValidationError

from active_memory.reader import MAX_DEPTH, check_value
from active_memory.validation import error_lines

AnswerT = TypeVar("AnswerT", bound=BaseModel)

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*)\n```\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Problem:
    """Why an answer was not accepted: `kind` (`empty_answer`, `not_json`,
    `invalid_answer`, `refusal`), a one-line `detail`, and the validation error lines."""

    kind: str
    detail: str
    errors: tuple[str, ...] = ()

    def lines(self) -> tuple[str, ...]:
        """What a repair turn lists: each error line, or the detail when there are none."""
        return self.errors or (self.detail,)


@dataclass(frozen=True, slots=True)
class Decoded(Generic[AnswerT]):
    """One raw answer, judged by its schema: `answer` when it validates, else `problem`
    (and `lenient` when unknown fields are the only fault)."""

    answer: AnswerT | None
    problem: Problem | None
    lenient: AnswerT | None = None


def excerpt(text: str, limit: int = 200) -> str:
    """A one-line excerpt for messages."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def decode_answer(text: str) -> tuple[JsonValue | None, Problem | None]:
    """The JSON value of an answer text; models often fence JSON in ``` even when told not to."""
    stripped = text.strip()
    if not stripped:
        return None, Problem("empty_answer", "the model's answer was empty")
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        value: JsonValue = json.loads(stripped)
    except json.JSONDecodeError as exc:
        return None, Problem(
            "not_json",
            f"the model's answer is not JSON ({exc.msg} at line {exc.lineno} column "
            f"{exc.colno}): {excerpt(stripped)!r}",
        )
    except RecursionError:
        return None, Problem("not_json", f"the model's answer is nested deeper than {MAX_DEPTH}")
    except ValueError as exc:  # an integer past Python's digit limit
        return None, Problem("not_json", f"the model's answer is not usable JSON: {exc}")
    # The bounded reader's limits hold for answers too (depth, integer size, surrogates).
    problem = check_value(value)
    if problem is not None:
        return None, Problem("not_json", f"the model's answer is not usable JSON: {problem}")
    return value, None


def answer_text(text: str, data: JsonValue | None) -> str:
    """One answer as a repair turn shows it to the model and keys it: its JSON value
    (json.dumps) when it has one (whether the lane decoded it, or it was text, fenced
    or not), else its text. Replay gives back the value, so its repair keys the same."""
    if data is None:
        data, problem = decode_answer(text)
        if problem is not None:
            return text
    return json.dumps(data, ensure_ascii=False)


def judge_answer(
    text: str,
    data: JsonValue | None,
    answer_schema: type[AnswerT],
    *,
    refusal: str | None = None,
    truncated: bool = False,
) -> Decoded[AnswerT]:
    """Validate one raw answer (`data` when the lane decoded it already, else `text`)."""
    if refusal is not None:
        return Decoded(None, Problem("refusal", f"the model refused: {excerpt(refusal)}"))
    if data is None:
        data, problem = decode_answer(text)
        if problem is not None:
            if truncated:
                problem = replace(
                    problem, detail=problem.detail + " (cut off at the output token limit)"
                )
            return Decoded(None, problem)
    try:
        return Decoded(answer_schema.model_validate(data), None)
    except ValidationError as exc:
        lines = tuple(error_lines(exc))
        shown = "; ".join(lines[:5]) + (f" (and {len(lines) - 5} more)" if len(lines) > 5 else "")
        problem = Problem(
            "invalid_answer", f"the answer does not match {answer_schema.__name__}: {shown}", lines
        )
        return Decoded(None, problem, _without_unknown_fields(data, exc, answer_schema))


def _without_unknown_fields(
    data: Any, exc: ValidationError, answer_schema: type[AnswerT]
) -> AnswerT | None:
    """`data` validated with its unknown fields removed, when those are its only errors."""
    errors = exc.errors(include_url=False)
    if not errors or any(e["type"] != "extra_forbidden" for e in errors):
        return None
    pruned = copy.deepcopy(data)
    # The deepest first: removing a field never moves another error's location.
    for error in sorted(errors, key=lambda e: len(e["loc"]), reverse=True):
        *parents, name = error["loc"]
        node = pruned
        try:
            for key in parents:
                node = node[key]
            del node[name]
        except (KeyError, IndexError, TypeError):
            return None
    try:
        return answer_schema.model_validate(pruned)
    except ValidationError:
        return None
