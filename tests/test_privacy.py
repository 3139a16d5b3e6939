"""Private content and excluded paths never reach a run record (docs/privacy.md).

The transcripts are the real captures of `tests/fixtures/sessions/` (Claude Code
2.1.332 and Codex 0.171, see its README) with a `<private>` passage typed into a prompt
and repeated by the agent in its answer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from recall_support import hook_env, publish, repository_lesson
from specialist_builders import make_repo, repo_lesson

from active_memory.checkout.citations import Checkout, PathStatus
from active_memory.cli import main
from active_memory.recall.records import DELIVERIES_FILE, RECEIPTS_FILE, run_dir
from active_memory.runlog.importers.claude import import_transcript
from active_memory.runlog.importers.harness_session import join_hook_records
from active_memory.runlog.importers.privacy import Scrubber, private_passages, without_private
from active_memory.runlog.record import load_run_record
from active_memory.specialists.tasks import build_repository_maintenance

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
CLAUDE_SESSION = "913df1ad-bf35-4229-9a7f-7a3c08238481"
SECRET = "vault pass hunter2-XYZ"
DEMO = "repo:local/home/dev/demo"  # the namespace of the captures' checkout


def test_private_blocks_are_cut_and_unclosed_ones_run_to_the_end() -> None:
    text = "Fix it <private>token A1</private> now <PRIVATE>second\nline</private>."
    assert private_passages(text) == ["token A1", "second\nline"]
    assert without_private(text) == "Fix it  now ."
    assert without_private("deploy <private>key=abc and the rest") == "deploy "


def test_a_repeated_passage_is_masked_everywhere_but_the_graph() -> None:
    scrubber = Scrubber(private=[SECRET, "ab"])  # too short to hunt for: left alone
    record = {
        "run_id": "r",
        "graph": {"name": SECRET},
        "completions": {"1": f"I used {SECRET} as told", "2": "ab"},
        "events": [{"line": f"echo {SECRET}"}],
    }
    out = scrubber.record(record)
    assert out["graph"] == {"name": SECRET}
    assert out["completions"] == {"1": "I used [private] as told", "2": "ab"}
    assert out["events"] == [{"line": "echo [private]"}]


def _claude_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "claude"
    shutil.copytree(FIXTURES / "claude-2.1.332-real", folder)
    main_file = folder / f"{CLAUDE_SESSION}.jsonl"
    text = main_file.read_text(encoding="utf-8")
    assert '"Check git status"' in text and '"Clean tree."' in text
    text = text.replace('"Check git status"', f'"Check git status <private>{SECRET}</private>"')
    text = text.replace('"Clean tree."', f'"Clean tree. Noted: {SECRET}"')
    main_file.write_text(text, encoding="utf-8")
    return main_file


def _codex_copy(tmp_path: Path) -> Path:
    path = tmp_path / "rollout.jsonl"
    text = (FIXTURES / "codex-0.171-real.jsonl").read_text(encoding="utf-8")
    assert '"Run the rounding tests"' in text and "The test module is missing." in text
    text = text.replace(
        '"Run the rounding tests"', f'"Run the rounding tests <private>{SECRET}</private>"'
    )
    text = text.replace("The test module is missing.", f"Missing. I kept {SECRET} aside.")
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_private_text_never_reaches_the_imported_record(
    harness: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in hook_env(tmp_path / "state", tmp_path / "l.sqlite3").items():
        monkeypatch.setenv(key, value)
    source = _claude_copy(tmp_path) if harness == "claude" else _codex_copy(tmp_path)
    assert SECRET in source.read_text(encoding="utf-8")  # the control: it is in the log
    out = tmp_path / "run.json"
    assert main(["import", harness, str(source), "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["runs"][0]["report"]
    written = out.read_text(encoding="utf-8")
    assert "hunter2" not in written and "<private>" not in written
    assert report["private"]["prompts"] == 1
    assert report["private"]["masked"] >= 1  # the answer that repeated it
    record = load_run_record(out)
    assert "[private]" in json.dumps(record.completions)
    # What a specialist is given is built from the record: it cannot hold the text.
    task = build_repository_maintenance(record, [], checkout=None)
    assert "hunter2" not in task.model_dump_json()


def test_excluded_paths_leave_the_record_and_the_report_counts_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    for key, value in hook_env(state, tmp_path / "l.sqlite3").items():
        monkeypatch.setenv(key, value)
    user = state / "active-memory" / "settings.toml"
    user.parent.mkdir(parents=True)
    user.write_text('exclude = ["src/"]\n', encoding="utf-8")
    source = FIXTURES / "claude-2.1.332-real" / f"{CLAUDE_SESSION}.jsonl"
    before = json.dumps(import_transcript(source).runs[0].record["receipts"])
    assert "src/app.py" in before  # the control
    out = tmp_path / "run.json"
    assert main(["import", "claude", str(source), "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["runs"][0]["report"]
    receipts = json.loads(out.read_text(encoding="utf-8"))["receipts"]
    assert all(not p.startswith("src") for r in receipts for p in r["paths"])
    assert "src/app.py" not in out.read_text(encoding="utf-8")
    # The one mention left is the failed `cd src && python3 …`: its command is masked.
    assert report["excluded"] == {"receipts": 2, "paths": 2, "mentions": 1}
    assert [r["paths"] for r in receipts if r["tool"] == "Read"] == [["README.md"]]
    (failure,) = json.loads(out.read_text(encoding="utf-8"))["tool_failures"]
    assert failure["command"] == "cd [excluded] && python3 -c 'import nosuchmodule'"


def test_an_invalid_exclude_stops_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    for key, value in hook_env(state, tmp_path / "l.sqlite3").items():
        monkeypatch.setenv(key, value)
    user = state / "active-memory" / "settings.toml"
    user.parent.mkdir(parents=True)
    user.write_text('exclude = ["../x"]\n', encoding="utf-8")
    out = tmp_path / "run.json"
    source = FIXTURES / "claude-2.1.332-real" / f"{CLAUDE_SESSION}.jsonl"
    assert main(["import", "claude", str(source), "-o", str(out)]) == 2
    assert "exclude: must be a list" in capsys.readouterr().err
    assert not out.exists()


def test_an_excluded_file_is_never_current_nor_read_into_a_task(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / ".active-memory.toml").write_text('exclude = ["api/"]\n', encoding="utf-8")
    verdict = Checkout(repo).check_path("api/schema.json")
    assert verdict.status is PathStatus.EXCLUDED and not verdict.current
    assert "excluded by the exclude setting" in verdict.reason
    assert Checkout(repo, exclude=()).check_path("api/schema.json").current  # control
    source = FIXTURES / "claude-2.1.332-real" / f"{CLAUDE_SESSION}.jsonl"
    record = load_run_record_from(import_transcript(source).runs[0].record, tmp_path)
    lesson = repo_lesson(files=("api/schema.json", "Makefile"))
    task = build_repository_maintenance(record, [lesson], checkout=Checkout(repo))
    files = {f.path: f for f in task.files}
    assert files["api/schema.json"].content is None and not files["api/schema.json"].current
    assert "3.1.0" not in task.model_dump_json()
    assert files["Makefile"].content is not None


def load_run_record_from(data: dict[str, Any], tmp_path: Path) -> Any:
    path = tmp_path / "record.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return load_run_record(path)


# --- sub-agent attribution of hook receipts --------------------------------------------


def _hook_receipts(state: Path, items: list[dict[str, Any]]) -> None:
    folder = Path(run_dir(str(state / "active-memory" / "recall"), f"session:{CLAUDE_SESSION}"))
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"node": None, **item}) for item in items]
    (folder / RECEIPTS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _joined(state: Path, tmp_path: Path) -> list[dict[str, Any]]:
    source = FIXTURES / "claude-2.1.332-real" / f"{CLAUDE_SESSION}.jsonl"
    record = import_transcript(source).runs[0].record
    env = hook_env(state, tmp_path / "l.sqlite3")
    return list(join_hook_records(record, "claude", env=env)["receipts"])


def test_hook_receipts_that_name_their_agent_go_to_its_node(tmp_path: Path) -> None:
    state = tmp_path / "state"
    at = "2026-12-01T14:50:40.%03dZ"
    _hook_receipts(
        state,
        [
            {"tool": "Read", "paths": ["README.md"], "at": at % 241},
            {"tool": "Bash", "paths": ["src"], "at": at % 322, "agent": "aafae932a20d78975"},
        ],
    )
    nodes = [(r["node"], r["tool"]) for r in _joined(state, tmp_path)]
    assert ("worker/agent-aafae932a20d78975", "Bash") in nodes
    assert ("worker", "Read") in nodes


def test_without_agent_ids_the_transcripts_sub_agent_receipts_stay(tmp_path: Path) -> None:
    # A client that does not send agent_id: every hook receipt says `worker`; the
    # transcript's sub-agent receipts replace their twins instead of being erased.
    state = tmp_path / "state"
    at = "2026-12-01T14:50:40.%03dZ"
    _hook_receipts(
        state,
        [
            {"tool": "Read", "paths": ["README.md"], "at": at % 241},
            {"tool": "Bash", "paths": ["src"], "at": at % 322},
            {"tool": "Bash", "paths": [], "at": at % 960},
        ],
    )
    joined = _joined(state, tmp_path)
    agent = [r for r in joined if r["node"].startswith("worker/agent-")]
    assert [(r["tool"], r["paths"]) for r in agent] == [("Bash", ["src"]), ("Bash", [])]
    # No call counted twice: three hook calls, three receipts for the hooked tools.
    assert len([r for r in joined if r["tool"] in {"Read", "Bash"}]) == 3


SESSIONS = {"claude": CLAUDE_SESSION, "codex": "01a23216-7567-7653-bda2-55270611b8e8"}


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_the_specialists_captured_tasks_never_hold_private_text(
    harness: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `postmortem --show-tasks` writes exactly what each specialist would be sent. The
    # private passage is in the session's first prompt (the run's title) and repeated in
    # an answer; a delivered lesson makes maintenance ask, with the run's essentials.
    state, store = tmp_path / "state", tmp_path / "l.sqlite3"
    for key, value in hook_env(state, store).items():
        monkeypatch.setenv(key, value)
    source = _claude_copy(tmp_path) if harness == "claude" else _codex_copy(tmp_path)
    if harness == "claude":
        first = '"Survey this repository with a sub-agent'
        text = source.read_text(encoding="utf-8")
        source.write_text(
            text.replace(first + '"', first + f' <private>{SECRET}</private>"'), "utf-8"
        )
    receipt = publish(
        store,
        [repository_lesson("Read the readme first", files=["README.md"], namespace=DEMO)],
    )
    session = SESSIONS[harness]
    folder = Path(run_dir(str(state / "active-memory" / "recall"), f"session:{session}"))
    folder.mkdir(parents=True)
    delivery = {"session": session, "lesson": receipt.created[0][0], "revision": 1}
    (folder / DELIVERIES_FILE).write_text(json.dumps(delivery) + "\n", encoding="utf-8")
    record = tmp_path / "run.json"
    assert main(["import", harness, str(source), "-o", str(record)]) == 0
    provider = "anthropic" if harness == "claude" else "openai"
    runtime = {
        "harness": harness,
        "provider": provider,
        "size": "small",
        "nodes": {"worker": {"kind": "agent", "model": "m"}},
    }
    config = tmp_path / "runtime.json"
    config.write_text(json.dumps(runtime), encoding="utf-8")
    shown = tmp_path / "tasks"
    code = main(["postmortem", str(record), "--config", str(config), "--show-tasks", str(shown)])
    err = capsys.readouterr().err
    assert code in (0, 1), err
    files = [path for path in shown.rglob("*") if path.is_file()]
    assert files, err
    text = "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in files)
    assert "Read the readme first" in text  # the control: the task was captured
    title = "Survey this repository" if harness == "claude" else "Run the rounding tests"
    assert title in text  # with the prompt that held the passage, cut
    assert "hunter2" not in text and "<private>" not in text
