"""The checked values of the runtime JSON: strict booleans and integers, model IDs, node
names, environment names and connections (SPEC §2).

Nothing is coerced: JSON `true` is not an integer, `2048.5` and `"2048"` are refused. A
refusal says what was written (`show`) and what is allowed; config/parse.py puts the
JSON path in front of it.
"""

from __future__ import annotations

import json
import re
from typing import Annotated

from pydantic import AfterValidator, PlainValidator
from pydantic_core import PydanticCustomError

_MAX_DECLARED = 64  # zeroshot: at most 64 env names and 64 connections per binding
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def show(value: object) -> str:
    """A JSON value as the user wrote it, shortened for a one-line message."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _strict_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise PydanticCustomError(
        "strict_bool", "{shown} is not a boolean; allowed true or false", {"shown": show(value)}
    )


def _check_budget(value: object) -> int:
    """SPEC §2 `budgetBytes`, by the one rule of `session_budget`."""
    from active_memory.session_budget import budget_problem

    problem = budget_problem(value)
    if problem is None and isinstance(value, int):
        return value
    raise PydanticCustomError("budget_bytes", "{problem}", {"problem": problem})


BudgetBytes = Annotated[int, PlainValidator(_check_budget)]
"""SPEC §2 `budgetBytes`: its one rule is `session_budget.budget_problem`."""


def bounded_int(low: int, high: int) -> PlainValidator:
    """An integer in low..high; JSON true, 2048.5 and "2048" are refused, not coerced."""

    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise PydanticCustomError(
                "strict_int",
                "{shown} is not an integer; allowed {low}..{high}",
                {"shown": show(value), "low": low, "high": high},
            )
        if not low <= value <= high:
            raise PydanticCustomError(
                "out_of_range",
                "{value} is out of range; allowed {low}..{high}",
                {"value": value, "low": low, "high": high},
            )
        return value

    return PlainValidator(check)


def _text(limit: int, what: str) -> PlainValidator:
    """A non-empty string of at most `limit` characters without control characters."""

    def check(value: object) -> str:
        if not isinstance(value, str):
            raise PydanticCustomError(
                "text_type",
                "{shown} is not a string; allowed {what}",
                {"shown": show(value), "what": what},
            )
        if (
            not value
            or len(value) > limit
            or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value)
        ):
            raise PydanticCustomError(
                "text_value",
                "{shown} is not allowed; allowed {what} of 1..{limit} characters, "
                "no control characters",
                {"shown": show(value), "what": what, "limit": limit},
            )
        return value

    return PlainValidator(check)


def _env_name(value: object) -> str:
    if isinstance(value, str) and _ENV_NAME.fullmatch(value):
        return value
    raise PydanticCustomError(
        "env_name",
        "{shown} is not an environment variable name; allowed [A-Za-z_][A-Za-z0-9_]*, "
        "at most 128 bytes",
        {"shown": show(value)},
    )


def _unique_names(names: list[str]) -> list[str]:
    if len(names) > _MAX_DECLARED:
        raise PydanticCustomError(
            "too_many", "{count} names; allowed at most 64", {"count": len(names)}
        )
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise PydanticCustomError("duplicate", "{name} is declared twice", {"name": show(name)})
        seen.add(name)
    return names


def _connections(value: dict[str, list[str]]) -> dict[str, list[str]]:
    if len(value) > _MAX_DECLARED:
        raise PydanticCustomError(
            "too_many", "{count} connections; allowed at most 64", {"count": len(value)}
        )
    owner: dict[str, str] = {}
    for key, names in value.items():
        if not names:
            raise PydanticCustomError(
                "empty_connection",
                "connection {key} declares no environment name; allowed 1..64 names",
                {"key": show(key)},
            )
        for name in names:
            if name in owner:
                raise PydanticCustomError(
                    "shared_env",
                    "{name} is declared by connections {first} and {second}; "
                    "one name may come from one connection only",
                    {"name": show(name), "first": show(owner[name]), "second": show(key)},
                )
            owner[name] = key
    if len(owner) > _MAX_DECLARED:
        raise PydanticCustomError(
            "too_many", "{count} environment names; allowed at most 64", {"count": len(owner)}
        )
    return value


StrictBool = Annotated[bool, PlainValidator(_strict_bool)]
ModelId = Annotated[str, _text(2048, "a model ID")]
NodeName = Annotated[str, _text(256, "a node name")]
EnvName = Annotated[str, PlainValidator(_env_name)]
EnvList = Annotated[list[EnvName], AfterValidator(_unique_names)]
ConnectionKey = Annotated[str, _text(128, "a connection key")]
Connections = Annotated[dict[ConnectionKey, EnvList], AfterValidator(_connections)]
