"""Builders for the init tests: three real git repositories and a dozen run records."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from run_builder import RunBuilder, error, ok, software_change
from specialist_builders import git, proposal, with_graph_hash

from active_memory.runlog.record import load_run_record
from active_memory.specialists.tasks import build_discovery

Json = dict[str, Any]


def make_repository(parent: Path, name: str, remote: str | None) -> Path:
    """A committed checkout with the files the scripted proposal cites."""
    root = parent / name
    (root / "api").mkdir(parents=True)
    git(root, "init", "-q")
    (root / "api" / "schema.json").write_text('{"openapi": "3.1.0"}\n')
    (root / "Makefile").write_text("api-client:\n\tnpx openapi-gen api/schema.json\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    if remote is not None:
        git(root, "remote", "add", "origin", remote)
    return root


def head(root: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, check=True)
    return done.stdout.decode().strip()


def run_data(
    run_id: str,
    checkout: Path | str,
    *,
    namespace: str,
    remote: str | None,
    evidence: bool = False,
    revision: str = "0" * 40,
    graph_name: str = "software-change",
    finished: bool = True,
) -> Json:
    """A run record: two worker timeouts when `evidence`, else one clean visit."""
    run = RunBuilder(software_change(), run_id=run_id)
    if evidence:
        first = run.visit("worker", error("timeout"))
        second = run.visit("worker", error("timeout"), attempt=2)
        run.completions = {first: "gave up reading the schema", second: "timed out"}
    run.visit("worker", ok(), attempt=3 if evidence else 1)
    data = with_graph_hash(run.build())
    data["graph"]["name"] = graph_name
    data["source"]["revision"] = revision
    data["repository"] = {
        "namespace": namespace,
        "checkout": str(checkout),
        "remote": remote,
        "aliases": [],
    }
    if remote is None:
        del data["repository"]["remote"]
    if not finished:
        data["events"] = [e for e in data["events"] if e["event"]["kind"] != "terminal"]
    return data


class History:
    """Three repositories and twelve run records (five selected, seven excluded)."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        repos = tmp_path / "repos"
        self.alpha = make_repository(repos, "alpha", "git@github.com:acme/alpha.git")
        self.beta = make_repository(repos, "beta", "https://github.com/acme/beta.git")
        self.gamma = make_repository(repos, "gamma", None)
        git(self.beta, "checkout", "-q", "--detach")
        self.runs = tmp_path / "records"
        self.runs.mkdir()
        alpha: Json = {
            "namespace": "repo:github.com/acme/alpha",
            "remote": "git@github.com:acme/alpha.git",
        }
        beta: Json = {
            "namespace": "repo:github.com/acme/beta",
            "remote": "https://github.com/acme/beta.git",
        }
        gamma: Json = {"namespace": "repo:local/gamma", "remote": None}
        self.write(run_data("run-a1", self.alpha, evidence=True, **alpha))
        self.write(run_data("run-a2", self.alpha / "api", **alpha))
        self.write(run_data("run-b1", self.beta, evidence=True, **beta))
        self.write(run_data("run-b2", self.beta, **beta))
        self.write(run_data("run-g1", self.gamma, revision=head(self.gamma), **gamma))
        # excluded, one of every kind (two unprovable, two opted out)
        self.write(run_data("run-g2", self.gamma, **gamma))
        self.write(
            run_data(
                "run-x1",
                self.alpha,
                namespace="repo:github.com/acme/other",
                remote="git@github.com:acme/other.git",
            )
        )
        (self.runs / "broken.json").write_text("{not json")
        self.write(run_data("run-u1", self.alpha, finished=False, **alpha))
        self.write(run_data("run-m1", tmp_path / "gone", **alpha))
        self.write(
            run_data(
                "run-d1",
                tmp_path / "elsewhere" / "delta",
                namespace="repo:github.com/acme/delta",
                remote="git@github.com:acme/delta.git",
            )
        )
        self.write(run_data("run-l1", self.alpha, graph_name="legacy", **alpha))

    def write(self, data: Json) -> None:
        (self.runs / f"{data['run_id']}.json").write_text(json.dumps(data))

    @property
    def environ(self) -> dict[str, str]:
        """No zeroshot state dir of the real user is ever read."""
        state = self.tmp / "state"
        return {
            "HOME": str(self.tmp / "home"),
            "ZEROSHOT_STATE_DIR": str(state / "zeroshot"),
            "ZEROSHOT_RUST_STATE_DIR": str(state / "zeroshot-rust"),
        }


def answer(task_file: str, body: Json, digest: str | None = None) -> None:
    """Write the answer file a task names (optionally claiming another digest)."""
    task = json.loads(Path(task_file).read_text())
    envelope = {
        "schema": "active-memory/exchange-answer@1",
        "specialist": task["specialist"],
        "digest": digest or task["digest"],
        "answer": body,
    }
    (Path(task_file).parent / task["answer_file"]).write_text(json.dumps(envelope))


def scripted_answers(session: Path, tasks: list[Json], *, flawed: bool = False) -> None:
    """One proposal from alpha's repository discovery; every other task answers none.
    `flawed`: that proposal has an unknown field (`confidence`) and cites lines 200-260
    of a one-line file, what a repair turn must list."""
    for task in tasks:
        body: Json = {"lessons": []}
        if task["specialist"] == "repository_discovery":
            record = _record_for(session, task)
            if record.run_id == "run-a1":
                found = build_discovery("repository_discovery", record)
                body = {"lessons": [proposal(evidence=[found.evidence[0].id])]}
                if flawed:
                    body["lessons"][0]["confidence"] = 0.9
                    body["lessons"][0]["citations"] = [
                        {"path": "api/schema.json", "lines": "200-260"}
                    ]
        answer(task["task_file"], body)


def _record_for(session: Path, task: Json) -> Any:
    text = Path(task["task_file"]).read_text()
    for file in sorted((session / "runs").glob("*.json")):
        record = load_run_record(file)
        if re.search(rf"{re.escape(record.run_id)}\b", text):
            return record
    raise AssertionError("no run record matches the task")
