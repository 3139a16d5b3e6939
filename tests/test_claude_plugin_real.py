"""The Claude Code plugin with the real `claude` (issue 29: installed the way Claude Code
installs things). In an empty HOME, `claude plugin marketplace add <a copy of this
repository>` and `claude plugin install active-memory` are the whole install: the first
session sets the package up in the plugin's data folder (plugins/bootstrap.py, a pip
install from the plugin's own folder), its Read of a lesson's file gets the card, and its
end is queued for the postmortem. Needs the package index for the dependencies, as any
`pip install` does. Skips without the binary; fails with CI=true."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import anyio
from fakes.harness import claude_environment, require_harness
from fakes.model_server import ModelServer, text, tool
from recall_support import make_checkout, publish, repository_lesson

from active_memory.store import open_store

ROOT = Path(__file__).resolve().parents[1]
RECOMMENDATION = "Run make client after editing api/schema.json; never edit client.py by hand."
SKIPPED = shutil.ignore_patterns(
    ".git", ".venv", ".ci", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache",
    ".hypothesis", "*.egg-info", "build", "dist", ".learning-tasks", "example.sqlite3*",
)  # fmt: skip


def _claude(claude: Path, env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [str(claude), *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=1200, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
    return done.stdout


async def _queued(store: Path) -> list[tuple[str, str]]:
    async with open_store(str(store)) as opened:
        entries = await opened.queue.entries()
    return [(e.harness, e.session_id) for e in entries]


def test_marketplace_add_and_install_are_the_whole_install(tmp_path: Path) -> None:
    claude = require_harness("claude")
    source = tmp_path / "clone"
    shutil.copytree(ROOT, source, ignore=SKIPPED, symlinks=True)
    work = make_checkout(tmp_path / "api")
    (work / "client.py").write_text("CLIENT = 1\n", encoding="utf-8")
    env = claude_environment(tmp_path, "http://127.0.0.1:9", "sk-ant-test")
    store = Path(env["HOME"]) / ".local/state/zeroshot/active-memory/lessons.sqlite3"
    store.parent.mkdir(parents=True)
    publish(
        store, [repository_lesson("Regenerate the client", RECOMMENDATION, files=["client.py"])]
    )

    _claude(claude, env, work, "plugin", "marketplace", "add", str(source))
    _claude(claude, env, work, "plugin", "install", "active-memory@active-memory")
    with ModelServer() as server:
        server.push(tool("Read", {"file_path": str(work / "client.py")}), text("Done."))
        _claude(claude, env | {"ANTHROPIC_BASE_URL": server.url}, work,
                "-p", "Read client.py", "--allowedTools", "Read")  # fmt: skip
        requests = server.model_requests()
    carrying = [r for r in requests if RECOMMENDATION in json.dumps(r.dump())]
    assert carrying, "no model request carried the card"
    assert carrying[0].tool_results(), "the card came without the Read's result"
    data = Path(env["HOME"]) / ".claude/plugins/data/active-memory-active-memory"
    assert (data / "bin" / "active-memory").exists(), (data / "bootstrap.log").read_text()
    queued = anyio.run(_queued, store)
    assert [harness for harness, _ in queued] == ["claude"], queued

    # The init skill came with the plugin, naming the command the set-up installed.
    with ModelServer() as server:
        server.push(tool("Skill", {"skill": "active-memory:active-memory-init"}), text("Ok."))
        _claude(claude, env | {"ANTHROPIC_BASE_URL": server.url}, work,
                "-p", "Initialise Active Memory", "--allowedTools", "Skill")  # fmt: skip
        sent = json.dumps([r.dump() for r in server.model_requests()])
    assert f"ACTIVE_MEMORY_COMMAND: '{data / 'bin' / 'active-memory'}'" in sent
