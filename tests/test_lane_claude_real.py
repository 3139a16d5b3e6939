"""The `claude -p` lane with the real Claude Code binary against the fake model server.

Answers, the repair turn, usage, the deadline, and the read-only investigation: the fake
model asks for a write, a shell command and a read outside the checkout, and the tool
results Claude Code sends back show each one refused, while a read inside works.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest
from fakes.harness import isolated_home, require_harness
from fakes.lanes import BAD, GOOD, Discoveries, lane
from fakes.model_server import ModelServer, Received, answer, text, tool

from active_memory.errors import SpecialistTimedOut
from active_memory.specialists.providers import BaseSession, SessionOptions, open_session

KEY = "sk-ant-api03-REALCLAUDETESTkey0123456789"
LANE = lane(effort="high", env=["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"])


@pytest.fixture
def claude() -> Path:
    return require_harness("claude")


def session(
    claude: Path, server: ModelServer, root: Path, *, cwd: Path | None, seconds: float = 90.0
) -> BaseSession:
    environ = isolated_home(root) | {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url}
    return open_session(
        LANE,
        "repository_discovery",
        deadline=anyio.current_time() + seconds,
        options=SessionOptions(mode="cli", executable=str(claude), cwd=cwd),
        environ=environ,
    )


def checkout(root: Path) -> Path:
    folder = root / "repo"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "client.py").write_text("def regenerate_client():\n    return 42\n")
    (root / "outside.txt").write_text("OUTSIDE-SECRET\n")
    return folder


@pytest.mark.asyncio
async def test_answer_through_structured_output_with_a_small_request(
    claude: Path, tmp_path: Path
) -> None:
    with ModelServer([answer(GOOD, input_tokens=700, output_tokens=40)]) as server:
        async with session(claude, server, tmp_path, cwd=None) as s:
            reply = await s.ask("What changed?", Discoveries, system="Discover lessons.")
    assert reply.answer == Discoveries.model_validate(GOOD)
    [request] = server.model_requests()
    # Only the specialist's instructions and the answer tool: no Claude Code system
    # prompt, no tool schemas it does not need (87 KB before, see bench/README.md).
    assert request.tool_names() == ["StructuredOutput"]
    system = json.dumps(request.body["system"])
    assert "Discover lessons." in system and "You are an agent" not in system
    assert request.raw_size < 6000
    assert "What changed?" in request.dump()
    assert (reply.usage.requests, reply.usage.input_tokens, reply.usage.output_tokens) == (
        1,
        700,
        40,
    )
    assert reply.usage.tool_calls == 0


@pytest.mark.asyncio
async def test_exhausted_structured_output_retries_get_the_repair_turn_and_all_are_counted(
    claude: Path, tmp_path: Path
) -> None:
    # Claude Code validates StructuredOutput itself (our schema says evidence needs an
    # item) and retries; when its retries run out it reports
    # error_max_structured_output_retries with an empty result. That is our repair turn.
    def first_run(request: Received) -> bool:
        return "Your previous answer was not accepted" not in request.dump()

    bad = [answer(BAD, input_tokens=500, output_tokens=20, when=first_run) for _ in range(6)]
    with ModelServer(bad, default=answer(GOOD, input_tokens=900, output_tokens=30)) as server:
        async with session(claude, server, tmp_path, cwd=None) as s:
            reply = await s.ask("What changed?", Discoveries)
    requests = server.model_requests()
    assert reply.answer == Discoveries.model_validate(GOOD) and reply.turns == 2
    repair = requests[-1].dump()
    assert "lessons[0].evidence" in repair and "## assistant" in repair
    # Every request counts, including the failed run's last one its result leaves out.
    failed = len(requests) - 1
    assert failed >= 2
    assert reply.usage.requests == len(requests)
    assert reply.usage.input_tokens == failed * 500 + 900


@pytest.mark.asyncio
async def test_investigation_reads_inside_the_checkout_and_nothing_else(
    claude: Path, tmp_path: Path
) -> None:
    repo = checkout(tmp_path)
    script = [
        tool("Read", {"file_path": str(repo / "src" / "client.py")}),
        tool("Grep", {"pattern": "regenerate_client"}),
        tool("Write", {"file_path": str(repo / "written.txt"), "content": "x"}),
        tool("Bash", {"command": "touch ran.txt"}),
        tool("WebFetch", {"url": "http://127.0.0.1:9/", "prompt": "read"}),
        tool("Read", {"file_path": str(tmp_path / "outside.txt")}),
        answer(GOOD),
    ]
    with ModelServer(script) as server:
        async with session(claude, server, tmp_path, cwd=repo) as s:
            reply = await s.ask("Verify the client.", Discoveries)
    assert reply.answer == Discoveries.model_validate(GOOD)
    requests = server.model_requests()
    assert requests[0].tool_names() == ["Glob", "Grep", "Read", "StructuredOutput"]
    assert str(repo) in json.dumps(requests[0].body["system"])  # told where to read
    results = requests[-1].tool_results()
    assert "def regenerate_client" in results[0]
    assert "src/client.py" in results[1]
    assert "No such tool available: Write" in results[2]
    assert "No such tool available: Bash" in results[3]
    assert "No such tool available: WebFetch" in results[4]
    assert "denied" in results[5] and "OUTSIDE-SECRET" not in results[5]
    assert sorted(p.name for p in repo.iterdir()) == ["src"]  # nothing written or run
    assert (reply.usage.tool_calls, reply.usage.tool_errors) == (6, 4)
    assert reply.usage.requests == len(requests)


@pytest.mark.asyncio
async def test_deadline_stops_a_hanging_model_and_marks_usage_incomplete(
    claude: Path, tmp_path: Path
) -> None:
    with ModelServer([text("never sent", hang=True)]) as server:
        s = session(claude, server, tmp_path, cwd=None, seconds=4.0)
        started = time.monotonic()
        with pytest.raises(SpecialistTimedOut):
            await s.ask("What changed?", Discoveries)
        elapsed = time.monotonic() - started
        await s.aclose()
    assert elapsed < 10.0
    assert s.usage.complete is False
    assert len(server.model_requests()) >= 1


@pytest.mark.asyncio
async def test_checkout_settings_and_every_hook_stay_out_of_a_specialist(
    claude: Path, tmp_path: Path
) -> None:
    repo = checkout(tmp_path)
    ran = tmp_path / "hook-ran"
    hook = {"hooks": [{"type": "command", "command": f"touch {ran}"}]}
    hooks = {event: [hook] for event in ("SessionStart", "UserPromptSubmit", "PreToolUse")}
    # The repository's own settings try to widen reads and run hooks.
    (repo / ".claude").mkdir()
    project = {"permissions": {"allow": ["Read(//**)"]}, "hooks": hooks}
    (repo / ".claude" / "settings.json").write_text(json.dumps(project))
    script = [tool("Read", {"file_path": str(tmp_path / "outside.txt")}), answer(GOOD)]
    with ModelServer(script) as server:
        s = session(claude, server, tmp_path, cwd=repo)
        # The user's own hooks (e.g. Active Memory's) must not fire for a specialist either.
        home = Path(isolated_home(tmp_path)["HOME"])
        (home / ".claude").mkdir(exist_ok=True)
        (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
        async with s:
            reply = await s.ask("Verify.", Discoveries)
    assert reply.answer == Discoveries.model_validate(GOOD)
    [result] = server.model_requests()[-1].tool_results()
    assert "denied" in result and "OUTSIDE-SECRET" not in result
    assert not ran.exists()
