"""The runtime JSON (SPEC §2): validation, defaults, scope flags, source-node resolution."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import ZEROSHOT_FIXTURES

from active_memory.cli import main
from active_memory.config import (
    RuntimeSettings,
    SpecialistLane,
    load_runtime_config,
    parse_graph,
    parse_runtime_settings,
    resolve_lane,
)
from active_memory.errors import ConfigError, InvalidRecord, UsageError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "config.example.json"
SOFTWARE_CHANGE = ROOT / "software-change.graph.json"
ZEROSHOT = ZEROSHOT_FIXTURES


def example() -> dict[str, Any]:
    """A fresh copy of the shipped example plan."""
    document: dict[str, Any] = json.loads(EXAMPLE.read_text())
    return document


def minimal(**nodes: dict[str, Any]) -> dict[str, Any]:
    """The smallest valid plan: no optional section, the given bindings."""
    return {"harness": "claude", "provider": "anthropic", "size": "small", "nodes": nodes}


def agent(model: object = "claude-sonnet-5", **extra: Any) -> dict[str, Any]:
    return {"kind": "agent", "model": model, **extra}


def software_change() -> Any:
    return parse_graph(json.loads(SOFTWARE_CHANGE.read_text()), str(SOFTWARE_CHANGE))


def zeroshot_graph(name: str) -> Any:
    path = ZEROSHOT / name
    return parse_graph(json.loads(path.read_text()), str(path))


def config_error(document: object) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_runtime_settings(document)
    return caught.value


def lane_error(document: dict[str, Any], graph: Any) -> ConfigError:
    settings = parse_runtime_settings(document)
    with pytest.raises(ConfigError) as caught:
        resolve_lane(settings, graph)
    return caught.value


def with_postmortem(document: dict[str, Any], **fields: Any) -> dict[str, Any]:
    document.setdefault("globalAgents", {}).setdefault("postmortem", {}).update(fields)
    return document


# -- the shipped example ------------------------------------------------------------------


def test_shipped_example_validates_against_the_software_change_graph() -> None:
    config = load_runtime_config(EXAMPLE, SOFTWARE_CHANGE)
    assert config.lane == SpecialistLane(
        source_node="worker",
        source_kind="step",
        chosen_by="named",
        harness="claude",
        provider="anthropic",
        model="claude-sonnet-5",
        effort="high",
        connections={"anthropic": ["ANTHROPIC_API_KEY"]},
        env=[],
    )
    assert config.settings.unknown_keys() == []


def test_example_binds_every_executable_node_of_the_software_change_graph() -> None:
    graph = software_change()
    executables = {node.name: node.kind for node in parse_graph_executables(graph)}
    assert executables == {
        "worker": "step",
        "acceptance": "verifier",
        "code": "verifier",
        "deliver": "verifier",
        "review_repair": "step",
    }
    assert set(example()["nodes"]) == set(executables)
    assert example()["nodes"]["deliver"]["kind"] == "git_delivery"


def parse_graph_executables(graph: Any) -> list[Any]:
    from active_memory.runlog.graph import GraphIndex

    return GraphIndex(graph).executables()


def test_software_change_graph_has_the_template_shape() -> None:
    """worker → error-only choice → loop of all-join reviewers, repair on `otherwise`."""
    root = software_change().root
    assert (root.kind, [c.name for c in root.children]) == ("seq", ["worker", "worker_result"])
    route = root.children[1]
    assert [b.when.value.source for b in route.branches] == ["error"]
    assert route.branches[0].when.value.name == "worker"
    review_loop = route.otherwise.children[0]
    assert (review_loop.kind, review_loop.max_iterations) == ("loop", 10)
    reviewers, routing = review_loop.body.children
    assert (reviewers.kind, reviewers.join.kind) == ("par", "all")
    assert [v.kind for v in reviewers.branches] == ["verifier", "verifier"]
    assert (routing.kind, routing.otherwise.name) == ("choice", "review_repair")


# -- defaults and round trip ----------------------------------------------------------------


def test_omitted_sections_take_the_spec_defaults() -> None:
    settings = parse_runtime_settings(minimal(worker=agent()))
    assert settings.repository_enabled is True
    assert settings.graph_enabled is True
    assert settings.budget_bytes == 2048
    assert settings.postmortem.enabled is True
    assert settings.postmortem.source_node is None
    assert settings.postmortem.timeout_ms == 120000
    assert settings.timeout_seconds == 120.0


def test_agent_binding_defaults_match_zeroshot() -> None:
    binding = parse_runtime_settings(minimal(worker=agent())).nodes["worker"]
    assert binding.kind == "agent"
    assert binding.effort is None
    assert binding.session_scope == "execution"
    assert (binding.env, binding.connections) == ([], {})


def test_unknown_keys_are_kept_and_round_trip() -> None:
    document = example()
    document["title"] = "Repair checkout flow"
    document["nodes"]["worker"]["futureKnob"] = {"a": [1, 2]}
    document["nodes"]["deliver"]["pullRequestFeedback"] = "ignore"
    document["activeMemory"]["note"] = "kept"
    document["globalAgents"]["postmortem"]["extra"] = True
    settings = parse_runtime_settings(copy.deepcopy(document))
    assert settings.plan_json() == document
    assert settings.unknown_keys() == [
        "title",
        "nodes.worker.futureKnob",
        "activeMemory.note",
        "globalAgents.postmortem.extra",
    ]


def test_round_trip_adds_no_defaults() -> None:
    document = minimal(worker=agent())
    assert parse_runtime_settings(copy.deepcopy(document)).plan_json() == document


def test_snake_case_spelling_is_not_the_field() -> None:
    document = minimal(worker=agent())
    document["activeMemory"] = {"budget_bytes": 7}
    settings = parse_runtime_settings(document)
    assert settings.budget_bytes == 2048
    assert settings.unknown_keys() == ["activeMemory.budget_bytes"]


def test_real_zeroshot_spellings_are_accepted() -> None:
    """Values from zeroshot's wire enums: RunSize aliases, xhigh effort, node_instance scope."""
    for size in ("tiny", "small", "standard", "medium", "large"):
        document = minimal(worker=agent(effort="xhigh", sessionScope="node_instance"))
        document["size"] = size
        assert parse_runtime_settings(document).size == size
    codex = {"harness": "codex", "provider": "openrouter", "size": "large", "nodes": {}}
    assert parse_runtime_settings(codex).provider == "openrouter"


# -- scope opt-outs -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("repository", "graph", "postmortem", "expected"),
    [
        (True, True, True, (True, True, True, True, True)),
        (False, True, True, (True, True, False, False, True)),
        (True, False, True, (True, True, True, True, False)),
        (False, False, True, (False, False, False, False, False)),
        (True, True, False, (True, False, True, False, False)),
    ],
)
def test_scope_flags_derive_from_one_place(
    repository: bool, graph: bool, postmortem: bool, expected: tuple[bool, ...]
) -> None:
    document = minimal(worker=agent())
    document["activeMemory"] = {"repository": repository, "graph": graph}
    with_postmortem(document, enabled=postmortem)
    s = parse_runtime_settings(document)
    enabled, collects, recall_repo, collect_repo, collect_graph = expected
    assert (s.enabled, s.postmortem_enabled) == (enabled, collects)
    assert (s.recalls("repository"), s.collects("repository")) == (recall_repo, collect_repo)
    assert s.recalls("graph") == graph
    assert s.collects("graph") == collect_graph


def test_disabled_postmortem_keeps_recall() -> None:
    s = parse_runtime_settings(with_postmortem(minimal(worker=agent()), enabled=False))
    assert s.recalls("repository") and s.recalls("graph")
    assert not s.collects("repository") and not s.collects("graph")


# -- out of range and wrong types -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "0 is out of range; allowed 1..16384"),
        (16385, "16385 is out of range; allowed 1..16384"),
        (-1, "-1 is out of range; allowed 1..16384"),
        (True, "true is not an integer; allowed 1..16384"),
        (2048.5, "2048.5 is not an integer; allowed 1..16384"),
        (2048.0, "2048.0 is not an integer; allowed 1..16384"),
        ("2048", '"2048" is not an integer; allowed 1..16384'),
        (None, "null is not an integer; allowed 1..16384"),
    ],
)
def test_budget_bytes_violations_name_path_and_range(value: object, message: str) -> None:
    document = example()
    document["activeMemory"]["budgetBytes"] = value
    error = config_error(document)
    assert error.path == "activeMemory.budgetBytes"
    assert str(error) == f"activeMemory.budgetBytes: {message}"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "0 is out of range; allowed 1..600000"),
        (600001, "600001 is out of range; allowed 1..600000"),
        (-1, "-1 is out of range; allowed 1..600000"),
        (False, "false is not an integer; allowed 1..600000"),
        (1.5, "1.5 is not an integer; allowed 1..600000"),
        ("120000", '"120000" is not an integer; allowed 1..600000'),
    ],
)
def test_timeout_ms_violations_name_path_and_range(value: object, message: str) -> None:
    error = config_error(with_postmortem(example(), timeoutMs=value))
    assert str(error) == f"globalAgents.postmortem.timeoutMs: {message}"


def test_range_edges_are_accepted() -> None:
    for budget, timeout in ((1, 1), (16384, 600000)):
        document = with_postmortem(example(), timeoutMs=timeout)
        document["activeMemory"]["budgetBytes"] = budget
        settings = parse_runtime_settings(document)
        assert (settings.budget_bytes, settings.postmortem.timeout_ms) == (budget, timeout)


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ("activeMemory", "repository"),
        ("activeMemory", "graph"),
        ("globalAgents.postmortem", "enabled"),
    ],
)
@pytest.mark.parametrize(
    ("value", "shown"), [("true", '"true"'), (1, "1"), (0, "0"), (None, "null")]
)
def test_booleans_must_be_json_booleans(
    section: str, field: str, value: object, shown: str
) -> None:
    document = example()
    target = document
    for key in section.split("."):
        target = target[key]
    target[field] = value
    error = config_error(document)
    assert str(error) == f"{section}.{field}: {shown} is not a boolean; allowed true or false"


@pytest.mark.parametrize("section", ["activeMemory", "globalAgents"])
@pytest.mark.parametrize("value", [None, [], 5, "on"])
def test_sections_must_be_objects(section: str, value: object) -> None:
    document = example()
    document[section] = value
    assert str(config_error(document)) == f"{section}: {json.dumps(value)} is not a JSON object"


def test_postmortem_must_be_an_object() -> None:
    document = example()
    document["globalAgents"]["postmortem"] = True
    assert str(config_error(document)) == "globalAgents.postmortem: true is not a JSON object"


def test_several_violations_are_reported_at_once() -> None:
    document = with_postmortem(example(), timeoutMs=0)
    document["activeMemory"]["budgetBytes"] = 16385
    document["harness"] = "copilot"
    error = config_error(document)
    assert error.path == "harness"
    assert str(error).splitlines() == [
        'harness: "copilot" is not allowed; allowed claude, codex',
        "  activeMemory.budgetBytes: 16385 is out of range; allowed 1..16384",
        "  globalAgents.postmortem.timeoutMs: 0 is out of range; allowed 1..600000",
    ]


def test_top_level_must_be_an_object() -> None:
    error = config_error([1, 2])
    assert error.path == "$"
    assert "is not a JSON object" in str(error)


# -- global agents --------------------------------------------------------------------------


def test_unknown_global_agent_is_an_error() -> None:
    document = example()
    document["globalAgents"]["reviewer"] = {"enabled": True}
    error = config_error(document)
    assert str(error) == "globalAgents.reviewer: not a built-in global agent; allowed postmortem"


def test_empty_global_agents_means_the_default_postmortem() -> None:
    document = example()
    document["globalAgents"] = {}
    assert parse_runtime_settings(document).postmortem.enabled is True


@pytest.mark.parametrize(("value", "shown"), [("", '""'), (5, "5"), (["worker"], '["worker"]')])
def test_source_node_must_be_a_node_name(value: object, shown: str) -> None:
    error = config_error(with_postmortem(example(), sourceNode=value))
    assert error.path == "globalAgents.postmortem.sourceNode"
    assert str(error).startswith(f"globalAgents.postmortem.sourceNode: {shown} is not")


# -- harness, provider, size ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("harness", "provider"),
    [("claude", "openai"), ("codex", "anthropic"), ("claude", "bedrock"), ("codex", "gateway")],
)
def test_provider_must_belong_to_the_harness(harness: str, provider: str) -> None:
    document = example()
    document["harness"], document["provider"] = harness, provider
    allowed = {"claude": "anthropic, openrouter", "codex": "openai, openrouter"}[harness]
    error = config_error(document)
    assert str(error) == (
        f'provider: "{provider}" is not a provider of harness {harness}; allowed {allowed}'
    )


def test_provider_is_checked_even_when_the_harness_is_wrong() -> None:
    document = example()
    document["harness"], document["provider"] = "copilot", "github"
    assert str(config_error(document)).splitlines() == [
        'harness: "copilot" is not allowed; allowed claude, codex',
        '  provider: "github" is not allowed; allowed anthropic, openrouter, openai',
    ]


@pytest.mark.parametrize(("value", "shown"), [("xlarge", '"xlarge"'), (3, "3"), (None, "null")])
def test_size_must_be_a_run_size(value: object, shown: str) -> None:
    document = example()
    document["size"] = value
    assert str(config_error(document)) == (
        f"size: {shown} is not allowed; allowed tiny, small, standard, medium, large"
    )


@pytest.mark.parametrize("field", ["harness", "provider", "size", "nodes"])
def test_plan_fields_are_required(field: str) -> None:
    document = example()
    del document[field]
    error = config_error(document)
    assert error.path == field
    assert "missing; this field is required" in str(error)


# -- node bindings --------------------------------------------------------------------------


def test_nodes_must_be_an_object() -> None:
    document = example()
    document["nodes"] = []
    assert str(config_error(document)) == "nodes: [] is not a JSON object"


@pytest.mark.parametrize(
    ("binding", "expected"),
    [
        (5, "nodes.extra: 5 is not a JSON object"),
        ({}, "nodes.extra.kind: missing; allowed agent, git_delivery"),
        ({"kind": "tool"}, 'nodes.extra.kind: "tool" is not allowed; allowed agent, git_delivery'),
        ({"kind": "agent"}, "nodes.extra.model: missing; this field is required (a model ID)"),
        (agent(model=""), 'nodes.extra.model: "" is not allowed; allowed a model ID of 1..2048'),
        (agent(model=7), "nodes.extra.model: 7 is not a string; allowed a model ID"),
        (agent(model="m\n"), 'nodes.extra.model: "m\\n" is not allowed'),
        (agent(effort="extreme"), 'nodes.extra.effort: "extreme" is not allowed; allowed low,'),
        (agent(sessionScope="run"), 'nodes.extra.sessionScope: "run" is not allowed; allowed'),
        (agent(env="GH_TOKEN"), 'nodes.extra.env: "GH_TOKEN" is not a JSON array'),
        (agent(env=["GH-TOKEN"]), 'nodes.extra.env[0]: "GH-TOKEN" is not an environment'),
        (agent(env=["A", "1B"]), 'nodes.extra.env[1]: "1B" is not an environment'),
        (agent(env=["A", "A"]), 'nodes.extra.env: "A" is declared twice'),
        (agent(env=[f"E{i}" for i in range(65)]), "nodes.extra.env: 65 names; allowed at most 64"),
        (agent(connections=["x"]), 'nodes.extra.connections: ["x"] is not a JSON object'),
        (
            agent(connections={"gh": []}),
            'nodes.extra.connections: connection "gh" declares no environment name',
        ),
        (
            agent(connections={"a": ["TOKEN"], "b": ["TOKEN"]}),
            'nodes.extra.connections: "TOKEN" is declared by connections "a" and "b"',
        ),
        (agent(connections={"": ["TOKEN"]}), 'nodes.extra.connections[""]: "" is not allowed'),
        (agent(connections={"a": ["bad name"]}), 'nodes.extra.connections.a[0]: "bad name" is not'),
        (
            {"kind": "git_delivery", "pullRequestFeedback": "maybe"},
            'nodes.extra.pullRequestFeedback: "maybe" is not allowed; allowed consider, ignore',
        ),
        ({"kind": "git_delivery", "env": [1]}, "nodes.extra.env[0]: 1 is not an environment"),
    ],
)
def test_binding_violations_name_the_json_path(binding: object, expected: str) -> None:
    document = example()
    document["nodes"]["extra"] = binding
    assert str(config_error(document)).startswith(expected)


def test_node_names_that_are_not_identifiers_are_quoted_in_paths() -> None:
    document = example()
    document["nodes"]["review.repair"] = {"kind": "agent"}
    assert config_error(document).path == 'nodes["review.repair"].model'


def test_both_declared_environment_forms_are_accepted() -> None:
    binding = agent(env=["GH_TOKEN"], connections={"anthropic": ["ANTHROPIC_API_KEY"]})
    settings = parse_runtime_settings(minimal(worker=binding))
    node = settings.nodes["worker"]
    assert (node.env, node.connections) == (["GH_TOKEN"], {"anthropic": ["ANTHROPIC_API_KEY"]})


# -- source node resolution -----------------------------------------------------------------


def test_named_source_node_gives_its_model_effort_and_connections() -> None:
    document = with_postmortem(example(), sourceNode="code")
    lane = resolve_lane(parse_runtime_settings(document), software_change())
    assert lane is not None
    assert (lane.source_node, lane.source_kind, lane.chosen_by) == ("code", "verifier", "named")
    assert (lane.model, lane.effort) == ("claude-opus-5", "high")
    assert (lane.harness, lane.provider) == ("claude", "anthropic")
    assert (lane.env, lane.connections) == (["ANTHROPIC_API_KEY"], {})


def test_omitted_source_node_is_the_first_agent_bound_step() -> None:
    document = with_postmortem(example(), sourceNode=None)
    document["nodes"]["worker"]["model"] = "claude-haiku-5"
    lane = resolve_lane(parse_runtime_settings(document), software_change())
    assert lane is not None
    assert (lane.source_node, lane.chosen_by, lane.model) == (
        "worker",
        "first_step",
        "claude-haiku-5",
    )


def test_omitted_source_node_skips_steps_without_an_agent_binding() -> None:
    document = with_postmortem(example(), sourceNode=None)
    del document["nodes"]["worker"]
    lane = resolve_lane(parse_runtime_settings(document), software_change())
    assert lane is not None
    # review_repair is a step too, and steps come before verifiers in the rule
    assert (lane.source_node, lane.chosen_by) == ("review_repair", "first_step")


def test_verifier_is_chosen_only_when_no_step_has_an_agent_binding() -> None:
    document = with_postmortem(example(), sourceNode=None)
    del document["nodes"]["worker"], document["nodes"]["review_repair"]
    lane = resolve_lane(parse_runtime_settings(document), software_change())
    assert lane is not None
    assert (lane.source_node, lane.chosen_by, lane.effort) == (
        "acceptance",
        "first_verifier",
        "medium",
    )


def test_step_is_preferred_over_an_earlier_verifier_in_a_real_graph() -> None:
    """nested-structural-folds: `verify` (verifier) precedes `peer` (step) in graph order."""
    graph = zeroshot_graph("verifier/nested-structural-folds.json")
    settings = parse_runtime_settings(minimal(verify=agent("a"), peer=agent("b")))
    lane = resolve_lane(settings, graph)
    assert lane is not None
    assert (lane.source_node, lane.model, lane.chosen_by) == ("peer", "b", "first_step")


def test_first_verifier_in_a_real_graph_when_no_step_is_bound() -> None:
    graph = zeroshot_graph("verifier/nested-structural-folds.json")
    lane = resolve_lane(parse_runtime_settings(minimal(verify=agent("a"))), graph)
    assert lane is not None
    assert (lane.source_node, lane.source_kind) == ("verify", "verifier")


def test_first_step_in_graph_order_among_parallel_branches() -> None:
    graph = zeroshot_graph("verifier/join-all.json")  # par branches: left, right
    lane = resolve_lane(parse_runtime_settings(minimal(right=agent("r"), left=agent("l"))), graph)
    assert lane is not None
    assert lane.source_node == "left"


def test_single_worker_graph_resolves_its_worker() -> None:
    graph = zeroshot_graph("graph/single-worker.json")
    lane = resolve_lane(parse_runtime_settings(minimal(worker=agent())), graph)
    assert lane is not None
    assert (lane.source_node, lane.chosen_by) == ("worker", "first_step")


def test_source_node_bound_to_git_delivery_is_an_error() -> None:
    error = lane_error(with_postmortem(example(), sourceNode="deliver"), software_change())
    assert error.path == "globalAgents.postmortem.sourceNode"
    assert str(error) == (
        "globalAgents.postmortem.sourceNode: 'deliver' is bound to git_delivery, not an agent; "
        "allowed worker, acceptance, code, review_repair"
    )


@pytest.mark.parametrize(
    ("name", "kind"),
    [("run", "seq"), ("worker_result", "choice"), ("parallel_reviews", "par"), ("done", "succeed")],
)
def test_source_node_naming_a_non_executable_node_is_an_error(name: str, kind: str) -> None:
    error = lane_error(with_postmortem(example(), sourceNode=name), software_change())
    assert str(error).startswith(
        f"globalAgents.postmortem.sourceNode: {name!r} is a {kind} node, not a step or verifier"
    )


def test_source_node_naming_a_loop_or_map_of_a_real_graph_is_an_error() -> None:
    graph = zeroshot_graph("graph/full-all-nodes.json")
    settings = minimal(work=agent())
    for name, kind in (("repeat", "loop"), ("each", "map"), ("root", "seq")):
        error = lane_error(with_postmortem(copy.deepcopy(settings), sourceNode=name), graph)
        assert f"{name!r} is a {kind} node" in str(error)


def test_source_node_not_in_the_graph_is_an_error() -> None:
    error = lane_error(with_postmortem(example(), sourceNode="planner"), software_change())
    assert str(error).startswith(
        "globalAgents.postmortem.sourceNode: 'planner' is not a node of the graph; allowed worker"
    )


def test_source_node_without_a_binding_is_an_error() -> None:
    document = with_postmortem(example(), sourceNode="review_repair")
    del document["nodes"]["review_repair"]
    error = lane_error(document, software_change())
    assert str(error) == (
        "globalAgents.postmortem.sourceNode: 'review_repair' has no binding in `nodes`; "
        "allowed worker, acceptance, code"
    )


def test_no_eligible_node_is_an_error() -> None:
    document = with_postmortem(example(), sourceNode=None)
    document["nodes"] = {"deliver": {"kind": "git_delivery"}}
    error = lane_error(document, software_change())
    assert error.path == "globalAgents.postmortem.sourceNode"
    assert "no step or verifier of the graph has an agent binding" in str(error)


def test_graph_without_executables_has_no_eligible_node() -> None:
    error = lane_error(minimal(), zeroshot_graph("graph/compiled-ir.json"))
    assert "no step or verifier of the graph has an agent binding" in str(error)


def test_no_eligible_node_is_fine_when_the_postmortem_is_off() -> None:
    for document in (
        with_postmortem(minimal(), enabled=False),
        {**minimal(), "activeMemory": {"repository": False, "graph": False}},
    ):
        assert resolve_lane(parse_runtime_settings(document), software_change()) is None


def test_a_bad_named_source_node_is_an_error_even_when_the_postmortem_is_off() -> None:
    document = with_postmortem(example(), enabled=False, sourceNode="deliver")
    assert "bound to git_delivery" in str(lane_error(document, software_change()))


# -- files ----------------------------------------------------------------------------------


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_malformed_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", '{\n  "harness": "claude",\n  "size" "small"\n}\n')
    with pytest.raises(InvalidRecord) as caught:
        load_runtime_config(path, SOFTWARE_CHANGE)
    assert caught.value.line == 3
    assert str(caught.value) == f"{path}:3: column 10: not valid JSON: Expecting ':' delimiter"


def test_malformed_graph_json_names_the_graph_file(tmp_path: Path) -> None:
    graph = write(tmp_path, "graph.json", '{"root": ')
    with pytest.raises(InvalidRecord) as caught:
        load_runtime_config(EXAMPLE, graph)
    assert str(caught.value).startswith(f"{graph}:1: column 10: not valid JSON")


def test_missing_config_file_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(UsageError) as caught:
        load_runtime_config(missing, SOFTWARE_CHANGE)
    assert str(caught.value) == f"{missing}: no such runtime JSON file; check the path"


def test_missing_graph_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such graph file"):
        load_runtime_config(EXAMPLE, tmp_path / "nope.graph.json")


def test_directory_is_not_a_config_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a folder, not a runtime JSON file"):
        load_runtime_config(tmp_path, SOFTWARE_CHANGE)


def test_unreadable_config_file_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, "locked.json", "{}")
    real_open = os.open

    def denied(name: Any, *args: Any, **kwargs: Any) -> int:
        # chmod 000 does not stop root (CI containers), so refuse the open here
        if os.fspath(name) == str(path):
            raise PermissionError(13, "Permission denied", str(name))
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(UsageError) as caught:
        load_runtime_config(path, SOFTWARE_CHANGE)
    assert str(caught.value) == f"{path}: cannot read the runtime JSON file: Permission denied"


def test_non_utf8_config_file_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"harness": "caf\xe9"}')
    with pytest.raises(UsageError, match="not UTF-8 text"):
        load_runtime_config(path, SOFTWARE_CHANGE)


# -- the graph file -------------------------------------------------------------------------


def test_graph_may_be_wrapped_under_graph(tmp_path: Path) -> None:
    wrapped = {"graph": json.loads(SOFTWARE_CHANGE.read_text()), "expected": {}}
    graph = write(tmp_path, "wrapped.json", json.dumps(wrapped))
    config = load_runtime_config(EXAMPLE, graph)
    assert config.lane is not None and config.lane.source_node == "worker"


def test_invalid_graph_is_a_usage_error_with_its_path(tmp_path: Path) -> None:
    bad = {
        "profile": "openengine.graph.full/v1",
        "root": {"kind": "seq", "name": "r", "children": [{"kind": "step"}]},
    }
    graph = write(tmp_path, "bad.graph.json", json.dumps(bad))
    with pytest.raises(UsageError) as caught:
        load_runtime_config(EXAMPLE, graph)
    assert str(caught.value) == (
        f"{graph}: not a valid zeroshot graph: root.children[0].name: Field required"
    )


def test_duplicate_node_names_in_the_graph_are_an_error(tmp_path: Path) -> None:
    step = {"kind": "step", "name": "worker"}
    bad = {"profile": "p", "root": {"kind": "seq", "name": "r", "children": [step, step]}}
    graph = write(tmp_path, "dupe.graph.json", json.dumps(bad))
    with pytest.raises(UsageError, match="node name 'worker' is used twice"):
        load_runtime_config(EXAMPLE, graph)


# -- the command ----------------------------------------------------------------------------


def test_config_check_prints_the_resolved_lane(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", str(EXAMPLE), "--graph", str(SOFTWARE_CHANGE)]) == 0
    out = capsys.readouterr().out
    assert "source node   worker (step, named by sourceNode)" in out
    assert "model claude-sonnet-5, effort high, claude/anthropic" in out


def test_config_check_json_reports_defaults_and_lane(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = minimal(worker=agent(effort="low"), deliver={"kind": "git_delivery"})
    plan["activeMemory"] = {"graph": False, "typo": 1}
    path = write(tmp_path, "plan.json", json.dumps(plan))
    assert main(["config", "check", str(path), "--graph", str(SOFTWARE_CHANGE), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["activeMemory"] == {
        "repository": True,
        "graph": False,
        "budgetBytes": 2048,
        "typo": 1,
    }
    assert report["globalAgents"] == {
        "postmortem": {"enabled": True, "sourceNode": None, "timeoutMs": 120000}
    }
    assert report["scopes"] == {
        "repository": {"recall": True, "collect": True},
        "graph": {"recall": False, "collect": False},
    }
    assert report["lane"]["source_node"] == "worker"
    assert report["lane"]["chosen_by"] == "first_step"
    assert report["lane"]["effort"] == "low"
    assert report["unknown_keys"] == ["activeMemory.typo"]


def test_config_check_exits_2_with_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = with_postmortem(example(), timeoutMs=0)
    path = write(tmp_path, "plan.json", json.dumps(plan))
    assert main(["config", "check", str(path), "--graph", str(SOFTWARE_CHANGE), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "active-memory: globalAgents.postmortem.timeoutMs: 0 is out of range; allowed 1..600000\n"
    )


def test_config_check_missing_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["config", "check", str(tmp_path / "x.json"), "--graph", str(SOFTWARE_CHANGE)])
    assert code == 2
    assert "no such runtime JSON file" in capsys.readouterr().err


def test_settings_type_is_exported() -> None:
    assert isinstance(parse_runtime_settings(example()), RuntimeSettings)
