"""The importers on session logs written by the real `claude` and `codex` binaries.

Each binary runs in an isolated HOME against the scripted model server on loopback
(tests/fakes/model_server.py). What the server served is the ground truth: every tool
call it scripted is one call in the session log, attributed to the main agent or to the
sub-agent whose request took it. Without a binary these tests skip with the reason;
in CI (CI=true) they fail instead (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from active_memory.errors import InvalidRecord
from active_memory.runlog.importers.claude import import_transcript
from active_memory.runlog.importers.codex import import_rollout
from active_memory.runlog.record import parse_run_record

# The scripted server and the harness locator are shared test infrastructure; they are
# reached through importorskip so that a checkout without them says so (a skip locally,
# a failure in CI).
model_server = pytest.importorskip(
    "fakes.model_server", reason="needs the scripted model server (tests/fakes/model_server.py)"
)
wire = pytest.importorskip("fakes.model_wire", reason="needs tests/fakes/model_wire.py")
harness = pytest.importorskip("fakes.harness", reason="needs tests/fakes/harness.py")
text, tool, Turn, ToolCall = wire.text, wire.tool, wire.Turn, wire.ToolCall

SUB_PROMPT = "Read README.md and src/app.py and report what they say."


def _workspace(root: Path) -> Path:
    work = root / "work"
    (work / "src").mkdir(parents=True)
    (work / "README.md").write_text("hello\n")
    (work / "src" / "app.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    return work


def _first_user_text(received: Any) -> str:
    body = received.body if isinstance(received.body, dict) else {}
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            return json.dumps(message.get("content"))
    return ""


def _served_calls(served: list[tuple[Any, Any]]) -> tuple[int, int]:
    """(all tool calls served, those served to the sub-agent's requests)."""
    total = sub = 0
    for received, turn in served:
        calls = sum(1 for part in turn.parts if isinstance(part, ToolCall))
        total += calls
        if SUB_PROMPT in _first_user_text(received):
            sub += calls
    return total, sub


def _times(record: dict[str, Any]) -> list[datetime]:
    return [datetime.fromisoformat(e["at"]) for e in record["events"] if "at" in e]


def test_a_real_claude_session_with_a_subagent_is_imported_whole(tmp_path: Path) -> None:
    claude = harness.require_harness("claude")
    work = _workspace(tmp_path)
    first = [
        tool(
            "Agent",
            {"description": "Survey", "prompt": SUB_PROMPT, "subagent_type": "general-purpose"},
            say="I'll ask a sub-agent.",
        ),
        tool("Read", {"file_path": str(work / "README.md")}),
        tool("Bash", {"command": "cd src && python3 -c 'import nosuchmodule'", "description": "x"}),
        tool("Read", {"file_path": "src/app.py"}),
        text("README says hello; src/app.py sets x = 1."),
        text("Done."),
    ]
    served: list[tuple[Any, Any]] = []

    def run(server: Any, *args: str) -> dict[str, Any]:
        env = harness.claude_environment(tmp_path, server.url, "sk-fake") | {"IS_SANDBOX": "1"}
        done = subprocess.run(
            [str(claude), "-p", *args, "--permission-mode", "bypassPermissions",
             "--output-format", "json"],
            cwd=work, env=env, capture_output=True, text=True, timeout=300, check=True,
        )  # fmt: skip
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    no_tools = lambda received: not received.tool_names()  # noqa: E731
    with model_server.ModelServer(script=first, default=text("ok"), side=no_tools) as server:
        session = run(server, "Survey this repository with a sub-agent")["session_id"]
        served += server.served
    second = [tool("Bash", {"command": "git status", "description": "status"}), text("Clean.")]
    summary = text("<summary>The user surveyed the repository.</summary>")
    with model_server.ModelServer(script=second, default=summary, side=no_tools) as server:
        run(server, "Check git status", "--resume", session)
        run(server, "/compact", "--resume", session)
        served += server.served

    projects = tmp_path / "home" / ".claude" / "projects"
    (transcript,) = projects.glob(f"*/{session}.jsonl")
    result = import_transcript(transcript)
    report = result.runs[0].report
    assert report is not None
    total, by_sub = _served_calls(served)
    assert report["tool_calls"] == total
    agents = {k: v for k, v in report["tool_calls_per_node"].items() if k != "worker"}
    assert report["subagents_joined"] == 1 and sum(agents.values()) == by_sub > 0
    assert report["turns"] == 2  # two prompts typed; `/compact` is not one
    record = result.runs[0].record
    assert _times(record) == sorted(_times(record))
    assert parse_run_record(record).outcome == "succeeded"
    (agent_file,) = transcript.parent.glob(f"{session}/subagents/agent-*.jsonl")
    with pytest.raises(InvalidRecord, match="import the parent transcript"):
        import_transcript(agent_file)


def _codex(tmp_path: Path, script: list[Any], prompt: str, *, kill_after: float | None) -> Path:
    codex = harness.require_harness("codex")
    work = _workspace(tmp_path)
    env = {
        "HOME": str(tmp_path / "home"),
        "CODEX_HOME": str(tmp_path / "home" / ".codex"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "FAKE_OPENAI_KEY": "sk-fake",
    }
    Path(env["CODEX_HOME"]).mkdir(parents=True)
    with model_server.ModelServer(script=script, default=text("ok")) as server:
        harness.codex_config(Path(env["CODEX_HOME"]), server.openai_url)
        command = [str(codex), "exec", "--skip-git-repo-check",
                   "--dangerously-bypass-approvals-and-sandbox", prompt]  # fmt: skip
        process = subprocess.Popen(
            command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        try:
            process.wait(timeout=kill_after or 300)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the log stops mid-turn
            process.wait()
        served = list(server.served)
    (rollout,) = Path(env["CODEX_HOME"]).glob("sessions/*/*/*/rollout-*.jsonl")
    assert sum(1 for _, t in served for p in t.parts if isinstance(p, ToolCall)) == sum(
        1 for s in script for p in s.parts if isinstance(p, ToolCall)
    )
    return rollout


def test_a_real_codex_rollout_with_a_long_failing_command(tmp_path: Path) -> None:
    padding = " ".join(f"--option-{n}" for n in range(150))
    failing = (
        "python3 -c \"import sys; sys.stderr.write('ModuleNotFoundError: No module named "
        f"checkout_rounding\\n'); sys.exit(3)\" # {padding}"
    )
    script = [
        tool("exec_command", {"cmd": failing}),
        tool("exec_command", {"cmd": "cat README.md"}),
        text("The test module is missing."),
    ]
    rollout = _codex(tmp_path, script, "Run the rounding tests", kill_after=None)
    run = import_rollout(rollout).runs[0]
    report = run.report
    assert report is not None
    assert report["tool_calls"] == 2 and report["turns_by_ending"] == {"verified": 1}
    assert run.record["title"] == "Run the rounding tests"
    lines = [e["event"]["line"] for e in run.record["events"] if e["event"]["kind"] == "safe_log"]
    assert lines == [
        "tool exec_command failed: exit code 3: ModuleNotFoundError: No module named "
        "checkout_rounding"
    ]


def test_a_real_codex_session_killed_mid_turn_is_not_a_success(tmp_path: Path) -> None:
    script = [tool("exec_command", {"cmd": "echo started"}), Turn(hang=True)]
    rollout = _codex(tmp_path, script, "Start the long job", kill_after=20)
    record = parse_run_record(import_rollout(rollout).runs[0].record)
    (visit,) = record.visits()
    assert visit.outcome is None  # interrupted: no task_complete in the log
    assert record.outcome == "cancelled"
