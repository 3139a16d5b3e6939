"""Which lane the specialists use: a lane named by the caller, or the runtime plan's.

| lane | sessions |
|---|---|
| `api` | the plan's provider through its API (Anthropic, OpenAI, OpenRouter) |
| `claude` | `claude -p` in the checkout, read-only |
| `codex` | `codex exec` in the checkout, read-only |
| `replay` | recorded answers (a recordings file) |
| `exchange` | task and answer files in a folder |

Without a named lane the plan decides, as zeroshot does: the source node's harness
(`claude` → `claude -p`, `codex` → `codex exec`), except that a node which declares its
provider's API key (and the key is set) talks to the provider's API directly. A choice
that cannot work is a `UsageError` (exit 2) before any model is asked: replay without
recordings, exchange without a folder, the API without its key, a CLI lane whose binary
is not found or whose harness is not the plan's. `postmortem --lane` and `worker --lane`
both call `choose_lane`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias, get_args

from active_memory.config import RuntimeConfig, SpecialistLane
from active_memory.errors import UsageError
from active_memory.orchestrator.sessions import SessionFactory, lane_sessions
from active_memory.specialists.providers import SessionOptions
from active_memory.specialists.providers.credentials import declared_names
from active_memory.worker_settings import BINARY_VARIABLES as BINARY_VARIABLES
from active_memory.worker_settings import INSTALL_HINTS, PROVIDER_KEYS, PROVIDER_SDKS, sdk_installed
from active_memory.worker_settings import find_executable as find_executable

if TYPE_CHECKING:
    from active_memory.specialists.providers.exchange import Pending

LaneName: TypeAlias = Literal["api", "claude", "codex", "replay", "exchange"]
LANE_NAMES: tuple[LaneName, ...] = get_args(LaneName)

_CLI_LABEL = {"claude": "claude -p", "codex": "codex exec"}


@dataclass(frozen=True, slots=True)
class LaneOptions:
    """What the lanes may need besides the plan."""

    recordings: Path | None = None  # replay
    exchange_dir: Path | None = None  # exchange
    exchange_waiting: Callable[[Pending], None] | None = None  # exchange: where a task is
    checkout: Path | None = None  # the CLI lanes run (and read) there
    investigate: bool = True  # the CLI lanes may read the checkout with read-only tools
    environ: Mapping[str, str] | None = None  # default: os.environ


@dataclass(frozen=True, slots=True)
class ChosenLane:
    """The lane, why it was chosen, and the sessions the orchestrator takes.

    `sessions` is None only when the postmortem collects nothing (no source node).
    """

    name: LaneName
    chosen_by: Literal["option", "plan"]
    reason: str
    sessions: SessionFactory | None
    executable: str | None = None

    def to_json(self) -> dict[str, str]:
        """`{"name", "chosen_by", "reason"[, "executable"]}` for reports."""
        found = {"name": self.name, "chosen_by": self.chosen_by, "reason": self.reason}
        if self.executable is not None:
            found["executable"] = self.executable
        return found


def choose_lane(
    config: RuntimeConfig,
    requested: LaneName | None = None,
    options: LaneOptions | None = None,
) -> ChosenLane:
    """The lane for `config`'s postmortem: `requested`, else the plan's (see the module).

    Raises `UsageError` when the lane cannot work.
    """
    opts = options or LaneOptions()
    environ = os.environ if opts.environ is None else opts.environ
    if requested is not None and requested not in LANE_NAMES:
        raise UsageError(f"unknown lane {requested!r}; allowed {', '.join(LANE_NAMES)}")
    if opts.recordings is not None and requested not in (None, "replay"):
        raise UsageError(
            f"--replay answers from recordings, which the {requested} lane does not use; "
            "drop one of them"
        )
    if requested is None and opts.recordings is not None:
        requested = "replay"
    chosen_by: Literal["option", "plan"] = "plan" if requested is None else "option"
    lane = config.lane
    if lane is None:
        name = requested or "api"
        return ChosenLane(name, chosen_by, "the postmortem collects nothing", None)
    if requested is None:
        name, reason = plan_lane(lane, environ)
    else:
        name, reason = requested, f"--lane {requested}"
    if name == "replay":
        if opts.recordings is None:
            raise UsageError("--lane replay needs --replay RECORDINGS.json")
        session_options = SessionOptions(mode="replay", recordings=opts.recordings)
        return ChosenLane(name, chosen_by, reason, lane_sessions(lane, session_options, environ))
    if name == "exchange":
        if opts.exchange_dir is None:
            raise UsageError(
                "--lane exchange needs --exchange-dir DIR for its task and answer files"
            )
        session_options = SessionOptions(
            mode="exchange", exchange_dir=opts.exchange_dir, exchange_waiting=opts.exchange_waiting
        )
        return ChosenLane(name, chosen_by, reason, lane_sessions(lane, session_options, environ))
    if name == "api":
        _require_api_key(lane, environ)
        return ChosenLane(name, chosen_by, reason, lane_sessions(lane, SessionOptions(), environ))
    return _cli_lane(name, chosen_by, reason, lane, opts, environ)


def plan_lane(lane: SpecialistLane, environ: Mapping[str, str]) -> tuple[LaneName, str]:
    """The plan's lane and why: the provider's API when the node declares its key and
    the key is set, else the harness's CLI."""
    key = PROVIDER_KEYS.get(lane.provider)
    if key is not None and key in declared_names(lane) and environ.get(key):
        return "api", (
            f"the plan's provider {lane.provider}, with {key} declared by "
            f"nodes.{lane.source_node}.env"
        )
    harness: LaneName = "claude" if lane.harness == "claude" else "codex"
    return harness, f"the plan's harness {lane.harness} ({_CLI_LABEL[lane.harness]})"


def _cli_lane(
    name: LaneName,
    chosen_by: Literal["option", "plan"],
    reason: str,
    lane: SpecialistLane,
    opts: LaneOptions,
    environ: Mapping[str, str],
) -> ChosenLane:
    if lane.harness != name:
        raise UsageError(
            f"--lane {name}: the plan's harness is {lane.harness} (model {lane.model!r}), "
            f"which {_CLI_LABEL[name]} does not run; use --lane {lane.harness} or --lane api"
        )
    executable = find_executable(name, environ)
    if executable is None:
        variable = BINARY_VARIABLES[name]
        configured = environ.get(variable)
        where = (
            f"{variable}={configured} is not an executable file"
            if configured
            else f"`{name}` was not found on PATH"
        )
        key = PROVIDER_KEYS.get(lane.provider, "the provider's key")
        raise UsageError(
            f"the {name} lane ({reason}): {where}; {INSTALL_HINTS[name]} or set {variable} "
            f"to its path, or use --lane api with {key} in nodes.{lane.source_node}.env"
        )
    session_options = SessionOptions(
        mode="cli", cwd=opts.checkout, executable=executable, investigate=opts.investigate
    )
    sessions = lane_sessions(lane, session_options, environ)
    return ChosenLane(name, chosen_by, reason, sessions, executable)


def _require_api_key(lane: SpecialistLane, environ: Mapping[str, str]) -> None:
    key = PROVIDER_KEYS.get(lane.provider)
    if key is None:
        raise UsageError(
            f"--lane api: provider {lane.provider!r} has no API adapter; allowed "
            f"{', '.join(PROVIDER_KEYS)}"
        )
    where = f"nodes.{lane.source_node}.env"
    if key not in declared_names(lane):
        raise UsageError(
            f"--lane api: provider {lane.provider} needs {key}, which {where} does not "
            f"declare; add it there, or use --lane {lane.harness}"
        )
    if not environ.get(key):
        raise UsageError(
            f"--lane api: {key} is declared in {where} but not set in the environment; export it"
        )
    if not sdk_installed(lane.provider):
        from active_memory.install_source import extra_command

        extra = "anthropic" if lane.provider == "anthropic" else "openai"
        raise UsageError(
            f"--lane api: provider {lane.provider} needs the {PROVIDER_SDKS[lane.provider]} "
            f"package, which is not installed: {extra_command(extra)}, or use "
            f"--lane {lane.harness}"
        )
