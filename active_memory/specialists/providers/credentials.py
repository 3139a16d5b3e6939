"""API keys and base URLs from the lane's declared environment, and masking of secrets.

A specialist may use only the environment its source node declares (`env` and the names
of its `connections`, SPEC §2). Every value read here is a secret: it is masked in every
message this package writes, and never logged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from active_memory.config import SpecialistLane
from active_memory.errors import SpecialistFailed

MASK = "***"
# Shapes of provider keys that may echo back in an error body even when we did not read them.
_KEY_SHAPES = re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{8,}|\bBearer\s+[A-Za-z0-9._\-]{8,}")


def declared_names(lane: SpecialistLane) -> list[str]:
    """Every environment name the lane declares, `env` first, then each connection's."""
    names = list(lane.env)
    for connection in lane.connections.values():
        names.extend(n for n in connection if n not in names)
    return names


class Secrets:
    """The secret values one session holds, and a `mask` that hides them in text."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        # Longest first, so a key that contains another is masked whole.
        self._values = sorted({v for v in values if len(v) >= 4}, key=len, reverse=True)

    def add(self, value: str) -> None:
        """Remember one more secret value."""
        self._values = sorted({*self._values, value} - {""}, key=len, reverse=True)

    def mask(self, text: str) -> str:
        """The text with every known secret, and anything shaped like a key, replaced."""
        for value in self._values:
            text = text.replace(value, MASK)
        return _KEY_SHAPES.sub(MASK, text)


def read_declared(
    lane: SpecialistLane, name: str, environ: Mapping[str, str] | None = None
) -> str | None:
    """The value of `name` if the lane declares it and it is set; None otherwise."""
    env = os.environ if environ is None else environ
    if name not in declared_names(lane):
        return None
    value = env.get(name)
    return value or None


def require_key(
    lane: SpecialistLane,
    specialist: str,
    provider: str,
    names: tuple[str, ...],
    environ: Mapping[str, str] | None = None,
) -> str:
    """The first of `names` the lane declares and the environment sets, or a clear failure."""
    for name in names:
        value = read_declared(lane, name, environ)
        if value is not None:
            return value
    declared = declared_names(lane)
    wanted = " or ".join(names)
    if any(name in declared for name in names):
        detail = f"provider {provider} needs {wanted}; it is declared but not set: set it"
    else:
        detail = (
            f"provider {provider} needs {wanted}, which node {lane.source_node!r} does not "
            f"declare; add it to nodes.{lane.source_node}.env (or its connections)"
        )
    raise SpecialistFailed(specialist, "credentials", detail, provider=provider, model=lane.model)
