"""The one place the worker turns its lane into the specialists' session factory:
`orchestrator.lanes.choose_lane`, as `postmortem --lane`.

The worker's lane is fixed when it starts and named in its first line (`WorkerLane`):

- `--lane replay|exchange` (tests, the file-exchange lane): as given;
- `--lane claude|codex|api`, else `[worker] lane`, else the first that can run
  (`worker_settings.pick_lane`: `claude`, `codex`, then the API lane when `[worker.env]`
  holds a key and its SDK is installed). An exported variable never changes it.

Each session's postmortem then runs on that lane: a CLI lane's plan names its harness,
the API lane's its provider (`LaneTarget`), and the model is `--model` or `[worker]
model`, else the session's own when the lane runs the session's harness. A session the
lane cannot run (no lane at all, no model for another harness's session, the CLI gone)
is not that session's fault: `LaneUnavailable` sends its entry back to the queue,
uncounted, with the reason, unless it has nothing to learn (the worker then finishes it
without a model).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from active_memory.config import RuntimeConfig
from active_memory.errors import UsageError
from active_memory.orchestrator import SessionFactory
from active_memory.orchestrator.lanes import LANE_NAMES, LaneName, LaneOptions, choose_lane
from active_memory.worker_settings import LanePick

LANES: tuple[LaneName, ...] = LANE_NAMES
PROVIDER_HARNESS = {"anthropic": "claude", "openai": "codex"}
"""The plan's harness for an API provider (OpenRouter keeps the session's)."""


class LaneUnavailable(UsageError):
    """This worker's lane cannot run this session's postmortem (another worker may)."""


@dataclass(frozen=True, slots=True)
class LaneChoice:
    """What the command line says about the specialists' lane."""

    lane: LaneName | None = None
    replay: Path | None = None
    exchange_dir: Path | None = None

    def check(self) -> None:
        """Refuse a lane without what it needs (exit 2) before anything is claimed."""
        if self.lane is not None and self.lane not in LANES:
            raise UsageError(f"--lane {self.lane!r}: allowed {', '.join(LANES)}")
        if self.lane == "replay" and self.replay is None:
            raise UsageError("--lane replay needs --replay RECORDINGS.json")
        if self.replay is not None and self.lane not in (None, "replay"):
            raise UsageError(
                f"--replay answers from recordings, which the {self.lane} lane does not use; "
                "drop one of them"
            )
        if self.lane == "exchange" and self.exchange_dir is None:
            raise UsageError("--lane exchange needs --exchange-dir DIR")

    @property
    def files(self) -> bool:
        """A lane that answers from files (replay, exchange), whatever the plan."""
        return self.lane in ("replay", "exchange") or self.replay is not None


@dataclass(frozen=True, slots=True)
class LaneTarget:
    """What a session's plan takes from the worker's lane: the harness (CLI lanes and the
    API provider's), the provider (API lane) and the model (None: the session's own)."""

    harness: str | None = None
    provider: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class WorkerLane:
    """The worker's lane for its whole run: `choice` (the command line), `pick` (the
    resolved claude, codex or api lane, or why none; None for file lanes) and `model`."""

    choice: LaneChoice = field(default_factory=LaneChoice)
    pick: LanePick | None = None
    model: str | None = None
    environ: Mapping[str, str] | None = None

    @property
    def problem(self) -> str:
        """Why no postmortem that needs a model can run ('' when one can)."""
        if self.choice.files or self.pick is None:
            return ""
        return self.pick.problem

    def target(self) -> LaneTarget:
        """The plan's harness, provider and model this lane asks for."""
        pick = self.pick
        if self.choice.files or pick is None or pick.name is None:
            return LaneTarget(model=self.model)
        if pick.name == "api":
            harness = PROVIDER_HARNESS.get(pick.provider or "")
            return LaneTarget(harness=harness, provider=pick.provider, model=self.model)
        return LaneTarget(harness=pick.name, model=self.model)

    def describe(self) -> str:
        """The first line a worker prints: its lane and its model."""
        if self.choice.files:
            lane = f"lane {self.choice.lane or 'replay'} (--lane)"
        elif self.pick is None:
            lane = "lane given by the caller"
        else:
            lane = f"lane {self.pick.describe()}"
        model = (
            f"model {self.model}"
            if self.model
            else "model: each session's own (another harness's sessions need [worker] model)"
        )
        return f"{lane}; {model}"


def session_factory(
    lane: WorkerLane,
    config: RuntimeConfig,
    *,
    checkout: Path | None,
    environ: Mapping[str, str] | None = None,
) -> SessionFactory | None:
    """The specialists' sessions for one postmortem; None when nothing will ask.

    Raises `LaneUnavailable` when the lane cannot run this session.
    """
    choice = lane.choice
    requested: LaneName | None = choice.lane
    if not choice.files and lane.pick is not None:
        if lane.pick.name is None:
            raise LaneUnavailable(lane.pick.problem)
        requested = lane.pick.name  # type: ignore[assignment]
    options = LaneOptions(
        recordings=choice.replay, exchange_dir=choice.exchange_dir, checkout=checkout,
        environ=lane.environ if lane.environ is not None else environ,
    )  # fmt: skip
    try:
        return choose_lane(config, requested, options).sessions
    except UsageError as exc:
        raise LaneUnavailable(str(exc)) from None
