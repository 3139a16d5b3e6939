"""The one place the worker turns `--lane` and a session's runtime config into the
specialists' session factory (the `lanes` part's resolver replaces this at merge).

- no `--lane`: the lane follows the plan as zeroshot does: the source node's harness CLI
  (`claude` → `claude -p`, `codex` → `codex exec`), since a harness session's user has
  that client installed and signed in;
- `api`: the provider's API with the declared key (`ANTHROPIC_API_KEY`, …);
- `claude` / `codex`: that CLI, whatever the session's harness (pass `--model` when the
  session's model belongs to the other client);
- `replay`: recorded answers (`--replay RECORDINGS.json`);
- `exchange`: task and answer files in `--exchange-dir DIR`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from active_memory.config import PROVIDERS_BY_HARNESS, RuntimeConfig
from active_memory.errors import UsageError
from active_memory.orchestrator import SessionFactory, lane_sessions
from active_memory.specialists.providers import SessionOptions

LANES = ("api", "claude", "codex", "replay", "exchange")


@dataclass(frozen=True, slots=True)
class LaneChoice:
    """What the command line says about the specialists' lane."""

    lane: str | None = None
    replay: Path | None = None
    exchange_dir: Path | None = None
    executable: str | None = None  # a CLI to run instead of `claude` / `codex`

    def check(self) -> None:
        """Refuse a lane without what it needs (exit 2) before anything is claimed."""
        if self.lane is not None and self.lane not in LANES:
            raise UsageError(f"--lane {self.lane!r}: allowed {', '.join(LANES)}")
        if self.lane == "replay" and self.replay is None:
            raise UsageError("--lane replay needs --replay RECORDINGS.json")
        if self.lane == "exchange" and self.exchange_dir is None:
            raise UsageError("--lane exchange needs --exchange-dir DIR")


def session_factory(
    choice: LaneChoice,
    config: RuntimeConfig,
    *,
    checkout: Path | None,
    environ: Mapping[str, str] | None = None,
) -> SessionFactory | None:
    """The specialists' sessions for one postmortem; None when nothing will ask."""
    lane = config.lane
    if lane is None:
        return None
    mode = choice.lane or "cli"
    if mode in ("claude", "codex"):
        if lane.harness != mode:
            lane = lane.model_copy(
                update={"harness": mode, "provider": PROVIDERS_BY_HARNESS[mode][0]}
            )
        mode = "cli"
    if mode == "cli":
        options = SessionOptions(mode="cli", cwd=checkout, executable=choice.executable)
    elif mode == "replay":
        options = SessionOptions(mode="replay", recordings=choice.replay)
    elif mode == "exchange":
        options = SessionOptions(mode="exchange", exchange_dir=choice.exchange_dir)
    else:
        options = SessionOptions(mode="api")
    return lane_sessions(lane, options, environ)
