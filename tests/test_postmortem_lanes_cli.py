"""`active-memory postmortem --lane …`: the lane from the command or the plan, exit 2 for
an impossible one, and a whole postmortem through the real `claude -p` and `codex exec`
lanes against the fake model server (answering each specialist as the bundled example's
recordings do)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from fakes.harness import codex_config, isolated_home, require_harness
from fakes.model_server import ModelServer, Received, Turn, answer

from active_memory.cli import main

EXAMPLES = REPO_ROOT / "examples"
RUN = EXAMPLES / "run.json"
RECORDINGS = EXAMPLES / "recordings.json"
_SPECIALIST = re.compile(r"You are the (graph|repository) (discovery|maintenance) specialist")


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state dir holding the example's lessons, and a fresh copy of its checkout."""
    import importlib.util

    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("ACTIVE_MEMORY_STORE", raising=False)
    code, _, err = run_cli("lessons", "import", str(EXAMPLES / "lessons.jsonl"))
    assert code == 0, err
    spec = importlib.util.spec_from_file_location("make_checkout", EXAMPLES / "make_checkout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    checkout = tmp_path / "acme-api"
    module.make_checkout(checkout)
    return checkout


def runtime(tmp_path: Path, harness: str, env: list[str]) -> Path:
    """The example's runtime JSON on another harness, declaring `env` for the worker."""
    document = json.loads(RUN.read_text())["runtime"]
    document["harness"] = harness
    document["provider"] = "anthropic" if harness == "claude" else "openai"
    document["nodes"]["worker"] = {"kind": "agent", "model": "claude-sonnet-5", "env": env}
    if harness == "codex":
        document["nodes"]["worker"]["model"] = "gpt-5.1-codex"
    path = tmp_path / f"runtime-{harness}.json"
    path.write_text(json.dumps(document))
    return path


def recorded_answers(request: Received) -> Turn | None:
    """Each specialist's answer from the example's recordings, found by its prompt."""
    found = _SPECIALIST.search(request.dump())
    if found is None:
        return None
    name = f"{found.group(1)}_{found.group(2)}"
    recordings = json.loads(RECORDINGS.read_text())["recordings"]
    return answer(next(r["answer"] for r in recordings if r["specialist"] == name))


def test_replay_reports_its_lane_in_json(example: Path) -> None:
    code, out, _ = run_cli(
        "postmortem", str(RUN), "--checkout", str(example), "--replay", str(RECORDINGS), "--json"
    )
    assert code == 0
    lane = json.loads(out)["lane"]
    assert (lane["name"], lane["chosen_by"]) == ("replay", "option")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--lane", "replay"], "--lane replay needs --replay RECORDINGS.json"),
        (["--lane", "exchange"], "--lane exchange needs --exchange-dir DIR"),
        (["--lane", "codex", "--replay", str(RECORDINGS)], "which the codex lane does not use"),
        (["--lane", "codex"], "the plan's harness is claude"),
    ],
)
def test_impossible_lane_exits_2_with_one_line(
    example: Path, extra: list[str], message: str
) -> None:
    code, out, err = run_cli("postmortem", str(RUN), "--checkout", str(example), *extra)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_plan_lane_without_the_binary_or_key_exits_2_saying_what_to_do(
    example: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # git stays reachable (the checkout is read); claude does not.
    only_git = tmp_path / "only-git"
    only_git.mkdir()
    git = shutil.which("git")
    assert git is not None
    (only_git / "git").symlink_to(git)
    monkeypatch.setenv("PATH", str(only_git))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ACTIVE_MEMORY_CLAUDE_BIN", raising=False)
    code, _, err = run_cli("postmortem", str(RUN), "--checkout", str(example), "--dry-run")
    assert code == 2
    assert "`claude` was not found on PATH" in err and "--lane api" in err


def test_whole_postmortem_through_the_real_claude_lane(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = require_harness("claude")
    config = runtime(tmp_path, "claude", ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"])
    with ModelServer(respond=recorded_answers) as server:
        for name, value in isolated_home(tmp_path).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-CLILANEkey0123456789")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ACTIVE_MEMORY_CLAUDE_BIN", str(claude))
        code, out, err = run_cli(
            "postmortem", str(RUN), "--checkout", str(example), "--config", str(config),
            "--lane", "claude", "--json",
        )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["lane"]["name"] == "claude" and report["lane"]["executable"] == str(claude)
    statuses = {name: entry["status"] for name, entry in report["specialists"].items()}
    assert statuses == dict.fromkeys(statuses, "reconciled")
    assert report["published"]["created"] >= 1
    asked = {m.group(0) for r in server.model_requests() if (m := _SPECIALIST.search(r.dump()))}
    assert len(asked) == 4  # each specialist asked through claude -p
    requests = sum(e["usage"]["requests"] for e in report["specialists"].values())
    assert requests == len(server.model_requests())


def test_whole_postmortem_through_the_real_codex_lane(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex = require_harness("codex")
    config = runtime(tmp_path, "codex", ["OPENAI_API_KEY"])
    with ModelServer(respond=recorded_answers) as server:
        home = isolated_home(tmp_path)
        for name, value in home.items():
            monkeypatch.setenv(name, value)
        codex_config(Path(home["CODEX_HOME"]), server.openai_url, key_name="OPENAI_API_KEY")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-CLILANEkey0123456789abcdef")
        monkeypatch.setenv("ACTIVE_MEMORY_CODEX_BIN", str(codex))
        # The plan decides: harness codex, and OPENAI_API_KEY is declared, so the plan
        # would take the API; --lane codex keeps it on codex exec.
        code, out, err = run_cli(
            "postmortem", str(RUN), "--checkout", str(example), "--config", str(config),
            "--lane", "codex", "--json",
        )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["lane"]["name"] == "codex"
    statuses = {name: entry["status"] for name, entry in report["specialists"].items()}
    assert statuses == dict.fromkeys(statuses, "reconciled")
    assert report["published"]["created"] >= 1
    assert all(r.route == "/v1/responses" for r in server.model_requests())
