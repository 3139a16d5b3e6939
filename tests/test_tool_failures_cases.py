"""The cases of SPEC §3 "Tool failures" one by one, on short logs written here in the
shapes the real binaries write (tests/fixtures/sessions/*-real show them whole)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from active_memory.runlog.importers.claude import import_transcript
from active_memory.runlog.importers.codex import import_rollout
from active_memory.runlog.importers.session import MAX_PROMPT_CHARS, SessionRun
from active_memory.runlog.record import parse_run_record
from active_memory.runlog.tool_failures import FAILURES_KEPT_FIRST, MAX_TOOL_FAILURES

SESSION = "5b1f0c2e-7a4d-4e8f-9b6a-1c2d3e4f5a6b"
CWD = "/home/dev/shop"


class Claude:
    """A Claude Code 2.1 transcript, one entry at a time."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.second = 0
        self.calls = 0

    def _entry(self, kind: str, content: Any, **extra: Any) -> None:
        self.second += 1
        self.lines.append(
            {
                "type": kind,
                "sessionId": SESSION,
                "cwd": CWD,
                "timestamp": f"2026-12-01T10:00:{self.second:02d}.000Z",
                "message": {"role": kind, "content": content, "model": "claude-opus-4-5"},
                **extra,
            }
        )

    def prompt(self, text: str) -> None:
        self._entry("user", text)

    def call(self, tool: str, **arguments: Any) -> str:
        self.calls += 1
        call_id = f"toolu_{self.calls:03d}"
        block = {"type": "tool_use", "id": call_id, "name": tool, "input": arguments}
        self._entry("assistant", [block])
        return call_id

    def result(self, call_id: str, content: str, *, error: bool, **extra: Any) -> None:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
        if error:
            block["is_error"] = True
        self._entry("user", [block], **extra)

    def say(self, text: str) -> None:
        self._entry("assistant", [{"type": "text", "text": text}])

    def failures(self, tmp_path: Path) -> list[dict[str, Any]]:
        failures: list[dict[str, Any]] = self.record(tmp_path)["tool_failures"]
        return failures

    def record(self, tmp_path: Path) -> dict[str, Any]:
        path = tmp_path / f"{SESSION}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        record: dict[str, Any] = import_transcript(path).runs[0].record
        parse_run_record(record)
        return record


def test_a_person_s_no_an_interruption_and_a_cancelled_sibling_are_not_failures(
    tmp_path: Path,
) -> None:
    log = Claude()
    log.prompt("Deploy it")
    declined = log.call("Bash", command="make deploy")
    log.result(
        declined,
        "The user doesn't want to proceed with this tool use. The tool use was rejected "
        "(eg. if it was a file edit, the new_string was NOT written to the file).",
        error=True,
    )
    stopped = log.call("Bash", command="make deploy")
    log.result(stopped, "[Request interrupted by user for tool use]", error=True)
    failed = log.call("Read", file_path=f"{CWD}/missing.py")
    sibling = log.call("Read", file_path=f"{CWD}/other.py")
    log.result(failed, "<tool_use_error>File does not exist.</tool_use_error>", error=True)
    log.result(sibling, "<tool_use_error>Sibling tool call errored</tool_use_error>", error=True)
    log.say("Stopped.")
    (only,) = log.failures(tmp_path)
    assert (only["family"], only["error"]) == ("Read missing.py", "File does not exist.")


def test_exit_codes_hook_and_rule_refusals_are_failures(tmp_path: Path) -> None:
    log = Claude()
    log.prompt("Commit")
    test = log.call("Bash", command="timeout 3 make test")
    log.result(test, "Exit code 124", error=True)
    hook = log.call("Bash", command="git commit -m x")
    log.result(hook, "PreToolUse:Bash hook error: [./check.sh]: commits are frozen", error=True)
    rule = log.call("Bash", command="git push")
    log.result(rule, "Permission to use Bash with command git push has been denied.", error=True)
    log.say("Done.")
    made, commit, push = log.failures(tmp_path)
    assert (made["family"], made["exit_code"], made["error"]) == ("make test", 124, "timed out")
    assert commit["error"] == "PreToolUse:Bash hook error: [./check.sh]: commits are frozen"
    assert "exit_code" not in commit
    assert push["family"] == "git push"


def test_a_bash_call_moved_to_the_background_settles_by_its_notification(tmp_path: Path) -> None:
    moved = (
        "Command did not complete within its 120s timeout and was moved to the background "
        "(ID: b7). Output is being written to: /tmp/claude/tasks/b7.output."
    )

    def notification(call_id: str, status: str, summary: str) -> str:
        return (
            f"<task-notification>\n<task-id>b7</task-id>\n<tool-use-id>{call_id}</tool-use-id>"
            f"\n<status>{status}</status>\n<summary>{summary}</summary>\n</task-notification>"
        )

    log = Claude()
    log.prompt("Run the suite")
    failing = log.call("Bash", command="mix test")
    log.result(failing, moved, error=False)
    passing = log.call("Bash", command="npm test")
    log.result(passing, moved, error=False)
    silent = log.call("Bash", command="cargo test")
    log.result(silent, moved, error=False)
    log.prompt(notification(failing, "failed", 'Background command "mix test" exit code 2'))
    log.prompt(notification(passing, "completed", "Background command finished"))
    log.say("Waiting.")
    failures = log.failures(tmp_path)
    assert [(f["family"], f.get("exit_code")) for f in failures] == [
        ("mix test", 2),
        ("cargo test", None),
    ]
    assert failures[0]["error"].startswith("timed out")
    assert failures[1]["error"] == "timed out; moved to the background, no result recorded"


def test_the_prompt_is_kept_bounded_with_credentials_and_private_text_out(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "Zq7xW2vB9nL4kR8tY1uP6sD3fG5hJ0mC"
    log = Claude()
    log.prompt(f"Use the key {key} <private>our launch is on the 9th</private> and fix it")
    log.say("ok")
    log.prompt("x" * (MAX_PROMPT_CHARS + 500))
    log.say("ok")
    record = log.record(tmp_path)
    first, second = (
        e["event"]["input"] for e in record["events"] if e["event"]["kind"] == "node_started"
    )
    assert key not in first and "[REDACTED:anthropic-key]" in first
    assert "launch" not in first and first.endswith("and fix it")
    assert len(second) == MAX_PROMPT_CHARS and second.endswith("…")


def test_a_credential_in_a_failed_command_or_its_error_is_masked(tmp_path: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    log = Claude()
    log.prompt("Push")
    call = log.call("Bash", command=f"git push https://x:{token}@github.com/acme/shop.git")
    log.result(call, f"Exit code 128\nfatal: could not read from {token}", error=True)
    log.say("no")
    (failure,) = log.failures(tmp_path)
    assert token not in json.dumps(failure)
    assert "[REDACTED:" in failure["command"] and "[REDACTED:" in failure["error"]


def test_a_write_resolves_a_failed_edit_of_its_file_and_a_read_does_not(tmp_path: Path) -> None:
    log = Claude()
    log.prompt("Fix the total")
    edit = log.call("Edit", file_path=f"{CWD}/cart.py", old_string="a", new_string="b")
    log.result(edit, "<tool_use_error>String to replace not found in file.", error=True)
    read = log.call("Read", file_path=f"{CWD}/cart.py")
    log.result(read, "1 def total(): ...", error=False)
    write = log.call("Write", file_path=f"{CWD}/cart.py", content="def total(): ...")
    log.result(write, "File written", error=False)
    log.say("Done.")
    (failure,) = log.failures(tmp_path)
    assert failure["resolved_by"]["family"] == "Write cart.py"
    assert failure["resolved_by"]["edited"] is False  # the resolution was the edit itself


def test_a_chain_s_failure_is_the_command_its_output_names(tmp_path: Path) -> None:
    log = Claude()
    log.prompt("Commit")
    call = log.call("Bash", command="git add dist/app.js && git commit -m build")
    log.result(
        call,
        "Exit code 1\nThe following paths are ignored by one of your .gitignore files:\ndist\n"
        "hint: Use -f if you really want to add them.",
        error=True,
    )
    log.say("Ignored.")
    (failure,) = log.failures(tmp_path)
    assert failure["family"] == "git add"
    assert failure["paths"] == ["dist/app.js"]


def test_past_the_bound_the_first_and_the_latest_failures_are_kept() -> None:
    run = SessionRun(harness="claude", run_id="claude-bound", cwd=CWD, root=CWD)
    run.open_turn("2026-12-01T10:00:00Z", "go")
    total = MAX_TOOL_FAILURES + 44
    for n in range(total):
        call_id = f"c{n}"
        run.tool_call("Bash", None, [], CWD, call_id=call_id, tool_input={"command": f"t{n}"})
        run.tool_failed(
            "Bash", None, timed_out=False, detail="", call_id=call_id, output="boom", exit_code=1
        )
    record = run.build("<test>", []).record
    kept = [f["command"] for f in record["tool_failures"]]
    assert len(kept) == MAX_TOOL_FAILURES and record["tool_failures_dropped"] == 44
    assert kept[FAILURES_KEPT_FIRST - 1] == f"t{FAILURES_KEPT_FIRST - 1}"
    assert kept[-1] == f"t{total - 1}"
    assert run.report.tool_failures == total


# --- Codex ------------------------------------------------------------------------------


def _rollout(tmp_path: Path, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    lines = [
        {
            "timestamp": "2026-12-01T10:00:00Z",
            "type": "session_meta",
            "payload": {"id": "s-1", "cwd": CWD},
        },
        {
            "timestamp": "2026-12-01T10:00:01Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "Run the suite"},
        },
    ]
    for second, item in enumerate(items, start=2):
        lines.append({"timestamp": f"2026-12-01T10:00:{second:02d}Z", **item})
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    failures: list[dict[str, Any]] = import_rollout(path).runs[0].record["tool_failures"]
    return failures


def _exec(call_id: str, **arguments: Any) -> dict[str, Any]:
    payload = {
        "type": "function_call",
        "name": "exec_command",
        "call_id": call_id,
        "arguments": json.dumps(arguments),
    }
    return {"type": "response_item", "payload": payload}


def _output(call_id: str, header: str, body: str) -> dict[str, Any]:
    payload = {
        "type": "function_call_output",
        "call_id": call_id,
        "output": f"Chunk ID: 1\nWall time: 1.0 seconds\n{header}\nOutput:\n{body}",
    }
    return {"type": "response_item", "payload": payload}


def test_codex_polling_a_running_command_reports_that_command_s_failure(tmp_path: Path) -> None:
    failures = _rollout(
        tmp_path,
        [
            _exec("c1", cmd="cd web && npm test"),
            _output("c1", "Process running with session ID 7", "RUNS src/cart.test.js\n"),
            {
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "write_stdin",
                    "call_id": "c2",
                    "arguments": json.dumps({"session_id": 7, "chars": ""}),
                },
            },
            _output("c2", "Process exited with code 1", "  ● cart > totals\n\n    expect(x)\n"),
        ],
    )
    (failure,) = failures
    assert (failure["family"], failure["command"], failure["exit_code"]) == (
        "npm test",
        "cd web && npm test",
        1,
    )
    assert failure["error"].startswith("● cart > totals")


def test_codex_no_match_and_a_declined_call_are_not_failures(tmp_path: Path) -> None:
    declined = {
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "c2", "output": "aborted by user"},
    }
    failures = _rollout(
        tmp_path,
        [
            _exec("c1", cmd="rg -n 'def total' src"),
            _output("c1", "Process exited with code 1", ""),
            _exec("c2", cmd="rm -rf build"),
            declined,
            _exec("c3", cmd="git push"),
            _output("c3", "Process exited with code 128", "fatal: no upstream\n"),
        ],
    )
    assert [f["family"] for f in failures] == ["git push"]
