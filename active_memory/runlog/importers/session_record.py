"""The fixed shape of a session's run record: one worker step, its nodes and visits, and
the sections that do not depend on what was read (graph, repository, runtime).

Each prompt typed is one visit (execution) of node `worker`; a sub-agent's run is a
visit of a node of its own, `worker/agent-<id>`. The graph is the same for every
session of every harness, so graph lessons learned from sessions share one scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from active_memory.runlog.importers.common import (
    aliases_for,
    local_namespace,
    namespace_from_remote,
)
from active_memory.runlog.importers.session_endings import Ending

WORKER = "worker"


def agent_node(agent_id: str) -> str:
    """The node a sub-agent's calls are attributed to: `worker/agent-<id>`."""
    return f"{WORKER}/agent-{agent_id}"


@dataclass(slots=True)
class Visit:
    """One execution: a user turn of `worker`, or one run of a sub-agent."""

    node: str
    execution: str
    at: str | None
    ending: Ending | None = None
    detail: str = ""
    last_tool_timed_out: bool = False
    final_text: str | None = None
    last_at: str | None = None
    answered: bool = False


def reference(run_id: str, visit: Visit) -> dict[str, Any]:
    """The node reference of a visit's events."""
    return {
        "runId": run_id,
        "node": visit.node,
        "nodeInstance": "1",
        "execution": visit.execution,
    }


def node_started(run_id: str, visit: Visit) -> dict[str, Any]:
    """The body of a visit's `node_started` event (its `input` set later, if any)."""
    return {
        "reference": reference(run_id, visit),
        "occurrence": {"node": visit.node, "mapIndices": []},
        "attempt": 1,
        "input": None,
    }


def repository_section(remote: str | None, root: str | None, run_id: str) -> dict[str, Any]:
    """The record's `repository`: its namespace (from the remote, else the checkout)."""
    namespace = (namespace_from_remote(remote) if remote else None) or (
        local_namespace(root) if root else f"repo:local/{run_id}"
    )
    repository: dict[str, Any] = {"namespace": namespace, "aliases": aliases_for(namespace)}
    if root:
        repository["checkout"] = root
    if remote:
        repository["remote"] = remote
    return repository


def runtime_section(harness: str, model: str | None, provider: str | None) -> dict[str, Any]:
    """The record's `runtime`: the harness, the worker's model and the provider."""
    node: dict[str, Any] = {"kind": "agent"}
    if model:
        node["model"] = model
    runtime: dict[str, Any] = {"harness": harness, "nodes": {WORKER: node}}
    if provider:
        runtime["provider"] = provider
    return runtime


def owner_name(remote: str | None) -> str | None:
    """`owner/name` of a remote's repository, for the record's `source`."""
    namespace = namespace_from_remote(remote) if remote else None
    if not namespace:
        return None
    parts = namespace.removeprefix("repo:").split("/")[1:]
    return "/".join(parts) if parts else None


def session_graph() -> dict[str, Any]:
    """The graph IR of every session: one worker step."""
    # An interactive session is one worker step. The IR is the same for every session of
    # every harness, so graph lessons learned from sessions share one graph-hash scope.
    return {
        "profile": "openengine.graph.full/v1",
        "initialInput": {"kind": "null"},
        "policy": {"policy": "policy.default@1", "default": "deny"},
        "root": {
            "kind": "step",
            "name": WORKER,
            "worker": "agent.worker@1",
            "input": {"kind": "null"},
            "output": {"kind": "null"},
            "inputBindings": [],
            "writeBindings": [],
            "attempts": 1,
        },
    }
