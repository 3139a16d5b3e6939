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

    def factory(specialist: SpecialistName, *, deadline: float) -> ProviderSession:
        return open_session(lane, specialist, deadline=deadline, options=options, environ=environ)

    return factory
