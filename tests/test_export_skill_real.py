"""The exported lessons skill where the real clients load it: `claude -p` (against the
scripted model server, isolated HOME) lists it in its `init` event and offers it to its
model; `codex debug prompt-input` lists it with `--client codex` (docs/export.md)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from fakes.harness import claude_environment, isolated_home, require_harness
from fakes.model_server import ModelServer, text
from recall_support import publish, repository_lesson

from active_memory.cli import main
from active_memory.exports import SKILL_FOLDER

KEY = "sk-ant-api03-EXPORTSKILLkey0123456789"


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "api"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin",
                    "git@github.com:acme/api.git"], check=True)  # fmt: skip
    store = tmp_path / "lessons.sqlite3"
    publish(store, [
        repository_lesson("Regenerate the client after schema edits",
                          "Run `make api-client` after editing `api/schema.json`.",
                          files=["api/schema.json"]),
        repository_lesson("Start the database before the tests", commands=["mix test"]),
    ])  # fmt: skip
    monkeypatch.setenv("ACTIVE_MEMORY_STORE", str(store))
    monkeypatch.chdir(root)
    return root


def test_claude_code_lists_the_exported_skill(checkout: Path, tmp_path: Path) -> None:
    claude = require_harness("claude")
    assert main(["lessons", "export", "--format", "skill"]) == 0
    assert (checkout / ".claude" / "skills" / SKILL_FOLDER / "SKILL.md").is_file()
    env = claude_environment(tmp_path / "client", "", KEY)
    with ModelServer(default=text("ok")) as server:
        env["ANTHROPIC_BASE_URL"] = server.url
        done = subprocess.run(
            [str(claude), "-p", "hello", "--output-format", "stream-json", "--verbose",
             "--max-turns", "1"],
            cwd=checkout, env=env, capture_output=True, text=True, timeout=240, check=False,
        )  # fmt: skip
        requests = server.main_requests()
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    init = next(e for e in events if e.get("type") == "system" and e.get("subtype") == "init")
    assert SKILL_FOLDER in init["skills"]
    # The model is offered the skill by its description.
    assert f"- {SKILL_FOLDER}: Lessons learned from costly mistakes in" in requests[0].dump()


def test_codex_lists_the_exported_skill_for_the_codex_client(
    checkout: Path, tmp_path: Path
) -> None:
    codex = require_harness("codex")
    assert main(["lessons", "export", "--format", "skill", "--client", "codex"]) == 0
    env = isolated_home(tmp_path / "client")
    done = subprocess.run(
        [str(codex), "debug", "prompt-input", "hello"],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    listed = re.findall(
        rf"- {SKILL_FOLDER}: Lessons learned from costly mistakes[^\n\\]*", done.stdout
    )
    assert len(listed) == 1, done.stdout[-3000:]
    assert str(checkout / ".agents" / "skills") in done.stdout
