"""Contexts with the real `claude` (isolated HOME, fake model server on loopback): the
installed context hooks confirm a delivered card (its batch ran), so a resumed session
does not get it twice. The sub-agent, interruption and `/compact` payloads of the same
binary are replayed in tests/test_context_events.py (a `/compact` against the fake
server ended "summarization produced empty response" here; the recorded run did not)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fakes.harness import claude_environment, require_harness
from fakes.model_server import ModelServer, text, tool
from recall_support import publish, repository_lesson

CLI = Path(sys.executable).parent / "active-memory"


def _no_tools(received: Any) -> bool:
    return not received.tool_names()  # Claude Code's own title and summary requests


RECOMMENDATION = "Regenerate a.py with make a; never edit it by hand."


def test_without_compaction_the_card_is_not_delivered_twice(tmp_path: Path) -> None:
    claude = require_harness("claude")
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.py").write_text("A = 1\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(work), "init", "-q"], check=True)
    subprocess.run(
        ["git", "-C", str(work), "remote", "add", "origin", "git@github.com:acme/api.git"],
        check=True,
    )
    store = tmp_path / "lessons.sqlite3"
    publish(store, [repository_lesson("Card for a", RECOMMENDATION, files=["a.py"])])
    read = tool("Read", {"file_path": str(work / "a.py")})
    with ModelServer(
        script=[read, text("done"), read, text("done")], default=text("ok"), side=_no_tools
    ) as server:
        env = claude_environment(tmp_path, server.url, "sk-ant-test") | {
            "IS_SANDBOX": "1",
            "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
            "ACTIVE_MEMORY_STORE": str(store),
        }
        subprocess.run([str(CLI), "hook", "install", "claude"], cwd=work, env=env, check=True)
        base = [str(claude), "--permission-mode", "bypassPermissions", "--output-format", "json"]
        done = subprocess.run([*base, "-p", "read a.py"], cwd=work, env=env,
                              capture_output=True, text=True, timeout=180, check=True)  # fmt: skip
        session = json.loads(done.stdout)["session_id"]
        subprocess.run([*base, "--resume", session, "-p", "again"], cwd=work, env=env,
                       capture_output=True, text=True, timeout=180, check=True)  # fmt: skip
        requests = server.model_requests()
    last = [json.dumps(r.body["messages"][-1]) for r in requests if r.tool_results()]
    assert len(last) >= 2
    assert RECOMMENDATION in last[0] and RECOMMENDATION not in last[-1]
