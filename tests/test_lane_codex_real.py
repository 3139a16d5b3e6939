"""The `codex exec` lane with the real Codex binary against the fake model server.

Answers, the repair turn (a resumed thread whose usage is a running total), the deadline,
and the read-only investigation: the fake model runs commands that write, read outside
the checkout and reach the network, and the tool results Codex sends back show each one
failing, while a read inside the checkout works.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest
from fakes.harness import codex_config, isolated_home, require_harness
from fakes.lanes import BAD, GOOD, Discoveries, lane
from fakes.model_server import ModelServer, answer, text, tool

from active_memory.errors import SpecialistTimedOut
from active_memory.specialists.providers import BaseSession, SessionOptions, open_session

KEY = "sk-proj-REALCODEXTESTkey0123456789abcdef"
LANE = lane(harness="codex", provider="openai", model="gpt-5.1-codex", env=["OPENAI_API_KEY"])


@pytest.fixture
def codex() -> Path:
    return require_harness("codex")


def session(
    codex: Path, server: ModelServer, root: Path, *, cwd: Path | None, seconds: float = 90.0
) -> BaseSession:
    environ = isolated_home(root) | {"OPENAI_API_KEY": KEY}
    codex_config(Path(environ["CODEX_HOME"]), server.openai_url, key_name="OPENAI_API_KEY")
    return open_session(
        LANE,
        "repository_discovery",
        deadline=anyio.current_time() + seconds,
        options=SessionOptions(mode="cli", executable=str(codex), cwd=cwd),
        environ=environ,
    )


@pytest.mark.asyncio
async def test_answer_is_accepted_and_its_usage_counted(codex: Path, tmp_path: Path) -> None:
    with ModelServer([answer(GOOD, input_tokens=800, output_tokens=25)]) as server:
        async with session(codex, server, tmp_path, cwd=None) as s:
            reply = await s.ask("What recurs?", Discoveries, system="Discover lessons.")
    assert reply.answer == Discoveries.model_validate(GOOD)
    [request] = server.model_requests()
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert "Discover lessons." in request.dump() and "What recurs?" in request.dump()
    names = request.tool_names()
    assert "web_search" not in names  # off for a specialist
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.requests) == (
        800,
        25,
        1,
    )


@pytest.mark.asyncio
async def test_repair_turn_resumes_the_thread_and_counts_the_usage_delta(
    codex: Path, tmp_path: Path
) -> None:
    script = [
        answer(BAD, input_tokens=1000, output_tokens=10),
        answer(GOOD, input_tokens=1500, output_tokens=20),
    ]
    with ModelServer(script) as server:
        async with session(codex, server, tmp_path, cwd=None) as s:
            reply = await s.ask("What recurs?", Discoveries)
    _first, second = server.model_requests()
    assert reply.turns == 2 and reply.answer == Discoveries.model_validate(GOOD)
    assert "lessons[0].evidence" in second.dump()
    # The resumed thread holds the bad answer (JSON text inside the JSON request body).
    assert json.dumps(json.dumps(BAD))[1:-1] in second.dump()
    # codex reports the thread's running total after `exec resume` (2500 / 30): the
    # session counts what each request cost, as the server saw it.
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (2500, 30)
    assert reply.usage.requests == 2


@pytest.mark.asyncio
async def test_investigation_reads_inside_the_checkout_and_cannot_write_or_reach_out(
    codex: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "client.py").write_text("def regenerate_client():\n    return 42\n")
    (tmp_path / "outside.txt").write_text("OUTSIDE-SECRET\n")
    with ModelServer() as server:
        server.push(
            tool("exec_command", {"cmd": "cat src/client.py"}),
            tool("exec_command", {"cmd": "touch written.txt"}),
            tool("exec_command", {"cmd": f"cat {tmp_path / 'outside.txt'}"}),
            tool("exec_command", {"cmd": f"curl -sS -m 3 {server.url}/v1/models"}),
            answer(GOOD),
        )
        async with session(codex, server, tmp_path, cwd=repo) as s:
            reply = await s.ask("Verify the client.", Discoveries)
    assert reply.answer == Discoveries.model_validate(GOOD)
    requests = server.model_requests()
    results = requests[-1].tool_results()
    assert "def regenerate_client" in results[0]
    assert "exited with code 0" in results[0]
    assert "Read-only file system" in results[1] or "exited with code 1" in results[1]
    assert "OUTSIDE-SECRET" not in results[2]
    assert '"data"' not in results[3] and "exited with code 0" not in results[3]
    assert sorted(p.name for p in repo.iterdir()) == ["src"]
    # No model request came from inside the sandbox: only codex's own turns reached it.
    assert all(r.route == "/v1/responses" for r in server.received)
    assert reply.usage.tool_calls >= 3
    # codex's sandbox helpers (bwrap) outlive codex itself; the lane kills its group.
    assert leftovers(str(repo)) == []


def leftovers(marker: str) -> list[int]:
    """PIDs of live processes whose command line names `marker`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            command = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in command:
            found.append(int(proc.name))
    return found


@pytest.mark.asyncio
async def test_deadline_stops_a_hanging_model(codex: Path, tmp_path: Path) -> None:
    with ModelServer([text("never sent", hang=True)]) as server:
        s = session(codex, server, tmp_path, cwd=None, seconds=4.0)
        started = time.monotonic()
        with pytest.raises(SpecialistTimedOut):
            await s.ask("What recurs?", Discoveries)
        elapsed = time.monotonic() - started
        await s.aclose()
    assert elapsed < 10.0
    assert s.usage.complete is False
