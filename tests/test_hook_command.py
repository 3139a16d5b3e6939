"""The command hook as harnesses run it: a new process per tool call, stdin → stdout."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from recall_support import (
    REPO_ROOT,
    claude_payload,
    codex_payload,
    hook_env,
    make_checkout,
    opencode_payload,
    publish,
    repository_lesson,
    run_hook,
    wait_for_generation,
)


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.root = make_checkout(tmp_path / "api")
        self.store = tmp_path / "store" / "lessons.sqlite3"
        self.state = tmp_path / "state"
        self.env = hook_env(self.state, self.store)
        self.log = self.state / "active-memory" / "recall" / "hook.log"

    def log_lines(self) -> list[str]:
        if not self.log.exists():
            return []
        return self.log.read_text(encoding="utf-8").splitlines()


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def output(result: subprocess.CompletedProcess[bytes]) -> Any:
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode("utf-8")
    return json.loads(text) if text.strip() else None


def test_claude_hook_answers_additional_context(world: World) -> None:
    publish(world.store, [repository_lesson("Use the wrapper", files=["api/schema.json"])])
    payload = claude_payload("Edit", {"file_path": str(world.root / "api/schema.json"),
                                      "old_string": "a", "new_string": "b"},
                             session="s", cwd=world.root)  # fmt: skip
    answer = output(run_hook("claude", json.dumps(payload), world.env))
    assert answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert "## Use the wrapper  (L-1 r1)" in answer["hookSpecificOutput"]["additionalContext"]


def test_claude_hook_prints_nothing_without_a_match(world: World) -> None:
    publish(world.store, [repository_lesson("Use the wrapper", files=["api/schema.json"])])
    payload = claude_payload("Read", {"file_path": "README.md"}, session="s", cwd=world.root)
    result = run_hook("claude", json.dumps(payload), world.env)
    assert result.returncode == 0 and result.stdout == b""


def test_codex_apply_patch_touching_three_files_recalls_each_files_card(world: World) -> None:
    publish(world.store, [
        repository_lesson("Handlers", files=["src/api/handlers.py"]),
        repository_lesson("Docs", folders=["docs"]),
        repository_lesson("Scripts", files=["scripts/legacy.sh"]),
        repository_lesson("Unrelated", files=["web/app.tsx"]),
    ])  # fmt: skip
    patch = (
        "*** Begin Patch\n*** Update File: src/api/handlers.py\n@@\n-a\n+b\n"
        "*** Add File: docs/refunds.md\n+Refunds need keys.\n"
        "*** Delete File: scripts/legacy.sh\n*** End Patch\n"
    )
    payload = codex_payload("apply_patch", {"command": patch}, session="c", cwd=world.root)
    context = output(run_hook("codex", json.dumps(payload), world.env))
    text = context["hookSpecificOutput"]["additionalContext"]
    assert re.findall(r"\((L-\d+) r1\)", text) == ["L-1", "L-3", "L-2"]  # files, then folder


def test_after_tool_hook_answers_text_to_append(world: World) -> None:
    publish(world.store, [repository_lesson("Cart totals", identifiers=["CartTotal"])])
    payload = opencode_payload("grep", {"pattern": "CartTotal", "path": str(world.root)},
                               session="ses_1", cwd=world.root)  # fmt: skip
    answer = output(run_hook("after-tool", json.dumps(payload), world.env))
    assert answer["append"].startswith("\n\n<active-memory note=")
    assert "(L-1 r1)" in answer["append"]


def test_the_full_cli_hook_command_answers_too(world: World) -> None:
    publish(world.store, [repository_lesson("Use the wrapper", files=["api/schema.json"])])
    payload = claude_payload("Read", {"file_path": "api/schema.json"}, session="s", cwd=world.root)
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from active_memory.cli import main; "
         "sys.exit(main(sys.argv[1:]))", "hook", "claude"],
        input=json.dumps(payload).encode(), capture_output=True, env=world.env,
        cwd=str(REPO_ROOT), check=False,
    )  # fmt: skip
    assert "(L-1 r1)" in output(result)["hookSpecificOutput"]["additionalContext"]


# --- a hook never fails the tool call --------------------------------------------------


def assert_silent_failure(world: World, result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 0
    assert result.stdout == b""
    lines = world.log_lines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("stdin", [b"garbage", b"", b"[1, 2]", b"\xff\xfe", b'{"tool_input": {}}'])
def test_garbage_stdin_exits_0_silently_and_logs_one_line(world: World, stdin: bytes) -> None:
    line = assert_silent_failure(world, run_hook("claude", stdin, world.env))
    assert " hook claude " in line


def test_an_unknown_harness_exits_0_and_logs(world: World) -> None:
    line = assert_silent_failure(world, run_hook("cursor", b"{}", world.env))
    assert "unknown harness" in line


def test_an_unreadable_store_exits_0_and_logs(world: World) -> None:
    world.store.parent.mkdir(parents=True)
    world.store.write_bytes(b"this is not a database" * 100)
    payload = claude_payload("Read", {"file_path": "a.py"}, session="s", cwd=world.root)
    line = assert_silent_failure(world, run_hook("claude", json.dumps(payload), world.env))
    assert "Store" in line or "store" in line


def test_a_corrupt_snapshot_exits_0_and_logs(world: World) -> None:
    publish(world.store, [repository_lesson("Src", folders=["src"])])
    payload = claude_payload("Read", {"file_path": "README.md"}, session="s", cwd=world.root)
    assert run_hook("claude", json.dumps(payload), world.env).stdout == b""  # pins
    wait_for_generation(world.state)  # built in the background
    generations = list((world.state / "active-memory" / "recall").rglob("*.gen"))
    assert generations
    for generation in generations:
        generation.write_bytes(b"\x00not marshal")
    payload["tool_input"] = {"file_path": "src/a.py"}
    line = assert_silent_failure(world, run_hook("claude", json.dumps(payload), world.env))
    assert "SnapshotCorrupt" in line


def test_a_corrupt_session_ledger_delivers_nothing(world: World) -> None:
    publish(world.store, [repository_lesson("Src", folders=["src"])])
    ledger = world.state / "active-memory" / "recall" / "sessions" / "s.ledger"
    ledger.parent.mkdir(parents=True)
    ledger.write_bytes(b"\x00\x01")
    payload = claude_payload("Read", {"file_path": "src/a.py"}, session="s", cwd=world.root)
    line = assert_silent_failure(world, run_hook("claude", json.dumps(payload), world.env))
    assert "LedgerCorrupt" in line


# --- the warm path imports little ----------------------------------------------------

_PROBE = """
import io, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
from active_memory.hooks.command import main
main(["claude"])
sys.stderr.write(" ".join(sorted(sys.modules)))
"""

HEAVY = ("pydantic", "anyio", "rich", "sqlite3", "aiosqlite", "json", "re", "typing",
         "dataclasses", "pathlib", "shlex", "asyncio")  # fmt: skip


def test_the_warm_hook_path_imports_no_heavy_module(world: World) -> None:
    publish(world.store, [repository_lesson("Src", folders=["src"])])
    payload = claude_payload("Bash", {"command": "cd src && rg -n handleRefund ."},
                             session="s", cwd=world.root)  # fmt: skip
    run_hook("claude", json.dumps(payload), world.env)  # the first call pins
    wait_for_generation(world.state)  # the background builder made its generation
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(payload)], capture_output=True, text=True,
        env=world.env, cwd=str(REPO_ROOT), check=True,
    )  # fmt: skip
    modules = set(probe.stderr.split())
    assert "active_memory.recall.engine" in modules
    assert not [name for name in HEAVY if name in modules]


def test_every_package_module_of_the_warm_path_gets_bytecode_at_install(
    world: World, tmp_path: Path
) -> None:
    import shutil

    from active_memory.hooks.lean import compile_hook_path

    publish(world.store, [repository_lesson("Src", folders=["src"])])
    payload = claude_payload("Bash", {"command": "cd src && timeout 9 mix test"},
                             session="s", cwd=world.root)  # fmt: skip
    run_hook("claude", json.dumps(payload), world.env)  # the first call pins
    wait_for_generation(world.state)  # the background builder made its generation
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(payload)], capture_output=True, text=True,
        env=world.env, cwd=str(REPO_ROOT), check=True,
    )  # fmt: skip
    ours = [name for name in probe.stderr.split() if name.startswith("active_memory")]
    assert "active_memory.command_family" in ours
    copy = tmp_path / "pkg"
    shutil.copytree(REPO_ROOT / "active_memory", copy / "active_memory",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    compiled = set(compile_hook_path(copy))
    for name in ours:
        module = name.replace(".", "/")
        assert {f"{module}.py", f"{module}/__init__.py"} & compiled, name


# What a run's first call may import beyond the warm path: what pinning reads (issue 14:
# `urllib.parse` for a URI, `threading` for a thread ID cost a first call about 6 ms).
FIRST_CALL_HEAVY = (
    *(name for name in HEAVY if name != "sqlite3"),
    *("urllib", "urllib.parse", "threading", "enum", "ipaddress"),
)


def test_a_runs_first_call_imports_nothing_pinning_does_not_need(world: World) -> None:
    publish(world.store, [repository_lesson("Src", folders=["src"])])
    payload = claude_payload("Read", {"file_path": "src/a.py"}, session="s", cwd=world.root)
    run_hook("claude", json.dumps(payload), {**world.env, "ACTIVE_MEMORY_RUN_ID": "one"})
    wait_for_generation(world.state)  # the background builder made its generation
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(payload)], capture_output=True, text=True,
        env={**world.env, "ACTIVE_MEMORY_RUN_ID": "two"}, cwd=str(REPO_ROOT), check=True,
    )  # fmt: skip
    modules = set(probe.stderr.split())
    pins = list((world.state / "active-memory" / "recall" / "runs").glob("*two/pin-*"))
    assert len(pins) == 1, "the probe must have been the run's first call"
    assert not [name for name in FIRST_CALL_HEAVY if name in modules]


# --- concurrency -----------------------------------------------------------------------


# A hook process that starts its call only once every process is ready, and reads its
# session ledger slowly: without the session lock, concurrent calls would all read the
# same state and together overspend and repeat cards.
_SLOW_HOOK = """
import os, sys, time
from active_memory.recall import ledger
real = ledger.read_state
def slow_read(path):
    state = real(path)
    time.sleep(0.05)
    return state
ledger.read_state = slow_read
while not os.path.exists(sys.argv[1]):
    time.sleep(0.001)
from active_memory.hooks.command import main
main(["claude"])
"""


@pytest.mark.slow
def test_16_concurrent_hook_processes_never_overspend_or_repeat_a_card(
    world: World, tmp_path: Path
) -> None:
    files = [f"src/m{n}.py" for n in range(16)]
    publish(world.store, [repository_lesson(f"Card {n}", "x" * 120, files=[files[n]],
                                            folders=["src"] if n % 4 == 0 else [])
                          for n in range(16)])  # fmt: skip
    budget = 700  # a few cards' worth, far fewer than the calls want
    env = {**world.env, "ACTIVE_MEMORY_BUDGET_BYTES": str(budget)}

    go = tmp_path / "go"

    def call(n: int) -> subprocess.CompletedProcess[bytes]:
        payload = claude_payload("Read", {"file_path": files[n]}, session="s-one", cwd=world.root)
        return subprocess.run(
            [sys.executable, "-c", _SLOW_HOOK, str(go)], input=json.dumps(payload).encode(),
            capture_output=True, env=env, cwd=str(REPO_ROOT), timeout=120, check=False,
        )  # fmt: skip

    # The snapshot is frozen first, so that the 16 calls race on the ledger only.
    frozen = claude_payload("Read", {"file_path": "README.md"}, session="other", cwd=world.root)
    assert run_hook("claude", json.dumps(frozen), env).returncode == 0
    with ThreadPoolExecutor(max_workers=16) as pool:
        pending = [pool.submit(call, n) for n in range(16)]
        go.touch()
        results = [future.result() for future in pending]
    contexts = [output(result) for result in results]
    texts = [c["hookSpecificOutput"]["additionalContext"] for c in contexts if c]
    total = sum(len(text.encode("utf-8")) for text in texts)
    delivered = [card for text in texts for card in re.findall(r"\((L-\d+ r\d+)\)", text)]
    assert texts, "some call must have received a card"
    assert total <= budget
    assert len(delivered) == len(set(delivered))
    assert world.log_lines() == []


def test_a_broken_store_is_not_opened_again_on_every_call(world: World) -> None:
    world.store.parent.mkdir(parents=True)
    world.store.write_bytes(b"this is not a database" * 100)
    payload = claude_payload("Read", {"file_path": "a.py"}, session="s", cwd=world.root)
    first = run_hook("claude", json.dumps(payload), world.env)
    second = run_hook("claude", json.dumps(payload), world.env)
    assert first.stdout == second.stdout == b""
    lines = world.log_lines()
    assert len(lines) == 2
    assert "SnapshotUnavailable" in lines[1] and "next try after" in lines[1]


# --- the lean entry and its bytecode ---------------------------------------------------


def test_the_lean_entry_answers_without_importing_re(world: World, tmp_path: Path) -> None:
    from active_memory.hooks.lean import write_entry

    publish(world.store, [repository_lesson("Src", folders=["src"])])
    entry = write_entry(tmp_path / "bin")
    assert os.access(entry, os.X_OK) and write_entry(tmp_path / "bin") == entry
    env = {**world.env, "ACTIVE_MEMORY_RUN_ID": "lean"}
    payload = claude_payload("Read", {"file_path": "src/a.py"}, session="s", cwd=world.root)
    run_hook("claude", json.dumps(payload), env)  # pins the run's generation
    payload["session_id"] = "s-2"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(entry), "claude"],
        input=json.dumps(payload).encode(), capture_output=True, env=env, check=True,
    )  # fmt: skip
    assert b"(L-1 r1)" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines()}
    assert "re" not in imported and "active_memory.hooks.command" in imported


def test_hook_install_compiles_the_hook_path_once(tmp_path: Path) -> None:
    import shutil

    from active_memory.hooks.lean import compile_hook_path

    copy = tmp_path / "pkg"
    shutil.copytree(REPO_ROOT / "active_memory", copy / "active_memory",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    written = compile_hook_path(copy)
    assert "active_memory/recall/engine.py" in written
    assert (copy / "active_memory/recall/__pycache__").is_dir()
    assert compile_hook_path(copy) == []
