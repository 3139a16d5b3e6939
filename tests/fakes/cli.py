"""Fake `claude` and `codex` executables on PATH, and their output in the real formats.

`claude -p --output-format json` prints one result object; `codex exec --json` prints
JSON Lines events (thread.started, turn.started, item.completed, turn.completed).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROGRAM = Path(__file__).with_name("fake_cli.py")


@dataclass
class FakeCli:
    """One fake executable: script its steps, then read what it was called with."""

    name: str
    folder: Path
    bin_dir: Path

    def script(self, *steps: dict[str, Any]) -> None:
        """The steps of successive runs (the last one repeats)."""
        (self.folder / "script.json").write_text(json.dumps(list(steps)), encoding="utf-8")

    def calls(self) -> list[dict[str, Any]]:
        """Every run so far: argv, stdin and environment names."""
        log = self.folder / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]

    def pids(self) -> dict[str, int] | None:
        """The PIDs a hanging run wrote (its own and its grandchild's), once written."""
        path = self.folder / "pids.json"
        if not path.exists():
            return None
        try:
            value: dict[str, int] = json.loads(path.read_text())
        except json.JSONDecodeError:
            return None  # caught mid-write
        return value


def install_fake(name: str, root: Path) -> FakeCli:
    """Write `root/bin/<name>`: a Python script that runs `fake_cli.py` in `root/<name>`."""
    bin_dir = root / "bin"
    folder = root / name
    bin_dir.mkdir(parents=True, exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    executable = bin_dir / name
    executable.write_text(
        f"#!{sys.executable}\n"
        "import os, runpy, sys\n"
        f"os.environ['FAKE_CLI_DIR'] = {str(folder)!r}\n"
        f"runpy.run_path({str(PROGRAM)!r}, run_name='__main__')\n",
        encoding="utf-8",
    )
    executable.chmod(executable.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return FakeCli(name, folder, bin_dir)


def path_with(bin_dir: Path) -> str:
    """PATH with the fakes first."""
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def claude_result(
    answer: Any = None,
    *,
    text: str | None = None,
    session_id: str = "8f0c9a52-3b1e-4d7a-9c55-2f1e0b7d4a10",
    cost: float = 0.0123,
    input_tokens: int = 30,
    cache_read: int = 1200,
    output_tokens: int = 50,
    is_error: bool = False,
    subtype: str = "success",
) -> str:
    """What `claude -p --output-format json --json-schema ...` prints."""
    result: dict[str, Any] = {
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "duration_ms": 2310,
        "duration_api_ms": 2210,
        "num_turns": 1,
        "result": text if text is not None else json.dumps(answer),
        "stop_reason": "end_turn",
        "session_id": session_id,
        "total_cost_usd": cost,
        "usage": {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cache_read,
            "output_tokens": output_tokens,
            "server_tool_use": {"web_search_requests": 0},
            "service_tier": "standard",
        },
        "modelUsage": {"claude-sonnet-5": {"inputTokens": input_tokens, "costUSD": cost}},
        "permission_denials": [],
        "uuid": "0b8e1f3c-5d2a-4c1e-8f7a-6b9d0e2c3a41",
    }
    if answer is not None and text is None:
        result["structured_output"] = answer
    return json.dumps(result) + "\n"


def codex_events(
    answer: Any = None,
    *,
    text: str | None = None,
    thread_id: str = "0199a213-81c0-7800-8aa1-bbab2a035a53",
    input_tokens: int = 2400,
    cached: int = 2000,
    output_tokens: int = 60,
    failure: str | None = None,
) -> str:
    """What `codex exec --json` prints for one turn."""
    events: list[dict[str, Any]] = [
        {"type": "thread.started", "thread_id": thread_id},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning",
                                            "text": "**Reading the task**"}},
    ]  # fmt: skip
    if failure is not None:
        events.append({"type": "error", "message": failure})
        events.append({"type": "turn.failed", "error": {"message": failure}})
    else:
        message = text if text is not None else json.dumps(answer)
        events.append(
            {"type": "item.completed",
             "item": {"id": "item_1", "type": "agent_message", "text": message}}
        )  # fmt: skip
        events.append(
            {"type": "turn.completed",
             "usage": {"input_tokens": input_tokens, "cached_input_tokens": cached,
                       "output_tokens": output_tokens}}
        )  # fmt: skip
    return "".join(json.dumps(event) + "\n" for event in events)
