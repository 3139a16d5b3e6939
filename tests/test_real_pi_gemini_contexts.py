"""Compaction with the real `pi` 0.73 and `gemini` 0.61 (isolated HOME, fake model server
on loopback, the extension or hooks `hook install pi|gemini --user` writes).

- Pi: `/compact` driven through RPC mode (`pi --mode rpc`, `{"type": "compact"}`), with
  `compaction.keepRecentTokens` at 1 so the first read is summarised; our extension's
  `session_compact` handler starts the ledger again and the next read gets the card.
- Gemini CLI: `/compress` typed in the interactive UI (`gemini --resume latest` on a
  pseudo-terminal); its `PreCompress` (trigger `manual`) starts the ledger again and the
  next read gets the card. `gemini -p /compress` is no way to drive it: the compression
  runs but is not kept (the prompt then goes to the model with the whole history), and
  `-i /compress` may reach the model as text before the UI has loaded its commands.

Neither payload names a sub-agent (Pi has none; Gemini CLI's `invoke_agent` sub-agents
send the session's own `session_id`: tests/test_context_payloads.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

from fakes.agent_scripts import GEMINI, PI, AgentScripts
from fakes.harness import isolated_home, require_harness
from fakes.model_server import ModelServer, Received, text, tool
from recall_support import publish, repository_lesson

CLI = Path(sys.executable).parent / "active-memory"
CARD = "Regenerate a.py with make a; never edit it by hand."


def _world(tmp_path: Path, harness: str) -> tuple[Path, dict[str, str]]:
    work = tmp_path / "work"
    work.mkdir()
    git = ["git", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", "git@github.com:acme/api.git"], check=True)
    (work / "a.py").write_text("A = 1\n", encoding="utf-8")
    store = tmp_path / "lessons.sqlite3"
    publish(store, [repository_lesson("Card for a", CARD, files=["a.py"])])
    env = isolated_home(tmp_path) | {
        "ZEROSHOT_STATE_DIR": str(tmp_path / "state"),
        "ACTIVE_MEMORY_STORE": str(store),
    }
    if harness == "gemini":
        settings = Path(env["HOME"]) / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True)
        settings.write_text(json.dumps({
            "security": {"auth": {"selectedType": "gemini-api-key"},
                         "folderTrust": {"enabled": False}},
            "privacy": {"usageStatisticsEnabled": False},
        }))  # fmt: skip
    subprocess.run([str(CLI), "hook", "install", harness, "--user"], cwd=work, env=env,
                   capture_output=True, check=True)  # fmt: skip
    return work, env


def _counts(requests: list[Received]) -> list[int]:
    return [r.dump().count(CARD) for r in requests]


def test_after_a_pi_compaction_a_matching_read_gets_the_card_again(tmp_path: Path) -> None:
    pi = require_harness("pi")
    work, env = _world(tmp_path, "pi")
    read = tool("read", {"path": "a.py"})
    scripts = AgentScripts(main=[read, text("done"), read], harness=PI)
    agent = Path(env["HOME"]) / ".pi" / "agent"
    with ModelServer(respond=scripts) as server:
        provider = {"baseUrl": server.openai_url, "api": "openai-completions",
                    "apiKey": "FAKE_PI_KEY", "models": [{"id": "fake-model"}]}  # fmt: skip
        (agent / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
        (agent / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 1}}))
        command = [str(pi), "--mode", "rpc", "--provider", "fake", "--model", "fake-model"]
        pi_env = env | {"FAKE_PI_KEY": "sk-test", "PI_OFFLINE": "1"}
        pipe = subprocess.PIPE
        with subprocess.Popen(
            command, cwd=work, env=pi_env, text=True, stdin=pipe, stdout=pipe, stderr=pipe
        ) as rpc:
            assert rpc.stdin is not None and rpc.stdout is not None
            watchdog = threading.Timer(180, rpc.kill)
            watchdog.start()
            try:
                for command_line, done in (
                    ({"type": "prompt", "message": "read a.py"}, "agent_end"),
                    ({"type": "compact"}, "compaction_end"),
                    ({"type": "prompt", "message": "read a.py again"}, "agent_end"),
                ):
                    rpc.stdin.write(json.dumps(command_line) + "\n")
                    rpc.stdin.flush()
                    for line in rpc.stdout:
                        if json.loads(line).get("type") == done:
                            break
                rpc.stdin.close()
                rpc.wait(60)
            finally:
                watchdog.cancel()
                rpc.kill()
    # The first read was summarised (with its card) ...
    assert any(CARD in r.dump() for r in scripts.requests("compact"))
    # The read's result carried the card; after the compaction the history holds none
    # of it, and the next read's result brings it back.
    assert _counts(scripts.requests("main")) == [0, 1, 0, 1]


class _Terminal:
    """A process on a pseudo-terminal of 40 rows and 120 columns (the UI draws its prompt
    box in it), its screen output read as it comes."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the program
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.screen = b""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                self.screen += chunk

    def shown(self, since: int = 0) -> str:
        """What the UI printed after byte `since`, terminal escapes removed."""
        return ESCAPES.sub("", self.screen[since:].decode("utf-8", "replace"))

    def type(self, keys: str) -> None:
        for key in keys:
            os.write(self.fd, key.encode())
            time.sleep(0.02)

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        os.waitpid(self.pid, 0)
        os.close(self.fd)


ESCAPES = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07]*\x07")
PROMPT_BOX = "Type your message"


def _until(condition: Callable[[], bool], what: str, seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.1)


def _submit(terminal: _Terminal, sent: Callable[[], bool]) -> None:
    """Press Enter until the prompt is sent: keys that follow typing closely may be taken
    as part of a paste (a new line in the box) or pick the command's suggestion, so one
    Enter is not always enough."""
    for _ in range(10):
        time.sleep(0.5)
        terminal.type("\r")
        end = time.monotonic() + 5
        while time.monotonic() < end:
            if sent():
                return
            time.sleep(0.1)
    raise AssertionError("the typed prompt was never sent")


def test_after_a_gemini_compress_a_matching_read_gets_the_card_again(tmp_path: Path) -> None:
    gemini = require_harness("gemini")
    work, env = _world(tmp_path, "gemini")
    read = tool("read_file", {"file_path": str(work / "a.py")})
    scripts = AgentScripts(main=[read, text("done"), read], harness=GEMINI)
    with ModelServer(respond=scripts) as server:
        gemini_env = env | {"GOOGLE_GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": "fake-key",
                            "GEMINI_CLI_NO_RELAUNCH": "true", "TERM": "xterm-256color"}  # fmt: skip
        base = [str(gemini), "--yolo", "-m", "gemini-2.5-flash"]
        done = subprocess.run([*base, "-p", "read a.py"], cwd=work, env=gemini_env,
                              capture_output=True, timeout=180, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        terminal = _Terminal([*base, "--resume", "latest"], work, gemini_env)
        try:
            # Each key goes in once the UI shows it is ready for it: the prompt box, the
            # command's suggestion (commands load after the box), the compression's note.
            _until(lambda: PROMPT_BOX in terminal.shown(), "the prompt box")
            mark = len(terminal.screen)
            terminal.type("/compress")
            _until(lambda: "Compresses the context" in terminal.shown(mark), "/compress")
            _submit(terminal, lambda: bool(scripts.requests("compact")))
            _until(lambda: "history compressed" in terminal.shown(mark), "the compression")
            time.sleep(1)  # the prompt box is drawn again below the note
            mark = len(terminal.screen)
            terminal.type("read a.py again")
            _until(lambda: "a.py again" in terminal.shown(mark), "the typed prompt")
            _submit(terminal, lambda: len(scripts.requests("main")) > 2)
            _until(lambda: len(scripts.requests("main")) == 4, "the second read's result")
        finally:
            terminal.close()
    assert len(scripts.requests("compact")) == 2  # the snapshot, then its check
    # After /compress the history holds none of the first card; the read brings it back.
    assert _counts(scripts.requests("main")) == [0, 1, 0, 1]
