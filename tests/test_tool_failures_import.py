"""`tool_failures` as the importers read them (SPEC §3 "Tool failures").

Ground truth is read from each log with the plainest reading the harness allows (every
`is_error` tool result of a Claude Code transcript that is not a person's "no", an
interruption or a cancelled sibling; every Codex output with a non-zero exit code or an
error flag), independently of the importer. Real logs: the public Claude Code 2.1
transcripts of marot/spotter (tests/fixtures/spotter/README.md), the captures of the real
binaries under tests/fixtures/sessions/ and tests/fixtures/harness_sessions/, and the
learning sequences recorded with them (tests/fixtures/learning/*/transcripts.tar.xz).
"""

from __future__ import annotations

import json
import re
import tarfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from active_memory.runlog.importers.claude import import_transcript
from active_memory.runlog.importers.codex import import_rollout
from active_memory.runlog.importers.harness_session import import_session_log
from active_memory.runlog.record import parse_run_record

FIXTURES = Path(__file__).parent / "fixtures"
SESSIONS = FIXTURES / "sessions"
SPOTTER = FIXTURES / "spotter" / "transcripts.tar.xz"
CLAUDE_REAL = (
    SESSIONS / "claude-2.1.332-failures-real" / "c5a7db27-940a-4514-93dc-834cccb28f0c.jsonl"
)
CODEX_REAL = SESSIONS / "codex-0.171-failures-real.jsonl"
SPOTTER_SESSIONS = (
    "258c7280-ae70-4798-800f-63464d01a85d",
    "4d5611e5-241a-462a-8d15-5122611a9569",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04",
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46",
)
_NOT_FAILURES = (
    "The user doesn't want to",
    "[Request interrupted by user",
    "Sibling tool call errored",
)


@pytest.fixture(scope="module")
def spotter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spotter transcripts, unpacked (main files beside their `subagents/` folders)."""
    folder = tmp_path_factory.mktemp("spotter")
    with tarfile.open(SPOTTER, "r:xz") as archive:
        archive.extractall(folder, filter="data")
    return folder


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _claude_truth(transcript: Path) -> list[datetime]:
    files = [transcript]
    folder = transcript.parent / transcript.stem / "subagents"
    files += [p for p in sorted(folder.glob("agent-*.jsonl")) if "acompact" not in p.name]
    found: list[datetime] = []
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            message = entry.get("message") if isinstance(entry, dict) else None
            blocks = message.get("content") if isinstance(message, dict) else None
            for block in blocks if isinstance(blocks, list) else []:
                if not (isinstance(block, dict) and block.get("type") == "tool_result"):
                    continue
                if block.get("is_error") is not True:
                    continue
                content = block.get("content")
                if isinstance(content, list):
                    content = "\n".join(str(c.get("text", "")) for c in content)
                text = str(content).removeprefix("<tool_use_error>")
                if not text.startswith(_NOT_FAILURES):
                    found.append(_when(entry["timestamp"]))
    return sorted(found)


_CODEX_EXIT = re.compile(r"(?:Process exited with code|Exit code:) (-?\d+)")


def _codex_truth(rollout: Path) -> list[datetime]:
    commands: dict[str, str] = {}
    found: list[datetime] = []
    for line in rollout.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        payload = entry.get("payload", entry) if isinstance(entry, dict) else {}
        if not isinstance(payload, dict):
            continue
        if payload.get("type") == "function_call":
            commands[str(payload.get("call_id"))] = str(payload.get("arguments"))
        if not str(payload.get("type", "")).endswith("_output"):
            continue
        output = payload.get("output")
        text = output if isinstance(output, str) else json.dumps(output)
        exit_code: int | None = None
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            exit_code = (decoded.get("metadata") or {}).get("exit_code")
            if decoded.get("isError") is True:
                exit_code = exit_code or -1
        if exit_code is None and (match := _CODEX_EXIT.search(text)):
            exit_code = int(match.group(1))
        if exit_code is None and text.startswith("failed to "):
            exit_code = -1
        command = commands.get(str(payload.get("call_id")), "")
        if exit_code == 1 and re.search(r'"(?:rg|grep) ', command):
            continue  # no match: an answer, not a failure
        if exit_code not in (None, 0):
            found.append(_when(entry["timestamp"]) if "timestamp" in entry else datetime.min)
    return sorted(found)


def _claude_transcripts(spotter: Path) -> list[Path]:
    return [
        SESSIONS / "claude-session.jsonl",
        SESSIONS / "claude-cut-off.jsonl",
        *sorted((SESSIONS / "claude-1.0-inline").glob("*.jsonl")),
        *sorted((SESSIONS / "claude-2.1-subagents").glob("*.jsonl")),
        *sorted((SESSIONS / "claude-2.1.332-real").glob("*.jsonl")),
        CLAUDE_REAL,
        *(spotter / f"{session}.jsonl" for session in SPOTTER_SESSIONS),
        spotter / "short.jsonl",
    ]


def _failures(record: dict[str, Any]) -> list[dict[str, Any]]:
    failures: list[dict[str, Any]] = record["tool_failures"]
    return failures


def test_every_failed_call_of_every_claude_transcript_is_a_tool_failure(spotter: Path) -> None:
    checked = 0
    for transcript in _claude_transcripts(spotter):
        record = import_transcript(transcript).runs[0].record
        failures = _failures(record)
        truth = _claude_truth(transcript)
        assert sorted(_when(f["at"]) for f in failures) == truth, transcript.name
        for failure in failures:
            assert failure["family"] and failure["error"], (transcript.name, failure)
        parse_run_record(record)  # the record as written is valid
        checked += len(truth)
    assert checked >= 60  # the fixtures hold that many real failed calls


@pytest.mark.parametrize(
    "rollout",
    [
        "codex-rollout.jsonl",
        "codex-0.77.jsonl",
        "codex-early.jsonl",
        "codex-0.171-real.jsonl",
        "codex-0.171-failures-real.jsonl",
    ],
)
def test_every_failed_call_of_every_codex_rollout_is_a_tool_failure(rollout: str) -> None:
    record = import_rollout(SESSIONS / rollout).runs[0].record
    failures = _failures(record)
    times = [_when(f["at"]) if "at" in f else datetime.min for f in failures]
    assert sorted(times) == _codex_truth(SESSIONS / rollout)
    assert all(f["family"] and f["error"] for f in failures), failures


LEARNING = {
    # the learning sequences recorded with the real binaries, and their harness
    "calc-env": "claude",
    "handbook-push": "claude",
    "web-build": "codex",
}


@pytest.mark.parametrize("sequence", sorted(LEARNING))
def test_every_failed_call_of_the_recorded_learning_sessions_is_a_tool_failure(
    sequence: str, tmp_path: Path
) -> None:
    with tarfile.open(FIXTURES / "learning" / sequence / "transcripts.tar.xz", "r:xz") as archive:
        archive.extractall(tmp_path, filter="data")
    logs = sorted(tmp_path.glob("*.jsonl"))
    checked = 0
    for log in logs:
        if LEARNING[sequence] == "claude":
            failures = _failures(import_transcript(log).runs[0].record)
            truth = _claude_truth(log)
        else:
            failures = _failures(import_rollout(log).runs[0].record)
            truth = _codex_truth(log)
        assert sorted(_when(f["at"]) for f in failures) == truth, log.name
        assert all(f["family"] and f["error"] for f in failures), failures
        checked += len(truth)
    assert len(logs) == 4 and checked >= 4


# --- per tool family, on the sessions the real binaries wrote --------------------------


def _real(harness: str) -> list[dict[str, Any]]:
    if harness == "claude":
        return _failures(import_transcript(CLAUDE_REAL).runs[0].record)
    return _failures(import_rollout(CODEX_REAL).runs[0].record)


def _of(failures: list[dict[str, Any]], family: str) -> list[dict[str, Any]]:
    return [f for f in failures if f["family"] == family]


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_git_failures_name_the_ignored_path_and_what_resolved_it(harness: str) -> None:
    (added,) = _of(_real(harness), "git add")
    assert added["command"] == "git add build/app.css"
    assert added["exit_code"] == 1
    assert added["error"] == (
        "The following paths are ignored by one of your .gitignore files: build"
    )
    assert added["paths"] == ["build/app.css"]
    assert added["resolved_by"]["command"] == "git add -f build/app.css"
    assert added["resolved_by"]["family"] == "git add"


def test_a_git_commit_refused_by_a_hook_and_a_push_refused_by_a_rule_are_failures() -> None:
    failures = _real("claude")
    commits = _of(failures, "git commit")
    assert len(commits) == 2
    for commit in commits:
        assert commit["command"] == "git add -A && git commit -m 'fix: add'"
        assert "exit_code" not in commit  # refused before it ran
        assert commit["error"].startswith("PreToolUse:Bash hook error:")
        assert "Pre-commit validation failed: [FORMAT] Code is not formatted." in commit["error"]
    (push,) = _of(failures, "git push")
    assert push["error"] == "Permission to use Bash with command git push has been denied."


def test_codex_git_push_without_a_remote() -> None:
    pushes = _of(_real("codex"), "git push")
    assert [p["exit_code"] for p in pushes] == [128, 128]
    assert {p["error"] for p in pushes} == {"fatal: No configured push destination."}


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_pytest_failures_quote_the_failed_test_and_resolve_on_the_green_run(harness: str) -> None:
    runs = _of(_real(harness), "pytest")
    assert [r["error"] for r in runs] == [
        "FAILED test_calc.py::test_add - assert 0 == 4",
        "FAILED test_calc.py::test_add - assert 5 == 4",
        "FAILED test_calc.py::test_add - assert 5 == 4",
    ]
    assert {r["exit_code"] for r in runs} == {1}
    assert all(r["paths"] == ["test_calc.py"] for r in runs)
    green = {json.dumps(r["resolved_by"], sort_keys=True) for r in runs}
    assert len(green) == 1  # the one green run resolves all three
    resolved = runs[0]["resolved_by"]
    assert resolved["family"] == "pytest" and resolved["edited"] is True


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_npm_failure_quotes_npm_s_error_not_its_log_lines(harness: str) -> None:
    runs = _of(_real(harness), "npm run biuld")
    assert len(runs) == 2
    assert {r["error"] for r in runs} == {'npm error Missing script: "biuld"'}
    assert {r["exit_code"] for r in runs} == {1}


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_compiler_failure_quotes_the_error_with_its_location(harness: str) -> None:
    runs = _of(_real(harness), "gcc")
    assert len(runs) == 2
    assert {r["error"] for r in runs} == {
        "bad.c:2:10: error: ‘y’ undeclared (first use in this function)"  # noqa: RUF001
    }
    assert runs[0]["paths"] == ["bad.c", "bad.o"]


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_a_command_killed_by_timeout_is_a_timed_out_failure(harness: str) -> None:
    runs = _of(_real(harness), "sleep")
    assert [(r["command"], r["exit_code"], r["error"]) for r in runs] == [
        ("timeout 1 sleep 3", 124, "timed out")
    ] * 3


def test_a_file_tool_failure_is_its_tool_and_path() -> None:
    (edit,) = _of(_real("claude"), "Edit calc.py")
    assert edit["command"] == "calc.py"
    assert edit["error"] == "String to replace not found in file."


def test_each_typed_prompt_is_kept_as_the_turn_input() -> None:
    record = import_transcript(CLAUDE_REAL).runs[0].record
    inputs = [e["event"]["input"] for e in record["events"] if e["event"]["kind"] == "node_started"]
    assert inputs == ["Make the checks pass, then commit and push"]


# --- Pi, Gemini CLI, Copilot CLI (logs written by the real binaries) --------------------


@pytest.mark.parametrize(
    ("harness", "name", "shell", "read"),
    [
        ("pi", "pi-0.73.1-failures.jsonl", "bash", "read missing.py"),
        ("gemini", "gemini-0.61.0-failures.jsonl", "run_shell_command", "read_file missing.py"),
        ("copilot", "copilot-1.0.102-failures.jsonl", "bash", "view missing.py"),
    ],
)
def test_the_other_harnesses_record_a_failed_command_and_a_failed_read(
    harness: str, name: str, shell: str, read: str
) -> None:
    record = import_session_log(harness, FIXTURES / "harness_sessions" / name).runs[0].record
    command, missing = _failures(record)
    assert (command["tool"], command["family"], command["exit_code"]) == (shell, "git add", 1)
    assert command["error"] == (
        "The following paths are ignored by one of your .gitignore files: build"
    )
    assert missing["family"] == read and missing["paths"] == ["missing.py"]
    assert missing["error"]
