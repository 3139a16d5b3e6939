"""Tool failures (SPEC §3 "Tool failures"): the `ToolFailure` model and its bounds; pure.

One entry per failed tool call of a harness session, built by the importers from the
transcript (never from the hook's receipts, which hold no results):

- `command` is cut to `MAX_COMMAND_BYTES` and `error` to `MAX_ERROR_BYTES` of UTF-8 (a
  cut ends in `…` and never splits a character); paths are root-relative like receipt
  paths (receipts.py), at most `MAX_FAILURE_PATHS`, a path outside the checkout dropped.
- At most `MAX_TOOL_FAILURES` per run: the first `FAILURES_KEPT_FIRST` and the latest
  `MAX_TOOL_FAILURES - FAILURES_KEPT_FIRST` survive, in recorded order; the record's
  `tool_failures_dropped` counts the rest.

The bounds hold for every record that is read, not only for what an importer builds:
a hand-written record with a 10 KB error is cut like an imported one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from active_memory.runlog.receipts import Timestamp, relative_path

MAX_TOOL_FAILURES = 256
FAILURES_KEPT_FIRST = 128
MAX_COMMAND_BYTES = 512
MAX_ERROR_BYTES = 1024
MAX_FAILURE_PATHS = 16

_ELLIPSIS = "…"


def cut_bytes(text: str, limit: int) -> str:
    """`text` in at most `limit` bytes of UTF-8; a cut text ends in `…`."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    room = limit - len(_ELLIPSIS.encode("utf-8"))
    return data[: max(room, 0)].decode("utf-8", errors="ignore") + _ELLIPSIS


def _bounded(limit: int) -> Any:
    def check(value: Any) -> Any:
        return cut_bytes(value, limit) if isinstance(value, str) else value

    return BeforeValidator(check)


Command = Annotated[str, _bounded(MAX_COMMAND_BYTES)]
ErrorText = Annotated[str, _bounded(MAX_ERROR_BYTES)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True, frozen=True)


class ResolvedBy(_Model):
    """The first later call that succeeded in the failure's family or on its paths."""

    at: Timestamp | None = None
    command: Command = ""
    family: str
    edited: bool | None = None
    """Whether files were edited between the failure and this call (None: not known)."""


class ToolFailure(_Model):
    """One failed tool call: where, what was run, how it failed, what finally worked."""

    node: str | None = None
    execution: str | None = None
    tool: str
    at: Timestamp | None = None
    command: Command = ""
    family: str
    cwd: str | None = None
    """The call's working folder, root-relative (`""`: the checkout root); None unknown."""
    exit_code: int | None = Field(default=None, strict=True)
    error: ErrorText = ""
    paths: tuple[str, ...] = ()
    resolved_by: ResolvedBy | None = None


def _clean(failure: ToolFailure, checkout: str | None) -> ToolFailure:
    paths: list[str] = []
    for path in failure.paths:
        relative = relative_path(path, checkout)
        if relative is not None and relative not in paths:
            paths.append(relative)
        if len(paths) == MAX_FAILURE_PATHS:
            break
    if tuple(paths) == failure.paths:
        return failure
    return failure.model_copy(update={"paths": tuple(paths)})


def normalize(
    failures: Sequence[ToolFailure], checkout: str | None
) -> tuple[tuple[ToolFailure, ...], int]:
    """Clean paths and cap; return the kept failures and how many were dropped."""
    cleaned = [_clean(failure, checkout) for failure in failures]
    if len(cleaned) <= MAX_TOOL_FAILURES:
        return tuple(cleaned), 0
    latest = MAX_TOOL_FAILURES - FAILURES_KEPT_FIRST
    kept = cleaned[:FAILURES_KEPT_FIRST] + cleaned[-latest:]
    return tuple(kept), len(cleaned) - MAX_TOOL_FAILURES
