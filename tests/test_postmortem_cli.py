"""`active-memory postmortem RUN.json`: report, dry run, exit codes, signals.

Runs against the bundled example (examples/run.json, its recordings and a fresh copy of
its checkout), in-process through `cli.main`, or in a subprocess for signals.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO_ROOT

from active_memory.cli import main

EXAMPLES = REPO_ROOT / "examples"
RUN = EXAMPLES / "run.json"
RECORDINGS = EXAMPLES / "recordings.json"


def _example(name: str) -> ModuleType:
    """A script of examples/ as a module (they are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


make_checkout = _example("make_checkout").make_checkout


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A zeroshot state dir of the test's own, holding the example's earlier lessons."""
    directory = tmp_path / "state"
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(directory))
    for name in list(os.environ):
        if name.startswith("ACTIVE_MEMORY_"):
            monkeypatch.delenv(name)
    code, _, err = run_cli("lessons", "import", str(EXAMPLES / "lessons.jsonl"))
    assert code == 0, err
    return directory


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    directory = tmp_path / "acme-api"
    make_checkout(directory)
    return directory


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def postmortem(checkout: Path, *extra: str, run: Path = RUN) -> tuple[int, str, str]:
    return run_cli(
        "postmortem", str(run), "--checkout", str(checkout), "--replay", str(RECORDINGS), *extra
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` with its bytes."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_json_report_is_the_spec_document_and_progress_goes_to_stderr(
    state: Path, checkout: Path
) -> None:
    code, out, err = postmortem(checkout, "--json")
    assert code == 0, err
    report = json.loads(out)  # exactly one JSON document on stdout
    assert {"run_id", "outcome", "dry_run", "specialists", "published", "conflicts"} <= set(report)
    assert (report["run_id"], report["outcome"], report["dry_run"]) == (
        "run-2026-11-28-e",
        "succeeded",
        False,
    )
    assert list(report["specialists"]) == [
        "graph_maintenance",
        "repository_maintenance",
        "graph_discovery",
        "repository_discovery",
    ]
    assert {s["status"] for s in report["specialists"].values()} == {"reconciled"}
    # Its second lesson cited a file the checkout does not have: the recorded repair
    # turn answered without it (SPEC §6), and replay replayed that repair.
    discovery = report["specialists"]["repository_discovery"]
    assert discovery["rejected"] == [] and discovery["repair_turns"] == 1
    assert discovery["usage"]["requests"] == 2
    assert "repair_turns" not in report["specialists"]["repository_maintenance"]
    assert report["published"] == {
        "created": 2,
        "adapted": 1,
        "retired": 1,
        "deferred": 0,
        "kept": 1,
        "proposed": 0,
    }
    assert "postmortem: repository_discovery: finished: reconciled (at " in err
    # Every progress line says how long the postmortem has run.
    assert all(re.search(r" \(at \d+\.\ds\)$", line) for line in err.splitlines() if line)


def test_table_shows_decisions_proposals_and_what_was_published(
    state: Path, checkout: Path
) -> None:
    code, out, _ = postmortem(checkout)
    assert code == 0
    for expected in (
        "Maintenance decisions",
        "L-2 r1",
        "adapt",
        "Discovery proposals",
        "accepted",
        "1 repair turn",
        "Published",
        "L-7 r1",
        "2 created, 1 adapted, 1 retired, 0 deferred; 1 kept",
    ):
        assert expected in out, expected


def test_dry_run_writes_nothing_anywhere(state: Path, checkout: Path) -> None:
    before = snapshot(state)
    code, out, err = postmortem(checkout, "--dry-run", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["dry_run"] is True and report["published"]["created"] == 2
    assert {m["action"] for m in report["mutations"]} == {"create", "adapt", "retire"}
    assert snapshot(state) == before  # the store's bytes, and no journal or ledger either
    code, out, _ = postmortem(checkout, "--dry-run")
    assert code == 0 and "Would publish (dry run)" in out
    assert snapshot(state) == before


def test_a_store_given_with_store_keeps_its_journal_beside_it(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere" / "lessons.sqlite3"
    code, _, err = run_cli("lessons", "import", str(EXAMPLES / "lessons.jsonl"),
                           "--store", str(elsewhere))  # fmt: skip
    assert code == 0, err
    before = snapshot(state)
    code, _, err = postmortem(checkout, "--store", str(elsewhere))
    assert code == 0, err
    assert snapshot(state) == before  # the state folder's journal is not this store's
    [entry] = (elsewhere.parent / "postmortems").iterdir()
    assert json.loads(entry.read_text())["state"] == "finished"
    code, out, err = run_cli("postmortems", "--store", str(elsewhere), "--json")
    assert code == 0, err
    listing = json.loads(out)
    assert listing["journal"] == str(elsewhere.parent / "postmortems")
    assert [row["state"] for row in listing["postmortems"]] == ["finished"]
    code, out, _ = run_cli("postmortems", "--json")  # the default store's journal: empty
    assert code == 0 and json.loads(out)["postmortems"] == []


def test_dry_run_without_a_store_creates_none(
    tmp_path: Path, checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "empty"))
    monkeypatch.delenv("ACTIVE_MEMORY_STORE", raising=False)
    code, out, err = postmortem(checkout, "--dry-run", "--json")
    assert code == 0, err
    report = json.loads(out)
    # Nothing was delivered from an empty store: maintenance has nothing to decide.
    assert report["specialists"]["repository_maintenance"]["manifest"] == 0
    assert report["published"]["created"] == 2
    assert not (tmp_path / "empty").exists()


def test_malformed_run_record_exits_2(state: Path, checkout: Path, tmp_path: Path) -> None:
    data = json.loads(RUN.read_text())
    data["events"][2]["event"]["completion"]["outcome"]["status"] = "exploded"
    before = snapshot(state)
    code, _, err = postmortem(checkout, run=write_json(tmp_path / "bad.json", data))
    assert code == 2 and "events[2].event.completion.outcome" in err
    assert snapshot(state) == before


def test_missing_recordings_file_exits_2(state: Path, checkout: Path, tmp_path: Path) -> None:
    code, _, err = run_cli(
        "postmortem", str(RUN), "--checkout", str(checkout), "--replay", str(tmp_path / "no.json")
    )
    assert code == 2 and "no such recordings file" in err


def test_bad_config_exits_2_naming_the_json_path(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    config = json.loads((REPO_ROOT / "config.example.json").read_text())
    config["activeMemory"]["budgetBytes"] = 0
    path = write_json(tmp_path / "config.json", config)
    code, _, err = postmortem(checkout, "--config", str(path))
    assert code == 2 and "activeMemory.budgetBytes" in err


def test_config_overrides_the_record_runtime(state: Path, checkout: Path, tmp_path: Path) -> None:
    config = json.loads((REPO_ROOT / "config.example.json").read_text())
    config["activeMemory"]["graph"] = False
    path = write_json(tmp_path / "config.json", config)
    code, out, err = postmortem(checkout, "--config", str(path), "--json")
    assert code == 0, err
    statuses = {k: v["status"] for k, v in json.loads(out)["specialists"].items()}
    assert statuses["graph_maintenance"] == statuses["graph_discovery"] == "disabled"
    assert statuses["repository_discovery"] == "reconciled"


def test_a_graph_that_is_not_the_run_graph_exits_2(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    graph = json.loads((REPO_ROOT / "software-change.graph.json").read_text())
    graph["root"]["children"][0]["timeoutMs"] = 60_000
    path = write_json(tmp_path / "graph.json", graph)
    code, _, err = postmortem(checkout, "--graph", str(path))
    assert code == 2 and "is not the run's graph.hash" in err


def test_a_record_without_graph_ir_runs_with_the_authored_graph(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    data = json.loads(RUN.read_text())
    del data["graph"]["ir"]
    bare = write_json(tmp_path / "bare.json", data)
    code, _, err = postmortem(checkout, "--dry-run", run=bare)
    assert code == 2 and "graph.ir" in err and "--graph" in err
    graph = str(REPO_ROOT / "software-change.graph.json")
    code, out, err = postmortem(checkout, "--dry-run", "--json", "--graph", graph, run=bare)
    assert code == 0, err
    assert json.loads(out)["specialists"]["graph_discovery"]["accepted"][0]["scope"]["node"] == (
        "review_repair"
    )


def test_a_checkout_that_is_not_git_exits_2(state: Path, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    code, _, err = postmortem(tmp_path / "plain")
    assert code == 2 and "not a git checkout" in err


def test_a_store_that_is_not_ours_exits_2_and_stays_as_it_was(
    checkout: Path, tmp_path: Path
) -> None:
    store = tmp_path / "notes.sqlite3"
    store.write_text("not a database")
    code, out, err = postmortem(checkout, "--store", str(store))
    assert code == 2 and "is not a SQLite database" in err and "Traceback" not in err
    assert out == "" and store.read_text() == "not a database"


def test_missing_recording_fails_the_postmortem_with_exit_1(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    empty = write_json(tmp_path / "rec.json", {"schema": "active-memory/recordings@1"})
    before = snapshot(state / "active-memory")
    code, out, _ = run_cli(
        "postmortem", str(RUN), "--checkout", str(checkout), "--replay", str(empty), "--json"
    )
    assert code == 1
    report = json.loads(out)
    assert {s["status"] for s in report["specialists"].values()} == {"failed"}
    assert "no recorded answer" in report["specialists"]["graph_discovery"]["reason"]
    assert report["published"]["created"] == 0
    store = "lessons.sqlite3"
    assert snapshot(state / "active-memory")[store] == before[store]


# --- signals (a subprocess whose specialists never answer) ---------------------------

DRIVER = """
import argparse, sys
import anyio
from active_memory.commands import postmortem
from active_memory.specialists.providers.function import FunctionSession

shield = sys.argv[1] == "shielded"

async def hang(request):
    print("ASKED", file=sys.stderr, flush=True)
    with anyio.CancelScope(shield=shield):
        await anyio.sleep(3600)

def sessions(specialist, *, deadline):
    return FunctionSession(specialist, hang, deadline=deadline)

args = argparse.Namespace(
    run=sys.argv[2], config=None, graph=None, checkout=sys.argv[3], replay=None,
    dry_run=False, json=True, store=None,
)
sys.exit(postmortem.run_command(args, sessions=sessions))
"""


def start_hanging(tmp_path: Path, state: Path, checkout: Path, mode: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env.update(ZEROSHOT_STATE_DIR=str(state), PYTHONPATH=str(REPO_ROOT))
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    child = subprocess.Popen(
        [sys.executable, str(driver), mode, str(RUN), str(checkout)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None
    for line in child.stderr:  # wait until a specialist is waiting on its provider
        if "ASKED" in line:
            return child
    raise AssertionError(f"the postmortem never asked a provider (exit {child.wait()})")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_postmortem_and_publishes_nothing(
    state: Path, checkout: Path, tmp_path: Path, signum: int, code: int
) -> None:
    store = state / "active-memory" / "lessons.sqlite3"
    before = store.read_bytes()
    child = start_hanging(tmp_path, state, checkout, "plain")
    started = time.monotonic()
    child.send_signal(signum)
    out, err = child.communicate(timeout=30)
    assert child.returncode == code, err
    assert time.monotonic() - started < 5
    assert out == "" and "nothing was written" in err
    assert store.read_bytes() == before


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_second_signal_exits_at_once(state: Path, checkout: Path, tmp_path: Path) -> None:
    store = state / "active-memory" / "lessons.sqlite3"
    before = store.read_bytes()
    # A provider that ignores cancellation: the first signal cannot stop it in time.
    child = start_hanging(tmp_path, state, checkout, "shielded")
    child.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert child.poll() is None
    started = time.monotonic()
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 143 and "nothing was published" in err
    assert time.monotonic() - started < 2
    assert store.read_bytes() == before
