"""A session of the real `claude` (2.1.332) whose Bash calls end in the background.

Claude Code moves a Bash call still running at its `timeout` to the background, unless
the command starts with `sleep` (then it kills it: `Exit code 143`); a call with
`run_in_background` starts there. A `<task-notification>` says later how each ended:
queued into the running turn as an `attachment` (`queued_command`), or, when it comes
after the turn's last answer, as a `user` line that opens a turn of its own (`-p` waits
for the background commands before it exits).

The scripted model (fakes/model_server.py) asks, in order:

1. `make-like` failing after 4 s with a 2 s timeout: moved, then `failed`, exit 2;
2. passing after 4 s with a 2 s timeout: moved, then `completed`;
3. failing after 3 s with `run_in_background`: started there, then `failed`, exit 2;
4. `sleep 5; false` with a 2 s timeout: killed, `Exit code 143`;
5. a 7 s wait in the foreground, while 1-3 end (their notifications queued into it);
6. failing after 6 s with a 2 s timeout, then the final answer: its notification
   (`failed`, exit 3) arrives after the turn.

`tests/test_claude_background_real.py` runs it live and reads the committed capture
(`tests/fixtures/sessions/claude-2.1.332-background-real/`), made by running this file:

    ACTIVE_MEMORY_TEST_CLAUDE=… python tests/background_sessions.py

(the log cleaned as tests/failure_sessions.py cleans its captures).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from failure_sessions import clean
from fakes import harness, model_server
from fakes.model_wire import Turn, text, tool

PROMPT = "Run the checks"


def _python(seconds: int, code: int = 0, line: str = "") -> str:
    body = f"import sys,time; time.sleep({seconds}); print({line!r}); sys.exit({code})"
    return f'python3 -c "{body}"'


FAILS_LATE = _python(4, 2, "2 checks failed")
PASSES_LATE = _python(4, 0, "all checks passed")
FAILS_IN_BACKGROUND = _python(3, 2, "lint failed")
KILLED = "sleep 5; false"
WAIT = _python(7)
FAILS_AFTER_THE_TURN = _python(6, 3, "deploy check failed")


def script() -> list[Turn]:
    """What the scripted model asks Claude Code to run, in order."""

    def bash(command: str, description: str, **extra: object) -> Turn:
        return tool("Bash", {"command": command, "description": description, **extra})

    return [
        bash(FAILS_LATE, "checks", timeout=2000),
        bash(PASSES_LATE, "slow checks", timeout=2000),
        bash(FAILS_IN_BACKGROUND, "lint", run_in_background=True),
        bash(KILLED, "wait then fail", timeout=2000),
        bash(WAIT, "wait", timeout=30000),
        bash(FAILS_AFTER_THE_TURN, "deploy check", timeout=2000),
        text("Started the deploy check."),
    ]


def record(root: Path) -> Path:
    """Run the session with the real `claude` in `root`; return its transcript."""
    binary = harness.require_harness("claude")
    work = root / "work"
    work.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    no_tools = lambda received: not received.tool_names()  # noqa: E731
    with model_server.ModelServer(script=script(), default=text("ok"), side=no_tools) as server:
        env = harness.claude_environment(root, server.url, "sk-fake") | {"IS_SANDBOX": "1"}
        subprocess.run(
            [str(binary), "-p", PROMPT, "--permission-mode", "bypassPermissions",
             "--output-format", "json"],
            cwd=work, env=env, capture_output=True, text=True, timeout=300, check=True,
        )  # fmt: skip
    (transcript,) = (root / "home" / ".claude" / "projects").glob("*/*.jsonl")
    return transcript


def main() -> None:
    """Record the session and print where the cleaned log is."""
    root = Path(tempfile.mkdtemp(prefix="background-session-"))
    log = record(root)
    out = root.parent / f"{root.name}-{log.name}"
    out.write_text(clean(log, root), encoding="utf-8")
    print(out)


if __name__ == "__main__":
    main()
