"""Builders for the specialist tests: real git checkouts, run records written as JSON, lessons."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from run_builder import FIXTURES, RunBuilder, error, ok, software_change

from active_memory.checkout import Checkout
from active_memory.lessons import (
    Associations,
    Citation,
    Evidence,
    GraphScope,
    Lesson,
    RepositoryScope,
)
from active_memory.runlog.canonical import graph_hash
from active_memory.runlog.graph import Graph
from active_memory.runlog.record import RunRecord, load_run_record

NAMESPACE = "repo:github.com/acme/api"
REJECTIONS = FIXTURES / "runs" / "software-change-two-rejections.json"


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def make_repo(tmp_path: Path) -> Path:
    """A checkout with tracked, untracked, ignored files and a symlink to an ignored file."""
    root = tmp_path / "repo"
    (root / "api").mkdir(parents=True)
    (root / "src" / "generated").mkdir(parents=True)
    git(root, "init", "-q")
    (root / ".gitignore").write_text("build/\n")
    (root / "api" / "schema.json").write_text('{"openapi": "3.1.0"}\n')
    (root / "src" / "generated" / "client.ts").write_text(
        "export function makeClient() { return regenerate_client(); }\n"
    )
    (root / "Makefile").write_text("api-client:\n\tnpx openapi-gen api/schema.json\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    (root / "notes.md").write_text("untracked but not ignored\n")
    (root / "build").mkdir()
    (root / "build" / "out.js").write_text("generated\n")
    (root / "link.js").symlink_to("build/out.js")
    return root


def checkout(root: Path) -> Checkout:
    return Checkout(root)


def write_record(tmp_path: Path, data: dict[str, Any], name: str = "run.json") -> RunRecord:
    """Write `data` as a run record file and load it back the way the CLI does."""
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return load_run_record(path)


def with_graph_hash(data: dict[str, Any]) -> dict[str, Any]:
    ir = data["graph"]["ir"]
    data["graph"]["hash"] = graph_hash(Graph.from_json(ir))
    return data


def rejections_record(tmp_path: Path, repo: Path | None, **changes: Any) -> RunRecord:
    """The recorded software-change run with two rejected rounds (and exploration)."""
    data = with_graph_hash(json.loads(REJECTIONS.read_text()))
    if repo is not None:
        data["repository"]["checkout"] = str(repo)
    data.update(changes)
    return write_record(tmp_path, data, "rejections.json")


def timeouts_record(
    tmp_path: Path,
    repo: Path | None,
    *,
    exploration: bool = True,
    completions: dict[str, str] | None = None,
    **changes: Any,
) -> RunRecord:
    """Two worker timeouts (graph + repository evidence) and, optionally, exploration."""
    run = RunBuilder(software_change())
    first = run.visit("worker", error("timeout"))
    second = run.visit("worker", error("timeout"), attempt=2)
    run.visit("worker", ok(), attempt=3)
    run.completions = completions or {first: "gave up reading the schema", second: "timed out"}
    if exploration:
        run.receipt("Read", ["api/schema.json"], 0)
        run.receipt("Grep", ["src"], 2)
        run.receipt("Read", ["src/generated/client.ts"], 6)
    data = with_graph_hash(run.build())
    if repo is not None:
        data["repository"]["checkout"] = str(repo)
    data.update(changes)
    return write_record(tmp_path, data, "timeouts.json")


def repo_lesson(
    lesson_id: str = "L-1",
    revision: int = 1,
    *,
    files: tuple[str, ...] = ("api/schema.json",),
    folders: tuple[str, ...] = (),
    cites: tuple[str, ...] = (),
    title: str | None = None,
    namespace: str = NAMESPACE,
) -> Lesson:
    return Lesson(
        id=lesson_id,
        revision=revision,
        scope=RepositoryScope(repository=namespace),
        title=title or f"Lesson {lesson_id}",
        recommendation="After editing `api/schema.json` run `make api-client`.",
        associations=Associations(files=list(files), folders=list(folders)),
        evidence=Evidence(run_ids=["run-0"], citations=[Citation(path=c) for c in cites]),
    )


def graph_lesson(
    lesson_id: str = "G-1", revision: int = 1, *, graph: str, node: str = "worker"
) -> Lesson:
    return Lesson(
        id=lesson_id,
        revision=revision,
        scope=GraphScope(graph_hash=graph, node=node),
        title=f"Graph lesson {lesson_id}",
        recommendation="Run `make lint` before finishing; reviewers reject lint errors.",
    )


def proposal(**changes: Any) -> dict[str, Any]:
    """A repository discovery proposal that passes every check against `make_repo`."""
    data: dict[str, Any] = {
        "title": "Regenerate the client with make api-client",
        "recommendation": (
            "After editing `api/schema.json` run `make api-client`; never hand-edit "
            "`src/generated/client.ts`."
        ),
        "associations": {"files": ["api/schema.json"]},
        "evidence": [],
        "citations": [{"path": "api/schema.json", "lines": "1"}],
        "why_recurs": "every API change edits the schema",
    }
    data.update(changes)
    return data
