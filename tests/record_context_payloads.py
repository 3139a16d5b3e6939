"""Record what the real binaries send their hooks about contexts (sub-agents, compaction,
interruption), for tests/fixtures/harness_payloads/<harness>-<version>-contexts.jsonl.

    ACTIVE_MEMORY_TEST_CODEX=… .venv/bin/python tests/record_context_payloads.py codex
    (codex | copilot | gemini | pi; the fixture is written beside the others)

Each scenario runs the real binary in `/tmp/am-contexts/work` (a fixed folder, which the
tests replace with their own checkout), with an isolated HOME and the scripted fake
model server (tests/fakes/), and a recording hook on every event the harness has: a
shell script that appends its stdin (Copilot CLI: and the event, which its payloads do
not name) to a file. Pi has no hooks of its own: its lines are what our extension
(installed by `hook install pi --user`, its hook command a recording wrapper) sends.
Fields that hold model text or long tool output are cut; everything else is as sent.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from fakes.agent_scripts import CODEX, COPILOT, GEMINI, PI, AgentScripts
from fakes.harness import codex_config, isolated_home
from fakes.model_server import ModelServer, Received, text, tool

from active_memory.hooks.installers import codex_trust

ROOT = Path("/tmp/am-contexts")
WORK = ROOT / "work"
LOG = ROOT / "events.jsonl"
FIXTURES = Path(__file__).parent / "fixtures" / "harness_payloads"
VERSIONS = {"codex": "0.171.0", "copilot": "1.0.102", "gemini": "0.61.0", "pi": "0.73.1"}
WAIT = 'python3 -c "import time; time.sleep(60)" && cat a.py'
CUT = ("last_assistant_message", "prompt_response", "response", "traceparent", "tracestate")

Run = Callable[[dict[str, str]], None]


def _binary(name: str) -> str:
    path = os.environ.get(f"ACTIVE_MEMORY_TEST_{name.upper()}") or shutil.which(name)
    if not path:
        raise SystemExit(f"set ACTIVE_MEMORY_TEST_{name.upper()} to the {name} binary")
    return path


def _fresh() -> dict[str, str]:
    shutil.rmtree(ROOT, ignore_errors=True)
    WORK.mkdir(parents=True)
    for name in "ab":
        (WORK / f"{name}.py").write_text(f"{name.upper()} = 1\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(WORK), "init", "-q"], check=True)
    return isolated_home(ROOT)


def _recorder(with_event: bool) -> Path:
    script = ROOT / "record.sh"
    line = '{"event": "%s", "input": %s}' if with_event else "%s"
    values = '"$1" "$input"' if with_event else '"$input"'
    script.write_text(f"#!/bin/sh\ninput=\"$(cat)\"\nprintf '{line}\\n' {values} >> {LOG}\n")
    script.chmod(0o755)
    return script


def _cut(value: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in value.items() if k not in CUT}
    for key in ("tool_response", "toolResult"):
        if key in kept and len(json.dumps(kept[key])) > 200:
            kept[key] = "(cut)"
    return kept


def _lines(scenario: str) -> list[dict[str, Any]]:
    found = []
    for raw in LOG.read_text(encoding="utf-8").splitlines() if LOG.exists() else []:
        record = json.loads(raw)
        if "input" in record and "event" in record:
            found.append(
                {"scenario": scenario, "event": record["event"], "input": _cut(record["input"])}
            )
        else:
            found.append({"scenario": scenario, "input": _cut(record)})
    return found


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(
        argv, cwd=WORK, env=env, capture_output=True, text=True, timeout=240, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed: {done.stderr[-2000:]}")


def _interrupt(argv: list[str], env: dict[str, str], started: Callable[[], bool]) -> None:
    """Run `argv`, and SIGINT it once `started()` (its call is running)."""
    with subprocess.Popen(
        argv, cwd=WORK, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as running:
        for _ in range(1200):
            if started() or running.poll() is not None:
                break
            time.sleep(0.05)
        time.sleep(1)
        running.send_signal(signal.SIGINT)
        running.wait(60)


def _logged(word: str) -> Callable[[], bool]:
    return lambda: LOG.exists() and word in LOG.read_text(encoding="utf-8")


# Codex ---------------------------------------------------------------------------------

CODEX_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "SessionStart",
    "UserPromptSubmit",
    "SubagentStart",
    "SubagentStop",
    "Stop",
)


def _codex(scenario: str, scripts: AgentScripts, runs: list[Run], limit: int = 0) -> list[Any]:
    env = _fresh() | {"FAKE_OPENAI_KEY": "sk-test"}
    script = _recorder(with_event=False)
    document = {
        "hooks": {
            e: [{"hooks": [{"type": "command", "command": str(script), "timeout": 10}]}]
            for e in CODEX_EVENTS
        }
    }
    hooks = Path(env["CODEX_HOME"]) / "hooks.json"
    with ModelServer(respond=scripts) as server:
        config = codex_config(Path(env["CODEX_HOME"]), server.openai_url)
        if limit:
            config.write_text(f"model_auto_compact_token_limit = {limit}\n" + config.read_text())
        hooks.write_text(json.dumps(document))
        trust = codex_trust.plan_trust(config, hooks, {}, document, lambda _e, _h: True)
        config.write_text(trust.after or "")
        for run in runs:
            run(env)
    return _lines(scenario)


def record_codex() -> list[Any]:
    """Sub-agent, automatic compaction, interruption then resume."""
    codex = _binary("codex")
    base = [
        codex,
        "exec",
        "--skip-git-repo-check",
        "--sandbox",
        "danger-full-access",
        "--model",
        "gpt-5-codex",
    ]

    def wait(received: Received) -> Any:
        agent = json.loads(received.tool_results()[-1])["agent_id"]
        return tool(
            "wait_agent", {"targets": [agent], "timeout_ms": 60000}, namespace="multi_agent_v1"
        )

    cat = tool("exec_command", {"cmd": "cat a.py"})
    spawn = tool("spawn_agent", {"message": "Read a.py"}, namespace="multi_agent_v1")
    lines = _codex(
        "sub",
        AgentScripts(main=[spawn, wait, cat], sub=[cat, text("found")], harness=CODEX),
        [lambda e: _run([*base, "go"], e)],
    )
    big = tool("exec_command", {"cmd": "cat a.py"}, input_tokens=50_000)
    lines += _codex(
        "compact",
        AgentScripts(main=[big, cat], harness=CODEX),
        [lambda e: _run([*base, "read a.py"], e)],
        limit=1000,
    )
    slow = tool("exec_command", {"cmd": WAIT})
    lines += _codex(
        "interrupt",
        AgentScripts(main=[slow, cat], harness=CODEX),
        [
            lambda e: _interrupt([*base, "run it"], e, _logged("PreToolUse")),
            lambda e: _run([*base, "resume", "--last", "again"], e),
        ],
    )
    return lines


# Copilot CLI ---------------------------------------------------------------------------

COPILOT_EVENTS = (
    "sessionStart",
    "userPromptSubmitted",
    "preToolUse",
    "postToolUse",
    "postToolUseFailure",
    "preCompact",
    "subagentStart",
    "subagentStop",
    "agentStop",
    "errorOccurred",
)


def _copilot(scenario: str, scripts: AgentScripts, runs: list[Run], **extra: str) -> list[Any]:
    env = _fresh()
    script = _recorder(with_event=True)
    hooks = Path(env["HOME"]) / ".copilot" / "hooks"
    hooks.mkdir(parents=True)
    handlers = {
        e: [{"type": "command", "bash": f"{script} {e}", "timeoutSec": 5}] for e in COPILOT_EVENTS
    }
    (hooks / "record.json").write_text(json.dumps({"version": 1, "hooks": handlers}))
    with ModelServer(respond=scripts) as server:
        env |= {
            "COPILOT_PROVIDER_BASE_URL": server.openai_url,
            "COPILOT_PROVIDER_API_KEY": "sk-test",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_MODEL": "gpt-5.1",
            "COPILOT_OFFLINE": "true",
            "XDG_CACHE_HOME": str(ROOT.parent / "am-contexts-cache"),
        } | extra
        for run in runs:
            run(env)
    return _lines(scenario)


def record_copilot() -> list[Any]:
    """Sub-agent, automatic and manual compaction, interruption then resume."""
    copilot = _binary("copilot")

    def ran(*args: str) -> Run:
        return lambda env: _run([copilot, *args, "--allow-all-tools"], env)

    def resumed(*args: str) -> Run:
        def run(env: dict[str, str]) -> None:
            session = json.loads(LOG.read_text().splitlines()[0])["input"]["sessionId"]
            ran(f"--resume={session}", *args)(env)

        return run

    view = tool("view", {"path": str(WORK / "a.py")})
    task = tool(
        "task",
        {
            "description": "look at a",
            "prompt": "Read a.py",
            "agent_type": "explore",
            "name": "looker",
        },
    )
    lines = _copilot(
        "sub",
        AgentScripts(main=[task, view], sub=[view, text("found")], harness=COPILOT),
        [ran("-p", "go")],
    )
    big = tool("view", {"path": str(WORK / "a.py")}, input_tokens=57_000)
    lines += _copilot(
        "compact",
        AgentScripts(main=[big, view], harness=COPILOT),
        [ran("-p", "read a.py")],
        COPILOT_PROVIDER_MAX_PROMPT_TOKENS="60000",
    )
    lines += _copilot(
        "manual",
        AgentScripts(main=[view], harness=COPILOT),
        [ran("-p", "read a.py"), resumed("-p", "/compact")],
    )
    slow = tool("bash", {"command": WAIT, "description": "wait"})
    lines += _copilot(
        "interrupt",
        AgentScripts(main=[slow, view], harness=COPILOT),
        [
            lambda e: _interrupt(
                [copilot, "-p", "run it", "--allow-all-tools"], e, _logged("preToolUse")
            ),
            resumed("-p", "again"),
        ],
    )
    return lines


# Gemini CLI ----------------------------------------------------------------------------

GEMINI_EVENTS = (
    "BeforeTool",
    "AfterTool",
    "PreCompress",
    "SessionStart",
    "BeforeAgent",
    "AfterAgent",
)


def _gemini(scenario: str, scripts: AgentScripts, runs: list[Run]) -> list[Any]:
    env = _fresh()
    script = _recorder(with_event=False)
    settings = Path(env["HOME"]) / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    handler = {"name": "record", "type": "command", "command": str(script), "timeout": 5000}
    settings.write_text(
        json.dumps(
            {
                "security": {
                    "auth": {"selectedType": "gemini-api-key"},
                    "folderTrust": {"enabled": False},
                },
                "privacy": {"usageStatisticsEnabled": False},
                "hooks": {e: [{"matcher": "*", "hooks": [handler]}] for e in GEMINI_EVENTS},
            }
        )
    )
    with ModelServer(respond=scripts) as server:
        env |= {
            "GOOGLE_GEMINI_BASE_URL": server.url,
            "GEMINI_API_KEY": "fake-key",
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
        for run in runs:
            run(env)
    # The automatic PreCompress fires before every turn; keep its first two.
    lines = _lines(scenario)
    automatic = [i for i, x in enumerate(lines) if x["input"].get("trigger") == "auto"]
    return [x for i, x in enumerate(lines) if i not in automatic[2:]]


def record_gemini() -> list[Any]:
    """A sub-agent (`invoke_agent` codebase_investigator), `/compress` on a resumed session."""
    gemini = _binary("gemini")
    base = [gemini, "--yolo", "-m", "gemini-2.5-flash"]
    read = tool("read_file", {"file_path": str(WORK / "a.py")})
    invoke = tool(
        "invoke_agent", {"agent_name": "codebase_investigator", "prompt": "Read a.py and report"}
    )
    report = tool(
        "complete_task",
        {"report": {"SummaryOfFindings": "A = 1", "ExplorationTrace": [], "RelevantLocations": []}},
    )
    lines = _gemini(
        "sub",
        AgentScripts(main=[invoke, read], sub=[read, report], harness=GEMINI),
        [lambda e: _run([*base, "-p", "go"], e)],
    )
    lines += _gemini(
        "compress",
        AgentScripts(main=[read], harness=GEMINI),
        [
            lambda e: _run([*base, "-p", "read a.py"], e),
            lambda e: _run([*base, "--resume", "latest", "-p", "/compress"], e),
        ],
    )
    return lines


# Pi ------------------------------------------------------------------------------------


def record_pi() -> list[Any]:
    """What our extension sends: a read, then `session_compact` after an RPC compact."""
    pi = _binary("pi")
    env = _fresh() | {"FAKE_PI_KEY": "sk-test", "PI_OFFLINE": "1"}
    wrapper = ROOT / "bin" / "active-memory-hook"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\ninput="$(cat)"\nprintf \'%s\\n\' "$input" >> {LOG}\n')
    wrapper.chmod(0o755)
    cli = Path(sys.executable).parent / "active-memory"
    subprocess.run(
        [str(cli), "hook", "install", "pi", "--user", "--hook-command", str(wrapper)],
        cwd=WORK,
        env=env,
        capture_output=True,
        check=True,
    )
    read = tool("read", {"path": "a.py"})
    scripts = AgentScripts(main=[read, text("done")], harness=PI)
    with ModelServer(respond=scripts) as server:
        agent = Path(env["HOME"]) / ".pi" / "agent"
        provider = {
            "baseUrl": server.openai_url,
            "api": "openai-completions",
            "apiKey": "FAKE_PI_KEY",
            "models": [{"id": "fake-model"}],
        }
        (agent / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
        command = [pi, "--mode", "rpc", "--provider", "fake", "--model", "fake-model"]
        with subprocess.Popen(
            command,
            cwd=WORK,
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        ) as rpc:
            assert rpc.stdin is not None and rpc.stdout is not None
            for line, done in (
                ({"type": "prompt", "message": "read a.py"}, "agent_end"),
                ({"type": "compact"}, "compaction_end"),
            ):
                rpc.stdin.write(json.dumps(line) + "\n")
                rpc.stdin.flush()
                for out in rpc.stdout:
                    if json.loads(out).get("type") == done:
                        break
            rpc.stdin.close()
            rpc.wait(60)
    return _lines("compact")


def main() -> None:
    """Record one harness's scenarios into its fixture file."""
    harness = sys.argv[1] if len(sys.argv) == 2 else ""
    recorders = {
        "codex": record_codex,
        "copilot": record_copilot,
        "gemini": record_gemini,
        "pi": record_pi,
    }
    if harness not in recorders:
        raise SystemExit(f"usage: record_context_payloads.py {'|'.join(recorders)}")
    lines = recorders[harness]()
    target = FIXTURES / f"{harness}-{VERSIONS[harness]}-contexts.jsonl"
    target.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    print(f"{len(lines)} payloads written to {target}")


if __name__ == "__main__":
    main()
