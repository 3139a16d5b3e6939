"""How the orchestrator gets a provider session per specialist.

A `SessionFactory` is called once per specialist (and again for a re-reconciliation
after a revision conflict) with the postmortem's absolute deadline. The default,
`lane_sessions(lane, options)`, is `open_session` on the source node's lane; tests pass a
factory of `FunctionSession`s, which go through the same ask loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from active_memory.config import SpecialistLane
from active_memory.specialists.kinds import SpecialistName
from active_memory.specialists.providers import ProviderSession, SessionOptions, open_session
from active_memory.specialists.providers.factory import load_adapter


class SessionFactory(Protocol):
    """Open a new session for `specialist` whose turns never run past `deadline`
    (an absolute `anyio.current_time()` value). May raise `SpecialistFailed`."""

    def __call__(self, specialist: SpecialistName, *, deadline: float) -> ProviderSession: ...


def lane_sessions(
    lane: SpecialistLane,
    options: SessionOptions | None = None,
    environ: Mapping[str, str] | None = None,
) -> SessionFactory:
    """Sessions on the source node's lane (`open_session`), e.g. `SessionOptions(mode="replay",
    recordings=path)` for recorded answers."""

    return LaneSessions(lane, options, environ)


class LaneSessions:
    """A `SessionFactory` on one lane; `prepare()` loads its SDK off the event loop."""

    def __init__(
        self,
        lane: SpecialistLane,
        options: SessionOptions | None,
        environ: Mapping[str, str] | None,
    ) -> None:
        self.lane = lane
        self.options = options
        self.environ = environ

    async def prepare(self) -> None:
        """Import the lane's provider SDK in a worker thread (see `load_adapter`)."""
        await load_adapter(self.lane, self.options)

    def __call__(self, specialist: SpecialistName, *, deadline: float) -> ProviderSession:
        return open_session(
            self.lane, specialist, deadline=deadline, options=self.options, environ=self.environ
        )
