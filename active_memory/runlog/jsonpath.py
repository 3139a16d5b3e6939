"""Pydantic validation errors as short messages naming the JSON path in the input.

`describe_validation_error(exc, data)` turns the first error into e.g.
`events[3].event.completion.outcome.status: expected one of verified, verifier, error`,
walking `data` alongside the error location so that the tags pydantic adds for tagged
unions never appear in the path.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError


def describe_validation_error(exc: ValidationError, data: Any) -> str:
    """The first problem as `json.path: expected …`, plus how many more there are."""
    errors = exc.errors(include_url=False)
    first = _one_error(errors[0], data)
    more = len(errors) - 1
    return first if more == 0 else f"{first} (and {more} more problem{'s' * (more > 1)})"


def _one_error(error: Any, data: Any) -> str:
    path = _json_path(error["loc"], data)
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "union_tag_invalid" or kind == "union_tag_not_found":
        field = str(ctx.get("discriminator", "")).strip("'")
        path = f"{path}.{field}" if path else field
        if kind == "union_tag_not_found":
            return f"{path}: required field missing"
        expected = ", ".join(t.strip().strip("'") for t in ctx["expected_tags"].split(","))
        return f"{path}: expected one of {expected}"
    return f"{path or '(record)'}: {_expectation(kind, ctx, error['msg'])}"


_EXPECTED = {
    "missing": "required field missing",
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


def _expectation(kind: str, ctx: dict[str, Any], message: str) -> str:
    if kind == "literal_error":
        options = str(ctx.get("expected", "")).replace(" or ", ", ")
        return "expected one of " + ", ".join(o.strip().strip("'") for o in options.split(","))
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        return f"expected a number {'>=' if kind.endswith('equal') else '>'} {bound}"
    if kind == "value_error":
        return str(ctx.get("error", message))
    return _EXPECTED.get(kind, message[:1].lower() + message[1:])


def _json_path(loc: tuple[int | str, ...], data: Any) -> str:
    # Pydantic puts the tag of a discriminated union into `loc`; walk the real data
    # alongside so the path names only keys and indexes the file actually has.
    parts: list[str] = []
    current = data
    for position, element in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(element, int) and isinstance(current, list):
            parts.append(f"[{element}]")
            current = current[element] if 0 <= element < len(current) else None
        elif isinstance(current, dict) and (element in current or last):
            parts.append(f".{element}" if parts else str(element))
            current = current.get(element)
        elif last and not str(element).startswith(("function-", "[key]")):
            parts.append(f".{element}" if parts else str(element))
    return "".join(parts)
