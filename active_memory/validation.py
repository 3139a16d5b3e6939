"""Turn pydantic validation errors into messages that name the JSON path."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

# Tags pydantic inserts into an error's location for a discriminated union; they are not
# keys of the document, so a path shown to a person leaves them out.
_UNION_TAGS = {"scope": {"repository", "graph"}}


def json_path(loc: Sequence[int | str], prefix: str = "") -> str:
    """`("events", 3, "event")` → `events[3].event` (the document root is `$`)."""
    path = prefix
    previous: int | str | None = None
    items = list(loc)
    for index, part in enumerate(items):
        is_tag = (
            isinstance(previous, str)
            and part in _UNION_TAGS.get(previous, ())
            and index + 1 < len(items)
        )
        previous = part
        if is_tag:
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "$"


def error_lines(exc: ValidationError, prefix: str = "") -> list[str]:
    """One `path: message` line per error, in pydantic's order."""
    lines = []
    for error in exc.errors(include_url=False):
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "is not a known field"
        elif message.startswith("Value error, "):
            message = message.removeprefix("Value error, ")
        lines.append(f"{json_path(error['loc'], prefix)}: {message}")
    return lines
