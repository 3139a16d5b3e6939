"""Builders for graphs and run records in tests (minimal, valid `active-memory/run@1`)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from conftest import ZEROSHOT_FIXTURES

from active_memory.runlog.record import RunRecord, parse_run_record

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
ZEROSHOT = ZEROSHOT_FIXTURES
CHECKOUT = "/work/checkout"
T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)

Json = dict[str, Any]

# --- graph nodes ---------------------------------------------------------------


def step(name: str) -> Json:
    return {"kind": "step", "name": name, "worker": "builtin.agent.worker@1"}


def verifier(name: str) -> Json:
    return {
        "kind": "verifier",
        "name": name,
        "worker": "builtin.agent.verifier@1",
        "signals": {"verdict": ["accepted", "rejected"]},
    }


def seq(name: str, *nodes: Json) -> Json:
    return {"kind": "seq", "name": name, "children": list(nodes)}


def par(name: str, *branches: Json, join: str = "all") -> Json:
    return {"kind": "par", "name": name, "branches": list(branches), "join": {"kind": join}}


def choice(name: str, branches: list[tuple[Json, Json]], otherwise: Json | None) -> Json:
    node: Json = {
        "kind": "choice",
        "name": name,
        "branches": [{"when": when, "node": target} for when, target in branches],
    }
    if otherwise is not None:
        node["otherwise"] = otherwise
    return node


def loop(name: str, body: Json, until: Json | None = None, max_iterations: int = 10) -> Json:
    node: Json = {"kind": "loop", "name": name, "body": body, "maxIterations": max_iterations}
    if until is not None:
        node["until"] = until
    return node


def map_node(name: str, body: Json) -> Json:
    return {
        "kind": "map",
        "name": name,
        "body": body,
        "over": {"source": "state", "path": ["items"]},
        "maxItems": 8,
    }


def succeed(name: str) -> Json:
    return {"kind": "succeed", "name": name}


def fail(name: str) -> Json:
    return {"kind": "fail", "name": name, "reason": name}


def error_guard(node: str) -> Json:
    return {
        "kind": "in",
        "value": {"name": node, "source": "error", "field": None},
        "labels": ["timeout", "crash", "malformed", "refusal"],
    }


def verdict_guard(node: str, label: str = "accepted") -> Json:
    return {
        "kind": "in",
        "value": {"name": node, "source": "signal", "field": "verdict"},
        "labels": [label],
    }


def all_of(*guards: Json) -> Json:
    return {"kind": "all", "guards": list(guards)}


def any_of(*guards: Json) -> Json:
    return {"kind": "any", "guards": list(guards)}


def graph(root: Json) -> Json:
    return {"profile": "openengine.graph.full/v1", "root": root}


def review_loop(
    reviewers: tuple[str, ...] = ("acceptance", "code"),
    repair: str = "review_repair",
    until: Json | str | None = "default",
    name: str = "review_loop",
) -> Json:
    """A loop of all-join reviewers with a routing choice whose otherwise repairs."""
    accepted = all_of(*(verdict_guard(r) for r in reviewers))
    route = choice(
        "review_result",
        [
            (any_of(*(error_guard(r) for r in reviewers)), fail("review_failed")),
            (accepted, succeed("done")),
        ],
        step(repair),
    )
    body = seq(f"{name}_iteration", par("parallel_reviews", *map(verifier, reviewers)), route)
    return loop(name, body, accepted if until == "default" else until)  # type: ignore[arg-type]


def software_change() -> Json:
    """The built-in template's shape, from the repository file when it is there."""
    path = REPO_ROOT / "software-change.graph.json"
    if path.exists():
        loaded: Json = json.loads(path.read_text())
        return loaded
    return graph(
        seq(
            "run",
            step("worker"),
            choice(
                "worker_result",
                [(error_guard("worker"), fail("worker_failed"))],
                seq("reviews", review_loop(), fail("reviews_exhausted")),
            ),
        )
    )


# --- outcomes ------------------------------------------------------------------


def ok() -> Json:
    return {"status": "verified", "output": None, "artifacts": []}


def verdict(label: str) -> Json:
    return {
        "status": "verifier",
        "output": None,
        "signals": {"verdict": label},
        "diagnostic": None,
        "artifacts": [],
    }


def error(code: str, reason: str = "declared_failure") -> Json:
    return {"status": "error", "code": code, "reason": reason}


# --- run records ---------------------------------------------------------------


class RunBuilder:
    """Appends zeroshot RunEvents with increasing sequence numbers."""

    def __init__(self, graph_ir: Json | None = None, *, run_id: str = "run-1") -> None:
        self.run_id = run_id
        self.graph_ir = graph_ir
        self.events: list[Json] = []
        self.receipts: list[Json] = []
        self.completions: dict[str, str] = {}
        self.extra: Json = {}
        self._next_execution = 1
        self.add({"kind": "run_started"})

    def add(self, event: Json) -> int:
        sequence = len(self.events) + 1
        at = (T0 + timedelta(seconds=sequence)).isoformat()
        self.events.append({"sequence": sequence, "at": at, "event": event})
        return sequence

    def _ref(self, node: str, execution: str) -> Json:
        return {
            "runId": self.run_id,
            "node": node,
            "nodeInstance": execution,
            "execution": execution,
        }

    def start(
        self,
        node: str,
        *,
        map_item: tuple[int, ...] = (),
        attempt: int = 1,
        execution: str | None = None,
    ) -> str:
        if execution is None:
            execution = f"ex-{self._next_execution}"
            self._next_execution += 1
        self.add(
            {
                "kind": "node_started",
                "reference": self._ref(node, execution),
                "occurrence": {"node": node, "mapIndices": list(map_item)},
                "attempt": attempt,
                "input": None,
            }
        )
        return execution

    def complete(self, execution: str, node: str, outcome: Json) -> None:
        self.add(
            {
                "kind": "node_completed",
                "completion": {"reference": self._ref(node, execution), "outcome": outcome},
            }
        )

    def void(self, execution: str, node: str, reason: str = "parallel_join") -> None:
        self.add(
            {"kind": "execution_voided", "reference": self._ref(node, execution), "reason": reason}
        )

    def visit(
        self,
        node: str,
        outcome: Json,
        *,
        map_item: tuple[int, ...] = (),
        attempt: int = 1,
        execution: str | None = None,
    ) -> str:
        execution = self.start(node, map_item=map_item, attempt=attempt, execution=execution)
        self.complete(execution, node, outcome)
        return execution

    def review_round(self, acceptance: str, code: str, *, map_item: tuple[int, ...] = ()) -> None:
        """Both reviewers start, then settle (the all-join par of the template)."""
        a = self.start("acceptance", map_item=map_item)
        c = self.start("code", map_item=map_item)
        self.complete(c, "code", verdict(code))
        self.complete(a, "acceptance", verdict(acceptance))

    def receipt(self, tool: str, paths: list[str], minute: float, node: str = "worker") -> None:
        at = (T0 + timedelta(minutes=minute)).isoformat()
        self.receipts.append({"node": node, "tool": tool, "at": at, "paths": paths})

    def build(self, *, outcome: str = "succeeded", seeded: bool = False) -> Json:
        events = [
            *self.events,
            {
                "sequence": len(self.events) + 1,
                "event": {"kind": "terminal", "result": {"status": outcome, "output": None}},
            },
        ]
        record: Json = {
            "schema": "active-memory/run@1",
            "run_id": self.run_id,
            "title": "Repair checkout flow",
            "outcome": outcome,
            "seeded": seeded,
            "source": {"repository": "acme/api", "branch": "main", "revision": "0" * 40},
            "repository": {
                "namespace": "repo:github.com/acme/api",
                "checkout": CHECKOUT,
                "remote": "git@github.com:acme/api.git",
                "aliases": ["api"],
            },
            "graph": {"name": "test", "hash": None, "ir": copy.deepcopy(self.graph_ir)},
            "runtime": {"harness": "claude", "provider": "anthropic", "nodes": {}},
            "events": events,
            "completions": dict(self.completions),
            "receipts": list(self.receipts),
            "deliveries": [],
            **self.extra,
        }
        return record

    def record(self, **options: Any) -> RunRecord:
        return parse_run_record(self.build(**options), "test-run.json")
