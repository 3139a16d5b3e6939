"""Pydantic validation errors as short messages that name the JSON path in the input.

One place for the whole package: a person reading `events[3].event.completion.outcome.status:
expected one of verified, verifier, error` knows which value of which file to fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_NO_DATA = object()


def json_path(loc: Sequence[int | str], data: Any = _NO_DATA) -> str:
    """`("events", 3, "event")` → `events[3].event`; odd keys are quoted (`nodes["a b"]`).

    With the validated `data`, the path follows the document itself, so the tags pydantic
    puts into a location for discriminated unions (which are not keys of the document)
    never appear.
    """
    parts: list[str] = []
    current = data
    for position, element in enumerate(loc):
        last = position == len(loc) - 1
        if current is not _NO_DATA:
            if isinstance(element, int) and isinstance(current, list):
                current = current[element] if 0 <= element < len(current) else None
            elif isinstance(current, dict) and (element in current or last):
                current = current.get(element)
            elif last and not str(element).startswith(("function-", "[key]")):
                pass
            else:
                continue  # a union tag, not a key of the document
        parts.append(_step(element, first=not parts))
    return "".join(parts) or "$"


def _step(element: int | str, *, first: bool) -> str:
    if isinstance(element, int):
        return f"[{element}]"
    if _PLAIN_KEY.fullmatch(element):
        return element if first else f".{element}"
    return f"[{json.dumps(element)}]"


def error_lines(exc: ValidationError, data: Any = _NO_DATA, prefix: str = "") -> list[str]:
    """One `path: message` line per error, in pydantic's order."""
    lines = []
    for error in exc.errors(include_url=False):
        loc = list(error["loc"])
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            # The problem is the tag field itself: name it in the path.
            loc.append(str((error.get("ctx") or {}).get("discriminator", "")).strip("'"))
        path = json_path(loc, data)
        if prefix:
            path = prefix if path == "$" else f"{prefix}.{path}"
        lines.append(f"{path}: {_message(error)}")
    return lines


def describe_validation_error(exc: ValidationError, data: Any = _NO_DATA) -> str:
    """The first problem as `json.path: expected …`, plus how many more there are."""
    lines = error_lines(exc, data)
    more = len(lines) - 1
    return lines[0] if more == 0 else f"{lines[0]} (and {more} more problem{'s' * (more > 1)})"


_EXPECTED = {
    "missing": "required field missing",
    "extra_forbidden": "is not a known field",
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
    "dict_type": "expected an object",
    "model_type": "expected an object",
    "model_attributes_type": "expected an object",
    "datetime_type": "expected an ISO 8601 time",
    "datetime_parsing": "expected an ISO 8601 time",
    "datetime_from_date_parsing": "expected an ISO 8601 time",
}


def _message(error: Any) -> str:
    kind, ctx, message = error["type"], error.get("ctx") or {}, str(error["msg"])
    if kind == "union_tag_not_found":
        return "required field missing"
    if kind == "union_tag_invalid":
        expected = ", ".join(t.strip().strip("'") for t in str(ctx["expected_tags"]).split(","))
        return f"expected one of {expected}"
    if kind == "literal_error":
        options = str(ctx.get("expected", "")).replace(" or ", ", ")
        return "expected one of " + ", ".join(o.strip().strip("'") for o in options.split(","))
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        return f"expected a number {'>=' if kind.endswith('equal') else '>'} {bound}"
    if kind == "value_error":
        return str(ctx.get("error", message.removeprefix("Value error, ")))
    return _EXPECTED.get(kind, message)
