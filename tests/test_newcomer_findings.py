"""What a newcomer hit (issue 29, "Smaller things a newcomer hit"), each pinned: a clear
line that says what to do next, nothing cut, nothing written where it does not belong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from recall_support import GRAPH_HASH, graph_lesson, publish, repository_lesson

from active_memory.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples"
HOOK = Path(sys.executable).with_name("active-memory-hook")
CLI = Path(sys.executable).with_name("active-memory")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(folder))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no claude, no codex
    monkeypatch.setenv("CI", "true")
    for name in ("ACTIVE_MEMORY_STORE", "ACTIVE_MEMORY_RUN_ID", "ACTIVE_MEMORY_GRAPH_HASH"):
        monkeypatch.delenv(name, raising=False)
    return folder


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("active-memory:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_dry_run_without_a_model_says_how_to_look_without_one(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["postmortem", str(EXAMPLE / "run.json"), "--dry-run"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "--replay RECORDINGS.json" in line and "examples/recordings.json" in line
    assert "--show-tasks DIR" in line


def test_the_api_lane_without_its_package_is_one_line(
    state: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # a base install
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-FINDINGSkey0123456789abcdef")
    assert main(["postmortem", str(EXAMPLE / "run.json"), "--lane", "api"]) == 2
    line = one_line(capsys.readouterr().err)
    # This installation's own pip and source (README, "Install"): no index has the package.
    assert f"{sys.executable} -m pip install " in line and "[anthropic]'" in line


def test_mcp_on_a_base_install_names_its_extra(
    state: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    assert main(["mcp"]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"{sys.executable} -m pip install " in line and "[mcp]'" in line


def test_version_is_answered(capsys: pytest.CaptureFixture[str]) -> None:
    from active_memory import __version__

    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out == f"active-memory {__version__}\n"


def test_the_hook_entry_answers_help() -> None:
    done = subprocess.run([str(HOOK), "--help"], capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip
    assert done.returncode == 0 and "usage: active-memory-hook claude|codex" in done.stdout


def test_no_help_text_cites_a_spec_that_is_not_in_the_repository() -> None:
    texts: list[str] = []
    stack = [build_parser()]
    while stack:
        parser = stack.pop()
        texts.append(parser.format_help())
        for action in parser._actions:
            choices = getattr(action, "choices", None)
            if isinstance(choices, dict):
                stack.extend(choices.values())
    assert len(texts) > 30
    assert [t.splitlines()[0] for t in texts if "SPEC" in t] == []


def test_history_keeps_the_whole_reason_at_80_columns_and_when_piped(
    state: Path, tmp_path: Path
) -> None:
    from rich.console import Console

    from active_memory.commands.render import history_table
    from active_memory.lessons import Author, HistoryEntry

    reason = "tests/checkout/conftest.py renamed the marker to stripe_sandbox; " * 3
    entry = HistoryEntry(
        lesson_id="L-2", revision=2, previous_revision=1, action="adapt", status="active",
        card=None, reason=reason.strip(), at="2026-12-01T10:00:00Z",
        author=Author(specialist="repository_maintenance", run_id="run-2026-11-28-e",
                      model="claude-sonnet-5"),
    )  # fmt: skip
    console = Console(width=80, soft_wrap=False, force_terminal=False)
    with console.capture() as captured:
        console.print(history_table("L-2", [entry]))
    lines = captured.get().splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert all(line.rstrip()[-1] in "┓┃┩│┘" for line in lines[1:])  # the right edge is there
    store = tmp_path / "l.sqlite3"
    publish(store, [repository_lesson("Regenerate the client", "Run make api-client.")])
    piped = subprocess.run([str(CLI), "lessons", "history", "L-1", "--store", str(store)],
                           capture_output=True, text=True, timeout=60, check=False,
                           env={**os.environ, "COLUMNS": "80"})  # fmt: skip
    assert piped.returncode == 0 and all(line.rstrip()[-1] in "┓┃┩│┘" for line in
                                         piped.stdout.splitlines()[1:])  # fmt: skip


def test_evidence_on_a_session_log_points_to_import(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = ROOT / "tests" / "fixtures" / "sessions" / "claude-session.jsonl"
    assert main(["evidence", str(log)]) == 2
    line = one_line(capsys.readouterr().err)
    assert (
        "not a run record" in line
        and f"active-memory import claude|codex|pi|gemini|copilot {log}" in line
    )


def test_settings_takes_a_run_record_and_names_a_bad_file(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["settings", "--config", str(EXAMPLE / "run.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["budgetBytes"]["source"] == "runtime"
    bad = tmp_path / "plan.json"
    bad.write_text('{"harness": "claude"}')
    assert main(["settings", "--config", str(bad)]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"active-memory: {bad}: not a runtime JSON or a run record:")
    assert "more)" in line


def test_a_store_in_a_missing_folder_is_an_error_not_an_empty_list(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lessons", "list", "--store", "/nonexistent/x.sqlite3"]) == 2
    assert "no such folder /nonexistent" in one_line(capsys.readouterr().err)


def test_list_all_includes_retired_lessons_and_sort_labels_its_counts(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import anyio

    from active_memory.lessons import Author, RetireLesson
    from active_memory.store import open_store

    store = tmp_path / "l.sqlite3"
    publish(
        store,
        [repository_lesson("First", "Run make a."), repository_lesson("Second", "Run make b.")],
    )

    async def retire() -> None:
        async with open_store(str(store)) as opened:
            person = Author(specialist="person:test")
            await opened.publish([RetireLesson(id="L-2", base_revision=1, reason="gone",
                                               author=person)])  # fmt: skip

    anyio.run(retire, backend="asyncio")
    assert main(["lessons", "list", "--store", str(store), "--json"]) == 0
    assert [x["id"] for x in json.loads(capsys.readouterr().out)["lessons"]] == ["L-1"]
    assert main(["lessons", "list", "--store", str(store), "--all", "--json"]) == 0
    assert [x["id"] for x in json.loads(capsys.readouterr().out)["lessons"]] == ["L-1", "L-2"]
    assert main(["lessons", "list", "--store", str(store), "--sort", "effectiveness"]) == 0
    first = capsys.readouterr().out.splitlines()[0].split("\t")
    assert first[3:7] == [
        "runs_delivered=0", "recurred_when_delivered=0", "runs_touched_not_delivered=0",
        "recurred_when_not_delivered=0",
    ]  # fmt: skip


def test_deferred_list_says_what_deferred_an_imported_lesson(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "l.sqlite3")
    assert main(["lessons", "import", str(EXAMPLE / "lessons.jsonl"), "--store", store]) == 0
    capsys.readouterr()
    assert main(["lessons", "list", "--deferred", "--store", store, "--json"]) == 0
    (lesson,) = json.loads(capsys.readouterr().out)["lessons"]
    deferral = lesson["deferral"]
    assert deferral["reason"] == "deferred by an import" and deferral["action"] == "import"
    assert deferral["age_days"] == 0 and deferral["by"]["specialist"].startswith("person:")


def test_instructions_take_the_short_hash_lessons_list_shows(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "l.sqlite3")
    publish(Path(store), [graph_lesson("Check the plan first")])
    shown = f"{GRAPH_HASH[:12]}…"
    assert main(["instructions", "--graph", shown, "--node", "worker", "--store", store]) == 0
    assert "Check the plan first" in capsys.readouterr().out
    assert main(["instructions", "--graph", "abcd", "--node", "worker", "--store", store]) == 2
    assert "at least 8 characters" in one_line(capsys.readouterr().err)
    assert main(["instructions", "--graph", "0" * 12, "--node", "worker", "--store", store]) == 2
    assert "no graph lesson in the store" in one_line(capsys.readouterr().err)


def test_the_postmortem_names_itself_once_per_progress_line(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "l.sqlite3")
    code = main(["postmortem", str(EXAMPLE / "run.json"), "--replay",
                 str(EXAMPLE / "recordings.json"), "--store", store])  # fmt: skip
    err = capsys.readouterr().err
    assert code in (0, 1) and "postmortem: postmortem:" not in err
    assert "postmortem: publishing" in err


def test_an_export_dir_is_created(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from recall_support import make_checkout

    checkout = make_checkout(tmp_path / "api")
    store = tmp_path / "l.sqlite3"
    publish(store, [repository_lesson("Regenerate the client", "Run make api-client.")])
    monkeypatch.chdir(checkout)
    target = checkout / "docs" / "agents"
    assert main(["lessons", "export", "--format", "agents-md", "--dir", str(target),
                 "--store", str(store)]) == 0  # fmt: skip
    assert "Regenerate the client" in (target / "AGENTS.md").read_text()
    (checkout / "a-file").write_text("x")
    assert main(["lessons", "export", "--format", "agents-md", "--dir",
                 str(checkout / "a-file"), "--store", str(store)]) == 2  # fmt: skip
    assert "is a file, not a folder" in one_line(capsys.readouterr().err)


def test_a_harness_name_with_a_capital_letter_is_the_harness(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = json.dumps({"session_id": "s", "cwd": str(tmp_path), "tool_name": "Read",
                          "tool_input": {"file_path": str(tmp_path / "x")},
                          "hook_event_name": "PreToolUse"})  # fmt: skip
    done = subprocess.run([str(CLI), "hook", "Claude"], input=payload, capture_output=True,
                          text=True, timeout=60, check=False,
                          env={**os.environ, "ZEROSHOT_STATE_DIR": str(state)})  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert not (state / "active-memory" / "recall" / "hook.log").exists()  # answered, no error
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    os.chdir(repo)
    try:
        assert main(["hook", "install", "Claude", "--dry-run"]) == 0
    finally:
        os.chdir(tmp_path)
