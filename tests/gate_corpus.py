"""The answer corpus of tests/fixtures/answer_corpus (its README): cases, tasks, checkout,
and what the gate decides on each. Shared by the corpus test and bench/gate_bench.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.checkout import Checkout
from active_memory.specialists.answers import GraphDiscoveryAnswer, RepositoryDiscoveryAnswer
from active_memory.specialists.checks import check_discovery
from active_memory.specialists.checks.gate import rule_names
from active_memory.specialists.tasks import DiscoveryTask

CORPUS = Path(__file__).parent / "fixtures" / "answer_corpus"
HALVES = ("tuning", "held_out")


@dataclass(frozen=True, slots=True)
class Verdict:
    """One case and what the gate did with it."""

    case: dict[str, Any]
    published: bool
    rules: frozenset[str]
    reasons: tuple[str, ...]


def cases(half: str) -> list[dict[str, Any]]:
    """Every case of one half, bad then good."""
    found: list[dict[str, Any]] = []
    for kind in ("bad", "good"):
        found += json.loads((CORPUS / half / f"{kind}.json").read_text())["cases"]
    return found


def make_checkout(tmp: Path) -> Checkout:
    """The corpus checkout as a git repository with every file tracked."""
    root = tmp / "corpus-checkout"
    shutil.copytree(CORPUS / "checkout", root)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "corpus"], cwd=root, check=True)
    return Checkout(root)


def judge(case: dict[str, Any], checkout: Checkout) -> Verdict:
    """Check one case's proposal against its task."""
    tasks = json.loads((CORPUS / "tasks.json").read_text())
    task = DiscoveryTask.model_validate(tasks[case["task"]])
    model = GraphDiscoveryAnswer if case["task"] == "graph" else RepositoryDiscoveryAnswer
    answer = model.model_validate({"lessons": [case["lesson"]]})
    result = check_discovery(task, answer, checkout=checkout)
    reasons = tuple(r for x in result.rejected for r in x.reasons)
    return Verdict(case, bool(result.accepted), frozenset(rule_names(reasons)), reasons)
