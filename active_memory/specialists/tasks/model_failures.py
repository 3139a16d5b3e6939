"""How a task shows the run's failed tool calls (SPEC §3 `tool_failures`): the models.

- `FailedCallView`: calls that failed the same way, collapsed into one entry: the command
  as run, its working folder, when (first and last), how often, the exit code, the paths
  it touched and the execution it ran in;
- `FailureGroupView`: one group of a repeated-failure evidence item (one normalised
  error), with its calls under it instead of the scanner's bare times and commands;
- `RunFailureView`: a failure of the run that concerns a lesson maintenance judges (the
  lesson's files, folders or command families), whether or not it qualified as evidence.

Every field that is empty or at its default is left out of the JSON: a task pays only
for what a call has.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from active_memory.evidence.model import FailureGroup, FailureResolution


def _without_defaults(data: Any, defaults: dict[str, Any]) -> Any:
    """`data` (a model's serialized fields) without those at their default; a tuple's
    default matches its JSON list too."""
    if isinstance(data, dict):
        for key, empty in defaults.items():
            value = data.get(key, _ABSENT)
            if value == empty or (isinstance(empty, tuple) and value == list(empty)):
                del data[key]
    return data


_ABSENT = object()


class FailedCallView(BaseModel):
    """Failed calls that are the same call (command, working folder, exit code, paths,
    execution), collapsed: `at` the first time, `last_at` and `count` when it failed
    more than once. `cwd` is root-relative (`""`: the checkout's root; absent: unknown)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at: str
    command: str
    cwd: str | None = None
    exit_code: int | None = None
    paths: tuple[str, ...] = ()
    count: int = 1
    last_at: str | None = None
    execution: str | None = None

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> Any:
        defaults = {"cwd": None, "exit_code": None, "paths": (), "count": 1, "last_at": None}
        return _without_defaults(handler(self), {**defaults, "execution": None})


class FailureGroupView(FailureGroup):
    """A group of a repeated-failure item (one normalised error, its first error as
    recorded, its count and exit codes) with the calls that failed with it (`calls`, in
    order of their first failure; `calls_omitted` counts the ones past the task's bound)
    and, when another call than the item's resolution resolved it, that one. The
    scanner's `times` and `commands` are not repeated: the calls hold them."""

    calls: tuple[FailedCallView, ...] = ()
    calls_omitted: int = 0
    resolution: FailureResolution | None = None
    """What resolved this group's last failure, when that is not the item's resolution."""

    @model_serializer(mode="wrap")
    def _calls_instead(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            data.pop("times", None)
            data.pop("commands", None)
        defaults = {"exit_codes": (), "calls_omitted": 0, "resolution": None}
        return _without_defaults(data, defaults)


class RunFailureView(BaseModel):
    """Failures of one family with one normalised error in this run that concern a
    supplied lesson: what failed (`family`, the first `error` as recorded), how often
    (`count`), each call (`calls`, collapsed like discovery's; `calls_omitted` past the
    bound), what resolved the last of them (`resolution`), and `evidence`: the ID of the
    repeated-failure item it is part of, when it qualified as one. Its `id` (`f-1`, ...)
    is what a lesson's `run_failures` names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    family: str
    error: str
    count: int
    exit_codes: tuple[int, ...] = ()
    calls: tuple[FailedCallView, ...] = ()
    calls_omitted: int = 0
    resolution: FailureResolution | None = None
    evidence: str | None = None

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> Any:
        defaults = {"exit_codes": (), "calls_omitted": 0, "resolution": None, "evidence": None}
        return _without_defaults(handler(self), defaults)
