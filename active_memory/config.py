"""The runtime JSON (SPEC §2): zeroshot's runtime plan plus `activeMemory` and `globalAgents`.

`load_runtime_config(CONFIG, GRAPH)` reads both files, validates the plan, resolves the
postmortem's source node against the authored graph and returns a `RuntimeConfig`: the
validated settings, which scopes recall and collect, and the `SpecialistLane` the four
specialists inherit. Every violation raises `ConfigError` naming the JSON path; unknown
keys of the plan are kept so the plan round-trips unchanged (`RuntimeSettings.plan_json`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from active_memory.errors import ConfigError, UsageError
from active_memory.runlog.graph import Graph, GraphIndex, StepNode, VerifierNode
from active_memory.session_budget import DEFAULT_BUDGET_BYTES, budget_problem
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

_MAX_DECLARED = 64  # zeroshot: at most 64 env names and 64 connections per binding
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _show(value: object) -> str:
    """A JSON value as the user wrote it, shortened for a one-line message."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _strict_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    raise PydanticCustomError(
        "strict_bool", "{shown} is not a boolean; allowed true or false", {"shown": _show(value)}
    )


def _bounded_int(low: int, high: int) -> PlainValidator:
    """An integer in low..high; JSON true, 2048.5 and "2048" are refused, not coerced."""

    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise PydanticCustomError(
                "strict_int",
                "{shown} is not an integer; allowed {low}..{high}",
                {"shown": _show(value), "low": low, "high": high},
            )
        if not low <= value <= high:
            raise PydanticCustomError(
                "out_of_range",
                "{value} is out of range; allowed {low}..{high}",
                {"value": value, "low": low, "high": high},
            )
        return value

    return PlainValidator(check)


def _check_budget(value: object) -> int:
    """SPEC §2 `budgetBytes`, by the one rule of `session_budget`."""
    problem = budget_problem(value)
    if problem is None and isinstance(value, int):
        return value
    raise PydanticCustomError("budget_bytes", "{problem}", {"problem": problem})


def _text(limit: int, what: str) -> PlainValidator:
    """A non-empty string of at most `limit` characters without control characters."""

    def check(value: object) -> str:
        if not isinstance(value, str):
            raise PydanticCustomError(
                "text_type",
                "{shown} is not a string; allowed {what}",
                {"shown": _show(value), "what": what},
            )
        if (
            not value
            or len(value) > limit
            or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value)
        ):
            raise PydanticCustomError(
                "text_value",
                "{shown} is not allowed; allowed {what} of 1..{limit} characters, "
                "no control characters",
                {"shown": _show(value), "what": what, "limit": limit},
            )
        return value

    return PlainValidator(check)


def _env_name(value: object) -> str:
    if isinstance(value, str) and _ENV_NAME.fullmatch(value):
        return value
    raise PydanticCustomError(
        "env_name",
        "{shown} is not an environment variable name; allowed [A-Za-z_][A-Za-z0-9_]*, "
        "at most 128 bytes",
        {"shown": _show(value)},
    )


def _unique_names(names: list[str]) -> list[str]:
    if len(names) > _MAX_DECLARED:
        raise PydanticCustomError(
            "too_many", "{count} names; allowed at most 64", {"count": len(names)}
        )
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise PydanticCustomError(
                "duplicate", "{name} is declared twice", {"name": _show(name)}
            )
        seen.add(name)
    return names


def _connections(value: dict[str, list[str]]) -> dict[str, list[str]]:
    if len(value) > _MAX_DECLARED:
        raise PydanticCustomError(
            "too_many", "{count} connections; allowed at most 64", {"count": len(value)}
        )
    owner: dict[str, str] = {}
    for key, names in value.items():
        if not names:
            raise PydanticCustomError(
                "empty_connection",
                "connection {key} declares no environment name; allowed 1..64 names",
                {"key": _show(key)},
            )
        for name in names:
            if name in owner:
                raise PydanticCustomError(
                    "shared_env",
                    "{name} is declared by connections {first} and {second}; "
                    "one name may come from one connection only",
                    {"name": _show(name), "first": _show(owner[name]), "second": _show(key)},
                )
            owner[name] = key
    if len(owner) > _MAX_DECLARED:
        raise PydanticCustomError(
            "too_many", "{count} environment names; allowed at most 64", {"count": len(owner)}
        )
    return value


StrictBool = Annotated[bool, PlainValidator(_strict_bool)]
ModelId = Annotated[str, _text(2048, "a model ID")]
NodeName = Annotated[str, _text(256, "a node name")]
EnvName = Annotated[str, PlainValidator(_env_name)]
EnvList = Annotated[list[EnvName], AfterValidator(_unique_names)]
ConnectionKey = Annotated[str, _text(128, "a connection key")]
Connections = Annotated[dict[ConnectionKey, EnvList], AfterValidator(_connections)]


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
    budget_bytes: Annotated[int, PlainValidator(_check_budget)] = Field(
        DEFAULT_BUDGET_BYTES, alias="budgetBytes"
    )
    # None: the run does not say; the settings files decide, else "automatic"
    # (docs/review.md).
    review: Literal["manual", "automatic"] | None = None


class PostmortemSettings(_Section):
    """The built-in postmortem global agent."""

    enabled: StrictBool = True
    source_node: NodeName | None = Field(None, alias="sourceNode")
    timeout_ms: Annotated[int, _bounded_int(*TIMEOUT_MS_RANGE)] = Field(
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
                {"shown": _show(value), "harness": harness, "allowed": ", ".join(allowed)},
            )
        raise PydanticCustomError(
            "provider",
            "{shown} is not allowed; allowed {allowed}",
            {"shown": _show(value), "allowed": ", ".join(dict.fromkeys(allowed))},
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


# -- reading files ----------------------------------------------------------------------


def read_json_file(path: Path, what: str) -> Any:
    """Parse one JSON file; a missing, unreadable or malformed file is a usage error."""
    from active_memory.reader import load_json

    return load_json(path, f"{what} file")


# -- validation -------------------------------------------------------------------------

_REQUIRED_HINT = {
    "harness": "claude or codex",
    "provider": "claude: anthropic, openrouter; codex: openai, openrouter",
    "size": "tiny, small, standard, medium or large",
    "nodes": "an object binding each executable node",
    "model": "a model ID",
}


def _problem(error: Mapping[str, Any]) -> tuple[str, str]:
    """One pydantic error as (JSON path, message in our words)."""
    loc = list(error["loc"])
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    # A tagged union puts the tag between the node name and the field; JSON has no such level.
    if len(loc) > 3 and loc[0] == "nodes" and loc[2] in ("agent", "git_delivery"):
        del loc[2]
    if loc and loc[-1] == "[key]":  # a bad dict key: the path ends at the key itself
        del loc[-1]
    if kind == "union_tag_invalid":
        return json_path([*loc, "kind"]), (
            f"{_show(ctx.get('tag'))} is not allowed; allowed agent, git_delivery"
        )
    if kind == "union_tag_not_found":
        return json_path([*loc, "kind"]), "missing; allowed agent, git_delivery"
    if kind == "missing":
        hint = _REQUIRED_HINT.get(str(loc[-1]))
        return json_path(loc), "missing; this field is required" + (f" ({hint})" if hint else "")
    if kind == "extra_forbidden" and loc[:1] == ["globalAgents"]:
        return json_path(loc), "not a built-in global agent; allowed postmortem"
    if kind == "literal_error":
        allowed = ", ".join(re.findall(r"'([^']*)'", str(ctx["expected"])))
        return json_path(loc), f"{_show(value)} is not allowed; allowed {allowed}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return json_path(loc), f"{_show(value)} is not a JSON object"
    if kind == "list_type":
        return json_path(loc), f"{_show(value)} is not a JSON array"
    return json_path(loc), str(error["msg"])


def parse_runtime_settings(document: object) -> RuntimeSettings:
    """Validate a parsed runtime JSON; every violation at once, in one `ConfigError`."""
    if not isinstance(document, dict):
        raise ConfigError("$", f"{_show(document)} is not a JSON object; the runtime JSON is one")
    try:
        return RuntimeSettings.model_validate(document)
    except ValidationError as exc:
        problems = [_problem(error) for error in exc.errors(include_url=False)]
    first_path, first_message = problems[0]
    rest = "".join(f"\n  {path}: {message}" for path, message in problems[1:])
    raise ConfigError(first_path, first_message + rest)


# -- the authored graph -----------------------------------------------------------------

# pydantic puts the union tag (a node, guard or join kind) into an error's location;
# no field of a graph is named like one, so a path shown to a person leaves them out.
_NODE_KINDS = ("step", "verifier", "seq", "choice", "par", "loop", "map", "succeed", "fail")
_GUARD_AND_JOIN_KINDS = ("in", "all", "any", "not", "k_of_n", "k_of_map", "quorum", "first")
_GRAPH_TAGS = frozenset((*_NODE_KINDS, *_GUARD_AND_JOIN_KINDS))


def parse_graph(document: object, source: str) -> Graph:
    """The authored graph of a graph file: a bare graph, or one under `graph` (fixtures,
    run submissions). Names must be unique; a bad graph is a usage error naming `source`."""
    if isinstance(document, dict) and isinstance(document.get("graph"), dict):
        document = document["graph"]
    try:
        graph = Graph.from_json(document)
    except ValidationError as exc:
        problems = [
            f"{json_path([p for p in e['loc'] if p not in _GRAPH_TAGS])}: {e['msg']}"
            for e in exc.errors(include_url=False)
        ]
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise UsageError(
            f"{source}: not a valid zeroshot graph: " + "; ".join(problems[:3]) + more
        ) from None
    duplicates = GraphIndex(graph).duplicates
    if duplicates:
        raise UsageError(f"{source}: node name {duplicates[0]!r} is used twice; names are unique")
    return graph


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


def load_runtime_config(config_path: Path, graph_path: Path) -> RuntimeConfig:
    """Read, validate and resolve a runtime JSON against its authored graph file."""
    settings = parse_runtime_settings(read_json_file(config_path, "runtime JSON"))
    graph = parse_graph(read_json_file(graph_path, "graph"), str(graph_path))
    return resolve_config(settings, graph)
