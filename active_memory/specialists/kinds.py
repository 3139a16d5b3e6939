"""The four postmortem specialists (SPEC §1): name, scope, role and what they may cite.

`SPECIALISTS` maps each `SpecialistName` to its `SpecialistKind`; `kind_of(name)` looks
one up. The names are the keys of the postmortem report (SPEC §10) and of the provider
sessions, so they are spelled exactly as there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from active_memory.evidence.model import EvidenceKind

SpecialistName: TypeAlias = Literal[
    "graph_maintenance", "repository_maintenance", "graph_discovery", "repository_discovery"
]
ScopeKind: TypeAlias = Literal["graph", "repository"]
Role: TypeAlias = Literal["maintenance", "discovery"]


@dataclass(frozen=True, slots=True)
class SpecialistKind:
    """One specialist: its scope of lessons, its role, and the evidence it may cite.

    `evidence_kinds` is empty for maintenance (it judges lessons, it cites nothing);
    graph discovery may cite only the repeated-failure kinds (SPEC §4: items 1 and 2);
    repository discovery every kind: items 1 and 2, exploration (item 3) and repeated
    tool failures (item 4), the last two for it alone.
    """

    name: SpecialistName
    scope: ScopeKind
    role: Role
    evidence_kinds: frozenset[EvidenceKind]

    @property
    def template(self) -> str:
        """The file name of its prompt template in `active_memory/prompts/`."""
        return f"{self.name}.md"

    @property
    def is_maintenance(self) -> bool:
        """True for the two maintenance specialists."""
        return self.role == "maintenance"


GRAPH_MAINTENANCE = SpecialistKind("graph_maintenance", "graph", "maintenance", frozenset())
REPOSITORY_MAINTENANCE = SpecialistKind(
    "repository_maintenance", "repository", "maintenance", frozenset()
)
GRAPH_DISCOVERY = SpecialistKind(
    "graph_discovery", "graph", "discovery", frozenset({"timeout_crash", "rejected_rounds"})
)
REPOSITORY_DISCOVERY = SpecialistKind(
    "repository_discovery",
    "repository",
    "discovery",
    frozenset({"timeout_crash", "rejected_rounds", "exploration", "tool_failures"}),
)

SPECIALISTS: dict[SpecialistName, SpecialistKind] = {
    kind.name: kind
    for kind in (GRAPH_MAINTENANCE, REPOSITORY_MAINTENANCE, GRAPH_DISCOVERY, REPOSITORY_DISCOVERY)
}
"""Every specialist, in report order (SPEC §1's table order)."""


def kind_of(name: str) -> SpecialistKind:
    """The specialist called `name`; `ValueError` naming the known ones otherwise."""
    try:
        return SPECIALISTS[name]  # type: ignore[index]
    except KeyError:
        known = ", ".join(SPECIALISTS)
        raise ValueError(f"no specialist {name!r}; known: {known}") from None
