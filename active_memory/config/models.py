"""The runtime JSON's models (SPEC §2): zeroshot's runtime plan (harness, provider, size,
node bindings) plus `activeMemory` and `globalAgents`, with their defaults and bounds.

Fields are read by their camelCase alias; unknown keys are kept so the plan round-trips
unchanged (`RuntimeSettings.plan_json`) and are listed by `unknown_keys`. Ask
`RuntimeSettings`, not the raw JSON, whether a scope is on.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from active_memory.config.fields import (
    BudgetBytes,
    Connections,
    EnvList,
    ModelId,
    NodeName,
    StrictBool,
    bounded_int,
    show,
)
from active_memory.session_budget import DEFAULT_BUDGET_BYTES
from active_memory.validation import json_path

TIMEOUT_MS_RANGE = (1, 600000)
DEFAULT_TIMEOUT_MS = 120000

# The lanes SPEC §2 names. zeroshot also knows the `copilot` harness and the `gateway` /
# `bedrock` providers; the specialists inherit the lane, so a plan naming one is refused
# up front rather than failing once the run is over.
PROVIDERS_BY_HARNESS: dict[str, tuple[str, ...]] = {
    "claude": ("anthropic", "openrouter"),
    "codex": ("openai", "openrouter"),
}
# zeroshot's RunSize: small (alias tiny), medium (alias standard), large.
RunSize: TypeAlias = Literal["tiny", "small", "standard", "medium", "large"]
Effort: TypeAlias = Literal["low", "medium", "high", "xhigh", "max"]
SessionScope: TypeAlias = Literal["execution", "node_instance"]
Scope: TypeAlias = Literal["repository", "graph"]


class _Section(BaseModel):
    # Fields are read by their camelCase alias only (pydantic's default); unknown keys are
    # kept (SPEC §2: kept, not rejected), so a snake_case spelling is an unknown key.
    model_config = ConfigDict(extra="allow")


class AgentBinding(_Section):
    """An executable node run by a model in the plan's harness/provider lane."""

    kind: Literal["agent"]
    model: ModelId
    effort: Effort | None = None
    session_scope: SessionScope = Field("execution", alias="sessionScope")
    # `env` is the older zeroshot form of declared environment, `connections` the newer.
    env: EnvList = Field(default_factory=list)
    connections: Connections = Field(default_factory=dict)


class GitDeliveryBinding(_Section):
    """zeroshot's built-in Git delivery (commit, push, pull request); no model runs."""

    kind: Literal["git_delivery"]
    env: EnvList = Field(default_factory=list)
    connections: Connections = Field(default_factory=dict)
    pull_request_feedback: Literal["consider", "ignore"] = Field(
        "consider", alias="pullRequestFeedback"
    )


Binding: TypeAlias = Annotated[AgentBinding | GitDeliveryBinding, Field(discriminator="kind")]


class ActiveMemorySettings(_Section):
    """Which scopes Active Memory serves, and the per-session card budget."""

    repository: StrictBool = True
    graph: StrictBool = True
    budget_bytes: BudgetBytes = Field(DEFAULT_BUDGET_BYTES, alias="budgetBytes")
    # None: the run does not say; the settings files decide, else "automatic"
    # (docs/review.md).
    review: Literal["manual", "automatic"] | None = None


class PostmortemSettings(_Section):
    """The built-in postmortem global agent."""

    enabled: StrictBool = True
    source_node: NodeName | None = Field(None, alias="sourceNode")
    timeout_ms: Annotated[int, bounded_int(*TIMEOUT_MS_RANGE)] = Field(
        DEFAULT_TIMEOUT_MS, alias="timeoutMs"
    )


class GlobalAgents(BaseModel):
    """Only built-in global agents exist; any other key is an error (SPEC §2)."""

    model_config = ConfigDict(extra="forbid")

    postmortem: PostmortemSettings = Field(default_factory=PostmortemSettings)


class RuntimeSettings(_Section):
    """The validated runtime JSON. Ask it, not the raw JSON, whether a scope is on."""

    harness: Literal["claude", "codex"]
    provider: str
    size: RunSize
    nodes: dict[str, Binding]
    active_memory: ActiveMemorySettings = Field(
        default_factory=ActiveMemorySettings, alias="activeMemory"
    )
    global_agents: GlobalAgents = Field(default_factory=GlobalAgents, alias="globalAgents")

    @field_validator("provider", mode="plain")
    @classmethod
    def _provider_fits_harness(cls, value: object, info: ValidationInfo) -> str:
        harness = info.data.get("harness")  # absent when the harness itself was invalid
        lanes = [harness] if harness in PROVIDERS_BY_HARNESS else list(PROVIDERS_BY_HARNESS)
        allowed = [p for lane in lanes for p in PROVIDERS_BY_HARNESS[lane]]
        if isinstance(value, str) and value in allowed:
            return value
        if harness in PROVIDERS_BY_HARNESS:
            raise PydanticCustomError(
                "provider_lane",
                "{shown} is not a provider of harness {harness}; allowed {allowed}",
                {"shown": show(value), "harness": harness, "allowed": ", ".join(allowed)},
            )
        raise PydanticCustomError(
            "provider",
            "{shown} is not allowed; allowed {allowed}",
            {"shown": show(value), "allowed": ", ".join(dict.fromkeys(allowed))},
        )

    @property
    def postmortem(self) -> PostmortemSettings:
        """`globalAgents.postmortem`, defaults filled in."""
        return self.global_agents.postmortem

    @property
    def repository_enabled(self) -> bool:
        """Repository lessons are recalled (and collected, if the postmortem runs)."""
        return self.active_memory.repository

    @property
    def graph_enabled(self) -> bool:
        """Graph lessons are recalled (and collected, if the postmortem runs)."""
        return self.active_memory.graph

    @property
    def enabled(self) -> bool:
        """False when both scopes are off: Active Memory does nothing for this run."""
        return self.repository_enabled or self.graph_enabled

    @property
    def postmortem_enabled(self) -> bool:
        """The postmortem runs; `enabled: false` keeps recall but collects nothing."""
        return self.enabled and self.postmortem.enabled

    @property
    def budget_bytes(self) -> int:
        """Cumulative card bytes one provider session may receive."""
        return self.active_memory.budget_bytes

    @property
    def timeout_seconds(self) -> float:
        """The postmortem's one shared wall-clock budget, in seconds."""
        return self.postmortem.timeout_ms / 1000

    def recalls(self, scope: Scope) -> bool:
        """Cards of this scope reach the run's agents."""
        return self.repository_enabled if scope == "repository" else self.graph_enabled

    def collects(self, scope: Scope) -> bool:
        """The postmortem proposes and maintains lessons of this scope."""
        return self.postmortem_enabled and self.recalls(scope)

    def plan_json(self) -> dict[str, Any]:
        """The plan as read, unknown keys included and no defaults added."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def unknown_keys(self) -> list[str]:
        """JSON paths of keys this version does not know (kept, but maybe typos)."""
        found: list[str] = []

        def visit(model: BaseModel, loc: tuple[str | int, ...]) -> None:
            found.extend(json_path((*loc, key)) for key in model.model_extra or {})
            for name in type(model).model_fields:
                value = getattr(model, name)
                alias = type(model).model_fields[name].alias or name
                if isinstance(value, BaseModel) and name in model.model_fields_set:
                    visit(value, (*loc, alias))
                elif name == "nodes":
                    for node, binding in value.items():
                        visit(binding, (*loc, "nodes", node))

        visit(self, ())
        return found
