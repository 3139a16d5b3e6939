"""Shared set-up for the recall and hook tests: a checkout, a store with lessons, env."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from active_memory.lessons import (
    Associations,
    Author,
    Card,
    CreateLesson,
    GraphScope,
    PublishReceipt,
    RepositoryScope,
)
from active_memory.store.sqlite import SqliteStore

NAMESPACE = "repo:github.com/acme/api"
GRAPH_HASH = "ab" * 32
AUTHOR = Author(specialist="person:test")
REPO_ROOT = Path(__file__).resolve().parent.parent


def make_checkout(root: Path, remote: str = "git@github.com:acme/api.git") -> Path:
    """A folder that looks like a git checkout with remote `origin` (no git needed)."""
    (root / ".git").mkdir(parents=True, exist_ok=True)
    (root / ".git" / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n"
        f'[remote "origin"]\n\turl = {remote}\n'
        "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
        '[branch "main"]\n\tremote = origin\n',
        encoding="utf-8",
    )
    return root


def repository_lesson(
    title: str,
    recommendation: str = "Do the specific thing.",
    *,
    files: Sequence[str] = (),
    folders: Sequence[str] = (),
    identifiers: Sequence[str] = (),
    keywords: Sequence[Sequence[str]] = (),
    commands: Sequence[str] = (),
    namespace: str = NAMESPACE,
) -> CreateLesson:
    """A create mutation for a repository lesson."""
    return CreateLesson(
        scope=RepositoryScope(repository=namespace),
        card=Card(
            title=title,
            recommendation=recommendation,
            associations=Associations(
                files=list(files),
                folders=list(folders),
                identifiers=list(identifiers),
                keywords=[list(group) for group in keywords],
                commands=list(commands),
            ),
        ),
        author=AUTHOR,
    )


def graph_lesson(
    title: str, recommendation: str = "Run the checks first.", node: str = "worker"
) -> CreateLesson:
    """A create mutation for a graph lesson of `GRAPH_HASH` / `node`."""
    return CreateLesson(
        scope=GraphScope(graph_hash=GRAPH_HASH, node=node),
        card=Card(title=title, recommendation=recommendation),
        author=AUTHOR,
    )


def publish(store_path: Path, mutations: Sequence[CreateLesson]) -> PublishReceipt:
    """Publish `mutations` into the SQLite store at `store_path` (created if missing)."""

    async def run() -> PublishReceipt:
        store = await SqliteStore.open(store_path)
        try:
            return await store.publish(list(mutations))
        finally:
            await store.aclose()

    return anyio.run(run)


def hook_env(state: Path, store: Path, **extra: str) -> dict[str, str]:
    """An environment for a hook process: its own state dir and store, nothing inherited
    from the `ACTIVE_MEMORY_*` variables of the test run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["ZEROSHOT_STATE_DIR"] = str(state)
    env["ACTIVE_MEMORY_STORE"] = str(store)
    env.update(extra)
    return env


def run_hook(
    harness: str, payload: bytes | str, env: dict[str, str], timeout: float = 60.0
) -> subprocess.CompletedProcess[bytes]:
    """Run the lean command hook in a new process, as a harness would."""
    data = payload.encode("utf-8") if isinstance(payload, str) else payload
    return subprocess.run(
        [sys.executable, "-m", "active_memory.hooks.command", harness],
        input=data,
        capture_output=True,
        env=env,
        cwd=str(REPO_ROOT),
        timeout=timeout,
        check=False,
    )


def claude_payload(
    tool_name: str, tool_input: dict[str, Any], *, session: str, cwd: Path | str
) -> dict[str, Any]:
    """A Claude Code PreToolUse hook input, with every field Claude Code sends."""
    return {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/-work-api/{session}.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01ABCDEF",
    }


def codex_payload(
    tool_name: str, tool_input: dict[str, Any], *, session: str, cwd: Path | str
) -> dict[str, Any]:
    """A Codex PreToolUse hook input (`codex-rs/hooks` command input shape)."""
    return {
        "session_id": session,
        "turn_id": "turn-3",
        "transcript_path": None,
        "cwd": str(cwd),
        "hook_event_name": "PreToolUse",
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_use_id": "call_Xy12",
    }


def opencode_payload(
    tool: str, args: dict[str, Any], *, session: str, cwd: Path | str
) -> dict[str, Any]:
    """What an OpenCode `tool.execute.after` plugin forwards: its input plus `cwd`."""
    return {"harness": "opencode", "tool": tool, "sessionID": session, "callID": "call_1",
            "args": args, "cwd": str(cwd)}  # fmt: skip


def wait_for_generation(state: Path, timeout: float = 120.0) -> Path:
    """The first generation the background builder makes under `state` (hooks never
    build: a run's first call starts the builder and reads its version from the store).
    Waits until a scope's `CURRENT` names one, and returns it."""
    import marshal
    import time

    generations = state / "active-memory" / "recall" / "generations"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for current in generations.glob("*/*/CURRENT"):
            name = str(marshal.loads(current.read_bytes())["generation"])
            if (current.parent / name).exists():
                return current.parent / name
        time.sleep(0.05)
    raise AssertionError(f"no generation under {generations} after {timeout:g} s")
