"""A fair file budget (issue 25, item 4): the files the run's failures and their
resolutions touched come first, then the root's build and tool configuration, then the
rest; within each group small files before large ones, each with a per-file cap, so large
files never crowd out small ones; the task is compact JSON; the user's request is shown
bounded, not cut at a 120-character title; the bound still holds for the whole prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import FakeSessions, config, seed
from run_builder import RunBuilder, software_change
from specialist_builders import git, repo_lesson, with_graph_hash, write_record

from active_memory.checkout import Checkout
from active_memory.orchestrator import PostmortemLimits, run_postmortem
from active_memory.prompts import load_prompts
from active_memory.runlog.record import RunRecord
from active_memory.specialists.tasks import (
    DEFAULT_BATCH_BYTES,
    DiscoveryName,
    DiscoveryTask,
    FileAuthority,
    TaskLimits,
    build_discovery,
    build_repository_maintenance,
    rendered_size,
    task_text,
)
from active_memory.store.sqlite import SqliteStore

SQLITE_ONLY = True  # the bound is the task builder's; the store backends are tested apart

LARGE = {"lib/app/router.ex": 20_000, "lib/app/schema.ex": 35_000, "lib/app/repo.ex": 48_000,
         "lib/app/live.ex": 60_000}  # fmt: skip
SMALL = [f"lib/app/small_{n}.ex" for n in range(10)]
CONFIG = {
    "mix.exs": "defmodule App.MixProject do\n  use Mix.Project\nend\n",
    "mix.lock": '%{"phoenix": {:hex, :phoenix, "1.7.0"}}\n',
    ".credo.exs": '%{configs: [%{name: "default", strict: true}]}\n',
    ".formatter.exs": '[inputs: ["{mix,.formatter}.exs", "{config,lib,test}/**/*.{ex,exs}"]]\n',
    ".pre-commit-config.yaml": "repos:\n  - repo: local\n    hooks:\n      - id: credo\n",
    "Gemfile": "source 'https://rubygems.org'\n",
    "pyproject.toml": "[project]\nname = 'app'\n",
    "setup.cfg": "[flake8]\nmax-line-length = 100\n",
    "package.json": '{"scripts": {"build": "node build.js"}}\n',
    "tsconfig.json": '{"compilerOptions": {"strict": true}}\n',
    "Cargo.toml": "[package]\nname = 'app'\n",
    "go.mod": "module example.com/app\n",
    "Makefile": "test:\n\tmix test\n",
    "tox.ini": "[tox]\nenvlist = py311\n",
    "pytest.ini": "[pytest]\naddopts = -q\n",
}


def elixir_line(n: int) -> str:
    return f'  def handle_{n}(conn, params), do: render(conn, :show, id: params["id"])\n'


def body(size: int) -> str:
    lines = []
    total = 0
    n = 0
    while total < size:
        line = elixir_line(n)
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines)


def make_app(root: Path, *, config: bool = False) -> Path:
    """A Phoenix-like checkout: four large modules, ten small ones, an ignored build
    folder, the assets' build script, and (`config`) the root's build configuration."""
    (root / "lib" / "app").mkdir(parents=True)
    (root / "assets").mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("priv/static/\n")
    for path, size in LARGE.items():
        (root / path).write_text(body(size))
    for n, path in enumerate(SMALL):
        (root / path).write_text(body(300 + 150 * n))
    (root / "assets" / "build.js").write_text("require('esbuild').build({})\n")
    if config:
        for path, text in CONFIG.items():
            (root / path).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    (root / "priv" / "static" / "assets").mkdir(parents=True)
    (root / "priv" / "static" / "assets" / "app.css").write_text("body {}\n")
    return root


def exploration(run: RunBuilder) -> None:
    """The large files read most often (five times each), then each small file once."""
    minute = 0.0
    for _ in range(5):
        for path in LARGE:
            run.receipt("Read", [path], minute)
            minute += 0.5
    for path in SMALL:
        run.receipt("Read", [path], minute)
        minute += 0.5


def record_of(tmp_path: Path, repo: Path, **extra: Any) -> RunRecord:
    run = RunBuilder(software_change())
    run.visit("worker", {"status": "verified", "output": None, "artifacts": []})
    exploration(run)
    data = with_graph_hash(run.build())
    data["repository"]["checkout"] = str(repo)
    data.update(extra)
    return write_record(tmp_path, data)


def bound_for(name: str) -> int:
    """What a postmortem gives a task of `name`: the default prompt bound less the
    template's own text."""
    return DEFAULT_BATCH_BYTES - load_prompts().fixed_bytes(name)


def whole(file: FileAuthority, repo: Path) -> bool:
    lines = (repo / file.path).read_text().splitlines()
    expected = tuple(f"{n}: {line}" for n, line in enumerate(lines, start=1))
    return file.current and not file.truncated and not file.omitted and file.content == expected


def test_four_large_files_touched_most_do_not_crowd_out_ten_small_files_touched_once(
    tmp_path: Path,
) -> None:
    repo = make_app(tmp_path / "repo")
    record = record_of(tmp_path, repo)
    name: DiscoveryName = "repository_discovery"
    task = build_discovery(name, record, checkout=Checkout(repo), max_bytes=bound_for(name))
    files = {f.path: f for f in task.files}
    assert set(list(files)[:4]) == set(LARGE)  # still in order of relevance: the most touched
    for path in SMALL:
        assert whole(files[path], repo), path
    for path in LARGE:  # each shown, cut to a share of what is left
        big = files[path]
        assert big.truncated and not big.omitted and big.content
        assert big.content[-1].startswith("[cut: ") and len(big.content) > 20
    assert rendered_size(task) <= bound_for(name)


def failures(repo: Path) -> list[dict[str, Any]]:
    """The run's failed calls, shaped as SPEC §3 `tool_failures`."""
    at = "2026-11-29T10:20:00+00:00"
    return [
        {
            "node": "worker", "execution": "ex-1", "tool": "Bash", "at": at,
            "command": "mix credo --strict lib/app/small_9.ex", "family": "mix credo",
            "cwd": "", "exit_code": 1,
            "error": "lib/app/small_9.ex:3 Pipe chain should start with a raw value.",
            "paths": ["lib/app/small_9.ex"],
            "resolved_by": {"at": at, "command": "mix format lib/app/small_8.ex",
                            "family": "mix format"},
        },
        {
            "node": "worker", "execution": "ex-1", "tool": "Bash", "at": at,
            "command": "git add priv/static/assets/app.css", "family": "git add", "cwd": "",
            "exit_code": 1,
            "error": "The following paths are ignored by one of your .gitignore files",
            "paths": [f"{repo}/priv/static/assets/app.css"],
        },
        {
            "node": "worker", "execution": "ex-1", "tool": "Bash", "at": at,
            "command": "node build.js --watch", "family": "node build.js", "cwd": "assets",
            "exit_code": 1, "error": "Cannot find module 'esbuild'", "paths": [],
        },
        {
            "node": "worker", "execution": "ex-1", "tool": "Bash", "at": at,
            "command": "mix credo --strict lib/app/small_9.ex", "family": "mix credo",
            "cwd": "", "exit_code": 1, "error": "again", "paths": ["lib/app/small_9.ex"],
        },
    ]  # fmt: skip


def test_the_files_of_the_failures_and_their_resolutions_come_first(tmp_path: Path) -> None:
    repo = make_app(tmp_path / "repo", config=True)
    record = record_of(tmp_path, repo, tool_failures=failures(repo))
    name: DiscoveryName = "repository_discovery"
    task = build_discovery(name, record, checkout=Checkout(repo), max_bytes=bound_for(name))
    paths = [f.path for f in task.files]
    # The failures' recorded paths (the most failed on first), the current files their
    # commands name (against the call's folder), then what resolved them.
    assert paths[:4] == [
        "lib/app/small_9.ex",
        "priv/static/assets/app.css",
        "assets/build.js",
        "lib/app/small_8.ex",
    ]
    files = {f.path: f for f in task.files}
    ignored = files["priv/static/assets/app.css"]
    assert ignored.status == "ignored" and not ignored.current and ignored.content is None
    assert whole(files["lib/app/small_9.ex"], repo) and whole(files["assets/build.js"], repo)
    # Then the build and tool configuration of the root, before what the receipts touched.
    config = [p for p in CONFIG if p != "mix.lock"]
    assert set(paths[4 : 4 + len(config)]) == set(config)
    assert "mix.lock" not in paths  # lock files are noise
    for path in config:
        assert whole(files[path], repo), path
    assert paths.index("lib/app/live.ex") > paths.index("mix.exs")
    assert rendered_size(task) <= bound_for(name)


def test_failures_that_name_no_file_or_quote_oddly_and_records_without_failures(
    tmp_path: Path,
) -> None:
    repo = make_app(tmp_path / "repo")
    odd = [
        {"tool": "Bash", "command": "make test", "family": "make test", "exit_code": 2},
        {"tool": "Bash", "command": "mix test 'lib/app/small_3.ex", "family": "mix test"},
    ]  # the first names no file; the second's quote is never closed: words as written
    record = record_of(tmp_path, repo, tool_failures=odd)
    task = build_discovery("repository_discovery", record, checkout=Checkout(repo))
    assert task.files[0].path == "lib/app/small_3.ex"
    plain = build_discovery(
        "repository_discovery", record_of(tmp_path, repo), checkout=Checkout(repo)
    )
    assert {f.path for f in plain.files[:4]} == set(LARGE)


def test_maintenance_shows_the_files_of_the_failures_that_touched_its_lessons(
    tmp_path: Path,
) -> None:
    repo = make_app(tmp_path / "repo")
    touching = {
        "tool": "Bash", "command": "mix credo lib/app/small_1.ex", "family": "mix credo",
        "paths": ["lib/app/small_1.ex"],
        "resolved_by": {"command": "mix format lib/app/small_2.ex", "family": "mix format"},
    }  # fmt: skip
    elsewhere = {
        "tool": "Bash", "command": "mix credo lib/app/small_5.ex", "family": "mix credo",
        "paths": ["lib/app/small_5.ex"],
    }  # fmt: skip
    record = record_of(tmp_path, repo, tool_failures=[elsewhere, touching])
    lesson = repo_lesson(files=("lib/app/small_0.ex",), folders=("lib/app/small_1.ex",))
    task = build_repository_maintenance(record, [lesson], checkout=Checkout(repo))
    paths = [f.path for f in task.files]
    assert paths[:3] == ["lib/app/small_0.ex", "lib/app/small_1.ex", "lib/app/small_2.ex"]
    assert "lib/app/small_5.ex" not in paths


def test_the_prompt_shows_the_task_as_compact_json(tmp_path: Path) -> None:
    repo = make_app(tmp_path / "repo", config=True)
    record = record_of(tmp_path, repo, tool_failures=failures(repo))
    task = build_discovery("repository_discovery", record, checkout=Checkout(repo))
    text = task_text(task)
    assert json.loads(text) == task.to_json() and "\n" not in text.replace("\\n", "")
    prompt = load_prompts().render(task.specialist, task)
    assert text in prompt
    indented = len(task.model_dump_json(indent=2).encode("utf-8"))
    assert indented > 1.1 * rendered_size(task)  # what compact saves, on a task of files


def with_requests(tmp_path: Path, repo: Path, prompts: list[str]) -> RunRecord:
    run = RunBuilder(software_change())
    for n, _ in enumerate(prompts):
        run.visit("worker", {"status": "verified", "output": None, "artifacts": []}, attempt=n + 1)
    exploration(run)
    data = with_graph_hash(run.build())
    data["repository"]["checkout"] = str(repo)
    started = [e["event"] for e in data["events"] if e["event"]["kind"] == "node_started"]
    for event, prompt in zip(started, prompts, strict=True):
        event["input"] = prompt
    data["title"] = prompts[0][:120]
    return write_record(tmp_path, data)


def test_the_users_request_is_shown_whole_not_cut_at_its_title(tmp_path: Path) -> None:
    repo = make_app(tmp_path / "repo")
    request = (
        "Deploying fails: `git push` says the branch has no upstream. Fix the deploy "
        "script so that it pushes with -u origin, then run mix test with the database "
        "up (docker compose up db) and commit; the assets build must run from assets/."
    )
    assert len(request) > 120
    record = with_requests(tmp_path, repo, [request])
    task = build_discovery("repository_discovery", record, checkout=Checkout(repo))
    assert record.title == request[:120]
    [shown] = task.run.requests
    assert (shown.text, shown.truncated, shown.node) == (request, False, "worker")
    assert task.to_json()["run"]["requests"][0]["text"] == request


def test_requests_are_bounded_the_first_and_the_latest_kept(tmp_path: Path) -> None:
    repo = make_app(tmp_path / "repo")
    prompts = [f"turn {n}: " + "x" * 3000 for n in range(10)]
    record = with_requests(tmp_path, repo, prompts)
    limits = TaskLimits(request_bytes=2000, requests_total_bytes=7000)
    task = build_discovery("repository_discovery", record, limits=limits)
    shown = task.run.requests
    assert [r.text.split(":")[0] for r in shown] == ["turn 0", "turn 8", "turn 9"]
    assert all(r.truncated and len(r.text.encode()) == 2000 for r in shown)
    assert task.run.requests_omitted == 7


def test_a_run_whose_executions_carry_no_input_shows_no_requests(tmp_path: Path) -> None:
    repo = make_app(tmp_path / "repo")
    task: DiscoveryTask = build_discovery("repository_discovery", record_of(tmp_path, repo))
    assert task.run.requests == ()
    assert "requests" not in task.to_json()["run"]  # such tasks digest as before


@pytest.mark.asyncio
async def test_the_whole_prompt_stays_within_its_bound_with_failures_and_requests(
    tmp_path: Path, store: SqliteStore
) -> None:
    repo = make_app(tmp_path / "repo", config=True)
    request = "Make the deploy push with -u origin. " * 300  # past `request_bytes`
    record = with_requests(tmp_path, repo, [request, request])
    data = record.model_dump(mode="json", by_alias=True)
    data["tool_failures"] = failures(repo)
    record = write_record(tmp_path, data, "with-failures.json")
    lessons = [repo_lesson(f"L-{n}", files=(SMALL[n],)) for n in range(3)]
    await seed(store, lessons)
    sessions = FakeSessions()
    bound = 32_000  # the discovery prompt alone is ~2 KB longer since it explains `commands`
    report = await run_postmortem(
        record,
        config(timeout_ms=120_000),
        store,
        checkout=Checkout(repo),
        sessions=sessions,
        limits=PostmortemLimits(batch_bytes=bound),
        journal_dir=tmp_path,
        dry_run=True,
    )
    asked = {r.specialist for r in sessions.requests}
    assert "repository_discovery" in asked, report.specialists
    for asked_request in sessions.requests:
        prompt = "\n\n".join(m.content for m in asked_request.messages)
        assert len(prompt.encode("utf-8")) <= bound, asked_request.specialist
    discovery = next(r for r in sessions.requests if r.specialist == "repository_discovery")
    task: Any = discovery.input
    assert task["files"][0]["path"] == "lib/app/small_9.ex" and task["files"][0]["content"]
    assert task["run"]["requests"][0]["truncated"] is True
