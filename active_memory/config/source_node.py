"""The postmortem's source node (SPEC §2, `globalAgents.postmortem.sourceNode`), resolved
against the authored graph: the `SpecialistLane` all four specialists inherit (harness,
provider, model, effort, connections), and the `RuntimeConfig` it completes.

A named node must be an agent-bound step or verifier; omitted, the first agent-bound
step in graph order wins, then the first agent-bound verifier. Every refusal is a
`ConfigError` at `globalAgents.postmortem.sourceNode` listing the nodes allowed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from active_memory.config.models import AgentBinding, Effort, RuntimeSettings
from active_memory.errors import ConfigError
from active_memory.runlog.graph import Graph, GraphIndex, StepNode, VerifierNode


class SpecialistLane(BaseModel):
    """What all four specialists inherit from the postmortem's source node (SPEC §2)."""

    model_config = ConfigDict(frozen=True)

    source_node: str
    source_kind: Literal["step", "verifier"]
    chosen_by: Literal["named", "first_step", "first_verifier"]
    harness: Literal["claude", "codex"]
    provider: str
    model: str
    effort: Effort | None
    connections: dict[str, list[str]]
    env: list[str]


class RuntimeConfig(BaseModel):
    """Validated settings plus what they resolve to against the authored graph."""

    model_config = ConfigDict(frozen=True)

    settings: RuntimeSettings
    graph: Graph
    lane: SpecialistLane | None  # None only when the postmortem collects nothing


def resolve_lane(settings: RuntimeSettings, graph: Graph) -> SpecialistLane | None:
    """The source node's lane (SPEC §2); None when no postmortem runs and none was named.

    A named node must be an agent-bound step or verifier; omitted, the first agent-bound
    step in graph order wins, then the first agent-bound verifier.
    """
    where = "globalAgents.postmortem.sourceNode"
    index = GraphIndex(graph)
    eligible = [
        n for n in index.executables() if isinstance(settings.nodes.get(n.name), AgentBinding)
    ]
    allowed = "allowed " + (", ".join(n.name for n in eligible) or "none: bind a step to an agent")
    named = settings.postmortem.source_node
    source: StepNode | VerifierNode
    chosen_by: Literal["named", "first_step", "first_verifier"]
    if named is not None:
        node, binding = index.get(named), settings.nodes.get(named)
        if node is None:
            raise ConfigError(where, f"{named!r} is not a node of the graph; {allowed}")
        if not isinstance(node, StepNode | VerifierNode):
            raise ConfigError(
                where, f"{named!r} is a {node.kind} node, not a step or verifier; {allowed}"
            )
        if binding is None:
            raise ConfigError(where, f"{named!r} has no binding in `nodes`; {allowed}")
        if not isinstance(binding, AgentBinding):
            raise ConfigError(
                where, f"{named!r} is bound to {binding.kind}, not an agent; {allowed}"
            )
        source, chosen_by = node, "named"
    else:
        steps = [n for n in eligible if isinstance(n, StepNode)]
        if steps:
            source, chosen_by = steps[0], "first_step"
        elif eligible:
            source, chosen_by = eligible[0], "first_verifier"
        elif not settings.postmortem_enabled:
            return None
        else:
            raise ConfigError(
                where,
                "omitted, and no step or verifier of the graph has an agent binding in `nodes`; "
                "bind one to an agent, or set globalAgents.postmortem.enabled false",
            )
    agent = settings.nodes[source.name]
    assert isinstance(agent, AgentBinding)  # checked above
    return SpecialistLane(
        source_node=source.name,
        source_kind=source.kind,
        chosen_by=chosen_by,
        harness=settings.harness,
        provider=settings.provider,
        model=agent.model,
        effort=agent.effort,
        connections={key: list(names) for key, names in agent.connections.items()},
        env=list(agent.env),
    )


def resolve_config(settings: RuntimeSettings, graph: Graph) -> RuntimeConfig:
    """Resolve validated settings against an authored graph."""
    return RuntimeConfig(settings=settings, graph=graph, lane=resolve_lane(settings, graph))
