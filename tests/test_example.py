"""The bundled example (examples/): its data is current, and the README's flow works."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import REPO_ROOT

from active_memory.cli import main

EXAMPLES = REPO_ROOT / "examples"


def _example(name: str) -> ModuleType:
    """A script of examples/ as a module (they are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


make_checkout = _example("make_checkout").make_checkout
make_run = _example("make_run")
record_answers = _example("record_answers")


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def run_example(work: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env["PYTHONPATH"] = str(REPO_ROOT)  # this checkout's package, whatever is installed
    return subprocess.run(
        [sys.executable, str(EXAMPLES / "run_example.py"), "--work", str(work)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def exported(store: Path) -> dict[str, dict[str, Any]]:
    code, out, err = run_cli("lessons", "export", "--store", str(store))
    assert code == 0, err
    return {line["id"]: line for line in map(json.loads, out.splitlines())}


def test_the_example_flow_publishes_lessons_that_recall_delivers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    done = run_example(work)
    assert done.returncode == 0, done.stderr
    store = work / "state" / "active-memory" / "lessons.sqlite3"
    lessons = exported(store)
    assert lessons["L-1"]["revision"] == 2  # kept
    assert lessons["L-2"]["revision"] == 2 and "stripe_sandbox" in lessons["L-2"]["recommendation"]
    assert lessons["L-4"]["status"] == "retired"
    created = [x for x in lessons.values() if x["id"] not in {"L-1", "L-2", "L-3", "L-4", "L-5"}]
    graph = [x for x in created if x["scope"]["kind"] == "graph"]
    repository = [x for x in created if x["scope"]["kind"] == "repository"]
    assert [x["scope"]["node"] for x in graph] == ["review_repair"]
    assert len(repository) == 1
    assert repository[0]["associations"]["files"] == ["src/checkout/currencies.py"]
    assert repository[0]["evidence"]["run_ids"] == ["run-2026-11-28-e"]

    # A later agent editing the cited file gets the new card first, then the adapted one.
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(work / "state"))
    monkeypatch.delenv("ACTIVE_MEMORY_STORE", raising=False)
    checkout = work / "acme-api"
    call = {
        "tool_name": "Edit",
        "tool_input": {"file_path": str(checkout / "src/checkout/currencies.py")},
    }
    code, out, err = run_cli(
        "recall", "--session", "t-1", "--cwd", str(checkout), json.dumps(call), "--json"
    )
    assert code == 0, err
    cards = [(c["id"], c["revision"], c["match"]) for c in json.loads(out)["cards"]]
    assert cards == [(repository[0]["id"], 1, "file"), ("L-2", 2, "folder")]
    assert "verified: review_repair timed out 2 times" in done.stdout
    assert "Lessons from earlier runs" in done.stdout and "(L-2 r2)" in done.stdout
    assert f"({graph[0]['id']} r1)" in done.stdout  # review_repair's instructions

    # The closing hint's command runs as printed, from where the example ran (the
    # console script by its path unless PATH finds it: README, "Install").
    hint = next(line for line in done.stdout.splitlines() if line.startswith("Done. Explore"))
    command = hint.removeprefix("Done. Explore with ")
    shown = subprocess.run(["/bin/sh", "-c", command], env=dict(os.environ), capture_output=True,
                           text=True, timeout=60, check=False)  # fmt: skip
    assert shown.returncode == 0, (command, shown.stderr)
    assert "History of L-2" in shown.stdout

    again = run_example(work)  # re-created from scratch: the same outcome
    assert again.returncode == 0, again.stderr
    assert exported(store) == lessons


def test_the_example_refuses_to_delete_a_folder_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    done = run_example(tmp_path)
    assert done.returncode != 0 and "was not made by this example" in done.stderr
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_the_scanner_finds_every_kind_of_evidence_in_the_example_run() -> None:
    code, out, _ = run_cli("evidence", str(EXAMPLES / "run.json"), "--json")
    assert code == 0
    items = {item["kind"]: item for item in json.loads(out)["evidence"]}
    assert items["timeout_crash"]["nodes"] == ["review_repair"]
    assert items["timeout_crash"]["count"] == 2
    assert items["rejected_rounds"]["count"] == 2
    assert items["rejected_rounds"]["loop"] == "review_loop"
    exploration = items["exploration"]
    assert exploration["count"] >= 3 and exploration["span_seconds"] >= 300


def test_run_json_is_what_make_run_writes(tmp_path: Path) -> None:
    make_run.main([str(tmp_path / "run.json")])
    assert (tmp_path / "run.json").read_text() == (EXAMPLES / "run.json").read_text(), (
        "examples/run.json is stale: run `python3 examples/make_run.py`"
    )


def test_the_checkout_commit_is_the_run_source_revision(tmp_path: Path) -> None:
    run = json.loads((EXAMPLES / "run.json").read_text())
    assert make_checkout(tmp_path / "acme-api") == run["source"]["revision"]


def test_recordings_match_the_tasks_the_postmortem_builds_today(tmp_path: Path) -> None:
    record_answers.main([str(tmp_path / "recordings.json")])
    fresh = json.loads((tmp_path / "recordings.json").read_text())
    committed = json.loads((EXAMPLES / "recordings.json").read_text())
    assert fresh == committed, (
        "examples/recordings.json is stale (a task builder, the run, the lessons or the "
        "checkout changed): run `python3 examples/record_answers.py`"
    )
