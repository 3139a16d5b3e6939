"""The one place the worker turns `--lane` and a session's runtime config into the
specialists' session factory: `orchestrator.lanes.choose_lane`, as `postmortem --lane`.

Without `--lane` the plan decides as zeroshot does (docs/providers.md): the session's
harness CLI (`claude -p`, `codex exec`), or the provider's API when the worker's
environment holds the provider's key (the worker's runtime declares it, see
`worker/runtime.py`). `LaneChoice.check` refuses options that cannot work before anything
is claimed; a lane that cannot run one session (its CLI missing, another harness) sends
that entry back to the queue for a worker that can (`LaneUnavailable`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from active_memory.config import RuntimeConfig
from active_memory.errors import UsageError
from active_memory.orchestrator import SessionFactory
from active_memory.orchestrator.lanes import LANE_NAMES, LaneName, LaneOptions, choose_lane

LANES: tuple[LaneName, ...] = LANE_NAMES


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


def session_factory(
    choice: LaneChoice,
    config: RuntimeConfig,
    *,
    checkout: Path | None,
    environ: Mapping[str, str] | None = None,
) -> SessionFactory | None:
    """The specialists' sessions for one postmortem; None when nothing will ask.

    Raises `LaneUnavailable` when the lane cannot run this session.
    """
    options = LaneOptions(
        recordings=choice.replay, exchange_dir=choice.exchange_dir, checkout=checkout,
        environ=environ,
    )  # fmt: skip
    try:
        return choose_lane(config, choice.lane, options).sessions
    except UsageError as exc:
        raise LaneUnavailable(str(exc)) from None
