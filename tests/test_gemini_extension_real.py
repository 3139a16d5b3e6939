"""The Gemini CLI extension with the real `gemini` (issue 29: installed the way each
harness installs things). In an empty HOME, `gemini extensions install <a copy of this
repository>/plugins/gemini --consent` is the whole install: the first session's
SessionStart hook sets the package up (plugins/bootstrap.py, a pip install from the
source the extension links to), the AfterTool hook puts the lesson's card into the read's
result, the SessionEnd hook queues the session; our MCP server answers for the session's
repository, and the init skill names the extension's command. Needs the package index for
the dependencies, as any `pip install` does. Skips without the binary; fails with
CI=true."""

from __future__ import annotations

import json
from pathlib import Path

from fakes.harness import isolated_home, require_harness
from fakes.model_server import ModelServer, text, tool
from plugin_support import (
    RECOMMENDATION,
    TITLE,
    checkout_with_lesson,
    copy_repository,
    queued,
    run,
    setup_folders,
    setup_log,
)

SEARCH = "mcp_active-memory_search_lessons"
"""How Gemini CLI 0.61 names our MCP server's search tool."""


def _gemini_home(home: Path) -> None:
    # The user's own Gemini CLI settings: API-key sign-in, no folder-trust prompts.
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"},
                     "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
    }))  # fmt: skip


def test_extensions_install_is_the_whole_install(tmp_path: Path) -> None:
    gemini = require_harness("gemini")
    source = copy_repository(tmp_path / "clone")
    env = isolated_home(tmp_path) | {"GEMINI_CLI_NO_RELAUNCH": "true"}
    home = Path(env["HOME"])
    _gemini_home(home)
    work = checkout_with_lesson(tmp_path, home)

    run([str(gemini), "extensions", "install", str(source / "plugins" / "gemini"), "--consent"],
        env, work)  # fmt: skip
    with ModelServer() as server:
        server.push(tool("read_file", {"file_path": str(work / "client.py")}), text("Done."))
        session = env | {"GOOGLE_GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": "fake-key"}
        run([str(gemini), "-p", "Read client.py", "--yolo", "-m", "gemini-2.5-flash"],
            session, work)  # fmt: skip
        requests = server.model_requests()
    data = home / ".gemini" / "active-memory"
    assert (data / "bin" / "active-memory").exists(), setup_log(data)
    assert setup_folders(home) == [data]
    after = [r for r in requests if r.tool_results()]
    assert after, [r.dump()[:300] for r in requests]
    assert any(RECOMMENDATION in result for result in after[0].tool_results()), setup_log(data)
    assert all(RECOMMENDATION not in r.dump() for r in requests if not r.tool_results())
    assert [harness for harness, _ in queued(home)] == ["gemini"]

    # Our MCP server came with it, serving the session's repository; and the init skill,
    # naming the extension's own command.
    with ModelServer() as server:
        server.push(
            tool(SEARCH, {"query": "client.py"}),
            tool("activate_skill", {"name": "active-memory-init"}),
            text("Ok."),
        )
        session = env | {"GOOGLE_GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": "fake-key"}
        run([str(gemini), "-p", "Initialise Active Memory", "--yolo", "-m", "gemini-2.5-flash"],
            session, work)  # fmt: skip
        requests = server.model_requests()
    results = [result for r in requests for result in r.tool_results()]
    assert TITLE in results[0] and "repo:github.com/acme/api" in results[0], results
    command = home / ".gemini" / "extensions" / "active-memory" / "bin" / "active-memory"
    assert f"ACTIVE_MEMORY_COMMAND: '{command}'" in json.dumps([r.body for r in requests])
