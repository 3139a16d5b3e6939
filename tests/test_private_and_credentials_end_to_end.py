"""Issue 27's "Must show", end to end: a private path and an AWS key planted in a real
Claude Code transcript, imported with the session's hook receipts present (written by
the real hook process), appear in none of: the run record file (`import claude -o`),
`evidence --json`, the postmortem journal, the hook's state files, and any prompt a fake
model provider received (the API lane against the fake Anthropic server).

The transcript is the real `claude` 2.1.332 failure capture of tests/fixtures/sessions/
(repeated tool failures, so repository discovery asks its model), with the private path
typed inside `<private>` tags into the prompt and both planted in a failing command.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fakes.model_server import ModelServer, answer
from recall_support import claude_payload, hook_env, run_hook

from active_memory.cli import main

FIXTURE = (
    Path(__file__).parent
    / "fixtures"
    / "sessions"
    / "claude-2.1.332-failures-real"
    / "c5a7db27-940a-4514-93dc-834cccb28f0c.jsonl"
)
SESSION = "c5a7db27-940a-4514-93dc-834cccb28f0c"
PRIVATE_PATH = "data/PRIVATE-ACME-MERGER-7731.csv"
AWS = "AKIAIOSFODNN7EXAMPLE"
NEEDLES = ("ACME-MERGER-7731", AWS)


def _checkout(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "package.json").write_text('{"scripts": {"build": "true"}}\n', encoding="utf-8")
    return root


def _transcript(tmp_path: Path, checkout: Path) -> Path:
    text = FIXTURE.read_text(encoding="utf-8")
    prompt = '"content":"Make the checks pass, then commit and push'
    assert prompt in text and text.count('"command":"npm run biuld"') == 2
    text = text.replace(
        prompt,
        f"{prompt} (the numbers are in <private>{PRIVATE_PATH}</private>; deploy with {AWS})",
    )
    text = text.replace(
        '"command":"npm run biuld"',
        f'"command":"AWS_ACCESS_KEY_ID={AWS} npm run biuld -- {PRIVATE_PATH}"',
    )
    text = text.replace("/home/dev/demo", str(checkout))
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def _hook_calls(env: dict[str, str], checkout: Path) -> None:
    """The session's hook receipts, written by the real hook process."""
    for tool, tool_input in (
        ("Read", {"file_path": str(checkout / PRIVATE_PATH)}),
        ("Bash", {"command": f"cat keys/{AWS}.pem {PRIVATE_PATH}"}),
        ("Bash", {"command": f"AWS_ACCESS_KEY_ID={AWS} npm run biuld -- {PRIVATE_PATH}"}),
    ):
        payload = claude_payload(tool, tool_input, session=SESSION, cwd=checkout)
        done = run_hook("claude", json.dumps(payload), env)
        assert done.returncode == 0, done.stderr


def _found(text: str) -> list[str]:
    return [needle for needle in NEEDLES if needle.lower() in text.lower()]


def _files(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _runtime(tmp_path: Path) -> Path:
    path = tmp_path / "runtime.json"
    path.write_text(
        json.dumps(
            {
                "harness": "claude",
                "provider": "anthropic",
                "size": "standard",
                "nodes": {
                    "worker": {
                        "kind": "agent",
                        "model": "claude-sonnet-5",
                        "env": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"],
                    }
                },
            }
        )
    )
    return path


def test_a_private_path_and_an_aws_key_stay_out_of_every_file_and_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    state, store = tmp_path / "state", tmp_path / "lessons.sqlite3"
    env = hook_env(state, store)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    checkout = _checkout(tmp_path / "demo")
    transcript = _transcript(tmp_path, checkout)
    assert _found(transcript.read_text()) == list(NEEDLES)  # the control: both planted
    _hook_calls(env, checkout)
    recall = state / "active-memory" / "recall"
    before = "".join(_files(recall).values())
    # The control: the hook wrote receipts with the private path (it never sees the
    # prompt, so it cannot know); the key it had already masked (the lean screen).
    assert _found(before) == ["ACME-MERGER-7731"] and "[REDACTED:" in before

    record = tmp_path / "run.json"
    assert main(["import", "claude", str(transcript), "-o", str(record), "--json"]) == 0
    printed = capsys.readouterr().out
    written = record.read_text(encoding="utf-8")
    assert _found(written) == [] and _found(printed) == []
    data = json.loads(written)
    assert data["tool_failures"] and data["receipts"]  # a real record, not an empty one
    assert any("[REDACTED:" in f["command"] for f in data["tool_failures"])

    assert main(["evidence", str(record), "--json"]) == 0
    evidence = capsys.readouterr().out
    assert json.loads(evidence)["evidence"] and _found(evidence) == []

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-ENDTOENDkey0123456789")
    with ModelServer(default=answer({"lessons": []})) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        code = main(
            ["postmortem", str(record), "--config", str(_runtime(tmp_path)), "--lane", "api",
             "--json"]
        )  # fmt: skip
        requests = server.model_requests()
    report = capsys.readouterr().out
    assert code == 0, report
    assert "repository_discovery" in {
        name for name, entry in json.loads(report)["specialists"].items() if entry["usage"]
    }
    assert requests  # the model was asked, with the run's failures in its prompt
    prompts = [request.dump() for request in requests]
    assert any("npm run biuld" in prompt for prompt in prompts)
    assert [_found(prompt) for prompt in prompts] == [[] for _ in prompts]
    assert _found(report) == []

    journal = _files(tmp_path / "postmortems")
    assert journal and all(_found(text) == [] for text in journal.values())
    hook = _files(recall)
    assert any(name.endswith("receipts.jsonl") for name in hook)
    assert {name: _found(text) for name, text in hook.items()} == {name: [] for name in hook}
