"""The CLI harness lanes, against fake `claude` and `codex` executables on PATH."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fakes.cli import FakeCli, claude_result, codex_events, install_fake, path_with
from fakes.lanes import BAD, GOOD, OPENAI_KEY, Discoveries, lane
from fakes.network import NetworkGuard

from active_memory.config import SpecialistLane
from active_memory.errors import SpecialistFailed, SpecialistTimedOut
from active_memory.specialists.providers import BaseSession, SessionOptions, open_session

CLAUDE_LANE = lane(effort="max", env=["ANTHROPIC_API_KEY"])
CODEX_LANE = lane(
    harness="codex", provider="openai", model="gpt-5", effort="max", env=["OPENAI_API_KEY"]
)


@pytest.fixture(autouse=True)
def local_network_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    guard = NetworkGuard()
    guard.install(monkeypatch)
    yield
    guard.check()


@pytest.fixture
def claude(tmp_path: Path) -> FakeCli:
    return install_fake("claude", tmp_path)


@pytest.fixture
def codex(tmp_path: Path) -> FakeCli:
    return install_fake("codex", tmp_path)


def session_for(fake: FakeCli, lane: SpecialistLane, seconds: float = 20.0) -> BaseSession:
    environ = {
        "PATH": path_with(fake.bin_dir),
        "HOME": os.environ.get("HOME", "/root"),
        "ANTHROPIC_API_KEY": "sk-ant-api03-CLIKEYcli0123456789",
        "OPENAI_API_KEY": OPENAI_KEY,
        "UNDECLARED_SECRET": "must-not-reach-the-cli",
    }
    return open_session(
        lane,
        "repository_maintenance",
        deadline=anyio.current_time() + seconds,
        options=SessionOptions(mode="cli"),
        environ=environ,
    )


def process_state(pid: int) -> str | None:
    """The state letter of a process (Z: zombie), or None when it no longer exists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def nothing_to_reap(pid: int) -> bool:
    """True when `pid` is no child of ours any more (it was reaped already)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.mark.asyncio
async def test_claude_structured_output_with_usage_and_cost(claude: FakeCli) -> None:
    claude.script({"stdout": claude_result(GOOD, cost=0.0123, input_tokens=30, cache_read=1200)})
    session = session_for(claude, CLAUDE_LANE)
    reply = await session.ask("What changed?", Discoveries, system="Maintain lessons.")
    assert reply.answer == Discoveries.model_validate(GOOD)
    assert reply.usage.input_tokens == 1230 and reply.usage.output_tokens == 50
    assert reply.usage.cost_usd == pytest.approx(0.0123)
    (call,) = claude.calls()
    argv = call["argv"]
    assert argv[:4] == ["-p", "--output-format", "stream-json", "--verbose"]
    assert argv[argv.index("--model") + 1] == "claude-sonnet-5"
    assert argv[argv.index("--effort") + 1] == "max"
    assert json.loads(argv[argv.index("--json-schema") + 1])["title"] == "Discoveries"
    # The specialist's instructions replace Claude Code's system prompt; no checkout, no tools.
    assert "Maintain lessons." in argv[argv.index("--system-prompt") + 1]
    assert "--append-system-prompt" not in argv
    assert argv[argv.index("--tools") + 1] == ""
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert argv[argv.index("--setting-sources") + 1] == "user"  # not the checkout's
    assert json.loads(argv[argv.index("--settings") + 1]) == {"disableAllHooks": True}
    assert "--no-session-persistence" in argv and "--strict-mcp-config" in argv
    assert call["stdin"] == "What changed?"
    assert "ANTHROPIC_API_KEY" in call["env"] and "UNDECLARED_SECRET" not in call["env"]


@pytest.mark.asyncio
async def test_claude_repair_turn_is_a_new_run_carrying_the_conversation(
    claude: FakeCli,
) -> None:
    claude.script(
        {"stdout": claude_result(text=json.dumps(BAD), session_id="s-1")},
        {"stdout": claude_result(text=json.dumps(GOOD), session_id="s-2")},
    )
    session = session_for(claude, CLAUDE_LANE)
    reply = await session.ask("What changed?", Discoveries)
    assert reply.turns == 2 and reply.usage.cost_usd == pytest.approx(0.0246)
    first, second = claude.calls()
    # Sessions are not saved (nothing in the user's resume list), so nothing is resumed.
    assert "--resume" not in first["argv"] and "--resume" not in second["argv"]
    assert second["stdin"].startswith("## user\n\nWhat changed?")
    assert "## assistant" in second["stdin"] and json.dumps(BAD) in second["stdin"]
    assert "lessons[0].evidence" in second["stdin"]


@pytest.mark.asyncio
async def test_claude_error_result_is_a_harness_failure(claude: FakeCli) -> None:
    claude.script(
        {"stdout": claude_result(text="Credit balance is too low", is_error=True), "exit": 1}
    )
    session = session_for(claude, CLAUDE_LANE)
    with pytest.raises(SpecialistFailed) as caught:
        await session.ask("What changed?", Discoveries)
    assert caught.value.kind == "harness" and "Credit balance" in caught.value.detail
    assert session.usage.cost_usd == pytest.approx(0.0123)  # the failed run still cost


@pytest.mark.asyncio
async def test_claude_crash_without_output_names_exit_code_and_stderr(claude: FakeCli) -> None:
    claude.script({"stderr": "Error: Invalid API key · Please run /login", "exit": 1})
    session = session_for(claude, CLAUDE_LANE)
    with pytest.raises(SpecialistFailed) as caught:
        await session.ask("What changed?", Discoveries)
    assert "exited with code 1" in caught.value.detail and "Invalid API key" in caught.value.detail


@pytest.mark.asyncio
async def test_missing_executable_is_a_clear_failure(tmp_path: Path) -> None:
    session = open_session(
        CLAUDE_LANE,
        "graph_discovery",
        deadline=None,
        options=SessionOptions(mode="cli"),
        environ={"PATH": str(tmp_path)},
    )
    with pytest.raises(SpecialistFailed) as caught:
        await session.ask("What changed?", Discoveries)
    assert caught.value.kind == "harness" and "cannot start 'claude'" in caught.value.detail


@pytest.mark.asyncio
async def test_cancellation_kills_and_reaps_a_hanging_claude(claude: FakeCli) -> None:
    claude.script({"sleep": "forever"})
    session = session_for(claude, CLAUDE_LANE)
    pids: dict[str, int] | None = None
    cancelled_at = 0.0
    async with anyio.create_task_group() as group:

        async def ask() -> None:
            await session.ask("What changed?", Discoveries)

        group.start_soon(ask)
        with anyio.fail_after(10):
            while pids is None:
                await anyio.sleep(0.02)
                pids = claude.pids()
        cancelled_at = time.monotonic()
        group.cancel_scope.cancel()
    assert pids is not None
    assert time.monotonic() - cancelled_at < 1.0
    assert process_state(pids["cli"]) is None  # killed and reaped: no zombie left
    # The grandchild was in the CLI's process group: killed too (init may reap it later).
    deadline = time.monotonic() + 1.0
    while process_state(pids["child"]) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process_state(pids["child"]) in (None, "Z")
    assert not session.usage.complete
    assert nothing_to_reap(pids["cli"])


@pytest.mark.asyncio
async def test_deadline_kills_a_hanging_codex(codex: FakeCli) -> None:
    codex.script({"sleep": "forever"})
    session = session_for(codex, CODEX_LANE, seconds=1.0)
    started = time.monotonic()
    with pytest.raises(SpecialistTimedOut):
        await session.ask("What recurs?", Discoveries)
    assert time.monotonic() - started < 2.0
    pids = codex.pids()
    assert pids is not None and process_state(pids["cli"]) is None


@pytest.mark.asyncio
async def test_codex_agent_message_and_usage(codex: FakeCli) -> None:
    codex.script({"stdout": "Reading prompt from stdin...\n" + codex_events(GOOD)})
    session = session_for(codex, CODEX_LANE)
    reply = await session.ask("What recurs?", Discoveries, system="Discover lessons.")
    assert reply.answer == Discoveries.model_validate(GOOD)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (2400, 60)
    assert reply.usage.cost_usd is None
    (call,) = codex.calls()
    argv = call["argv"]
    assert argv[:3] == ["exec", "--json", "--skip-git-repo-check"]
    assert "--sandbox" not in argv  # it would select the older sandbox, which reads anything
    assert 'default_permissions="active_memory_read_only"' in argv
    assert 'approval_policy="never"' in argv and 'web_search="disabled"' in argv
    assert argv[argv.index("--disable") + 1] == "hooks"
    assert 'model_reasoning_effort="xhigh"' in argv  # codex stops at xhigh
    assert argv[-1] == "-" and "resume" not in argv
    assert call["stdin"].startswith("Discover lessons.") and "What recurs?" in call["stdin"]
    assert "OPENAI_API_KEY" in call["env"] and "ANTHROPIC_API_KEY" not in call["env"]


@pytest.mark.asyncio
async def test_codex_repair_turn_resumes_its_thread(codex: FakeCli) -> None:
    codex.script(
        {"stdout": codex_events(BAD, thread_id="t-9")},
        {"stdout": codex_events(GOOD, thread_id="t-9")},
    )
    session = session_for(codex, CODEX_LANE)
    reply = await session.ask("What recurs?", Discoveries)
    assert reply.turns == 2
    second = codex.calls()[1]["argv"]
    assert second[-3:] == ["resume", "t-9", "-"]


@pytest.mark.asyncio
async def test_codex_resumed_turn_counts_the_thread_total_as_a_delta(codex: FakeCli) -> None:
    codex.script(
        {"stdout": codex_events(BAD, thread_id="t-9", input_tokens=1000, output_tokens=10)},
        # After `exec resume`, turn.completed reports the thread's running total.
        {"stdout": codex_events(GOOD, thread_id="t-9", input_tokens=2500, output_tokens=30)},
    )
    session = session_for(codex, CODEX_LANE)
    reply = await session.ask("What recurs?", Discoveries)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (2500, 30)
    assert reply.usage.requests == 2


@pytest.mark.asyncio
async def test_codex_user_sandbox_mode_forces_the_read_only_sandbox(
    codex: FakeCli, tmp_path: Path
) -> None:
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text('sandbox_mode = "danger-full-access"\n')
    codex.script({"stdout": codex_events(GOOD)})
    session = open_session(
        CODEX_LANE,
        "repository_maintenance",
        deadline=anyio.current_time() + 20,
        options=SessionOptions(mode="cli"),
        environ={"PATH": path_with(codex.bin_dir), "CODEX_HOME": str(codex_home)},
    )
    await session.ask("What recurs?", Discoveries)
    argv = codex.calls()[0]["argv"]
    # A config sandbox_mode overrides a permission profile; the read-only floor wins.
    assert 'sandbox_mode="read-only"' in argv
    assert not any(a.startswith("default_permissions") for a in argv)


@pytest.mark.asyncio
async def test_codex_turn_failure_is_reported(codex: FakeCli) -> None:
    codex.script({"stdout": codex_events(failure="stream disconnected before completion")})
    session = session_for(codex, CODEX_LANE)
    with pytest.raises(SpecialistFailed) as caught:
        await session.ask("What recurs?", Discoveries)
    assert caught.value.kind == "harness" and "stream disconnected" in caught.value.detail


@pytest.mark.asyncio
async def test_cli_failure_masks_declared_secrets(codex: FakeCli) -> None:
    codex.script({"stderr": f"401 Unauthorized: key {OPENAI_KEY} rejected", "exit": 1})
    session = session_for(codex, CODEX_LANE)
    with pytest.raises(SpecialistFailed) as caught:
        await session.ask("What recurs?", Discoveries)
    assert OPENAI_KEY not in str(caught.value) and "***" in caught.value.detail
