"""Peak memory of importing a large session log: it must not grow with the file.

    python bench/import_memory_bench.py [--megabytes 150] [--harness claude|codex|both]

Generates a Claude Code transcript (with a `subagents/` folder) and/or a Codex rollout of
about the given size in a temporary folder: a few hundred turns, each with tool calls
whose results are tens of kilobytes (file reads, test output), as in real long sessions.
Each import runs in a fresh interpreter that reports its peak RSS (`ru_maxrss`).

Baselines from the same run: the interpreter after importing the importer (nothing
read), and the same import of a log 1/100 of the size. The figure that matters is the
large import's peak against the small one's: a streaming importer stays near 1.0x.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SESSION = "3e1f0b2a-9c8d-4e7f-a6b5-c4d3e2f1a0b9"
AGENT = "b7e2c91"
CWD = "/home/dev/shop"
RESULT = ("    def total(items):  # a line of a file the agent read\n" * 400)[:20_000]


def _stamp(second: int) -> str:
    return f"2026-11-20T{10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def _claude_entry(kind: str, second: int, content: Any, **extra: Any) -> str:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["model"] = "claude-sonnet-4-5-20250929"
    entry = {
        "type": kind,
        "sessionId": SESSION,
        "cwd": CWD,
        "timestamp": _stamp(second),
        "message": message,
        **extra,
    }
    return json.dumps(entry, separators=(",", ":")) + "\n"


def write_claude(folder: Path, megabytes: float) -> Path:
    """A main transcript of about `megabytes` MB, plus one sub-agent file."""
    main = folder / f"{SESSION}.jsonl"
    agent = folder / SESSION / "subagents" / f"agent-{AGENT}.jsonl"
    agent.parent.mkdir(parents=True)
    budget = int(megabytes * 1_000_000)
    written, second, turn, call = 0, 0, 0, 0
    with main.open("w") as out, agent.open("w") as side:
        while written < budget:
            turn += 1
            lines = [_claude_entry("user", second, f"Prompt {turn}: fix the next failing test")]
            for _ in range(25):
                call += 1
                second += 2
                use = {"type": "tool_use", "id": f"t{call}", "name": "Read",
                       "input": {"file_path": f"{CWD}/src/m{call % 300}.py"}}  # fmt: skip
                lines.append(_claude_entry("assistant", second, [use]))
                result = {"type": "tool_result", "tool_use_id": f"t{call}", "content": RESULT}
                lines.append(_claude_entry("user", second + 1, [result]))
            if turn % 50 == 1:  # now and then a sub-agent does some of the reading
                for n in range(5):
                    use = {"type": "tool_use", "id": f"s{turn}-{n}", "name": "Grep",
                           "input": {"pattern": "total", "path": "src"}}  # fmt: skip
                    side.write(_claude_entry("assistant", second, [use], isSidechain=True,
                                             agentId=AGENT))  # fmt: skip
            second += 5
            lines.append(_claude_entry("assistant", second, [{"type": "text", "text": "Fixed."}]))
            chunk = "".join(lines)
            out.write(chunk)
            written += len(chunk)
    return main


def write_codex(folder: Path, megabytes: float) -> Path:
    """A rollout of about `megabytes` MB."""
    path = folder / f"rollout-2026-11-21T08-00-00-{SESSION}.jsonl"
    budget = int(megabytes * 1_000_000)

    def line(second: int, kind: str, payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": _stamp(second), "type": kind, "payload": payload}) + "\n"

    with path.open("w") as out:
        written = out.write(line(0, "session_meta", {"id": SESSION, "cwd": CWD}))
        second, turn, call = 0, 0, 0
        while written < budget:
            turn += 1
            lines = [
                line(second, "event_msg", {"type": "task_started"}),
                line(second, "event_msg", {"type": "user_message", "message": f"Task {turn}"}),
            ]
            for _ in range(25):
                call += 1
                second += 2
                args = json.dumps({"cmd": f"cat src/m{call % 300}.py", "workdir": CWD})
                lines.append(line(second, "response_item", {"type": "function_call",
                    "name": "exec_command", "arguments": args, "call_id": f"c{call}"}))  # fmt: skip
                head = f"Chunk ID: {call:x}\nWall time: 0.1 seconds\nProcess exited with code 0"
                output = f"{head}\nOutput:\n{RESULT}"
                lines.append(line(second + 1, "response_item", {"type": "function_call_output",
                    "call_id": f"c{call}", "output": output}))  # fmt: skip
            lines.append(line(second + 3, "event_msg", {"type": "task_complete",
                "last_agent_message": "Done."}))  # fmt: skip
            chunk = "".join(lines)
            written += out.write(chunk)
            second += 5
    return path


_CHILD = """
import resource, sys, time
from active_memory.runlog.importers.claude import import_transcript
from active_memory.runlog.importers.codex import import_rollout
harness, path = sys.argv[1], sys.argv[2]
started = time.perf_counter()
calls = 0
if harness != "none":
    result = (import_transcript if harness == "claude" else import_rollout)(path)
    calls = result.runs[0].report["tool_calls"]
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter() - started, calls)
"""


def peak(harness: str, path: Path | None) -> tuple[float, float, int]:
    """(peak RSS in MiB, seconds, tool calls) of one import in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, harness, str(path or "")],
        capture_output=True,
        text=True,
        check=True,
    )
    kib, seconds, calls = done.stdout.split()
    return int(kib) / 1024, float(seconds), int(calls)


def run(harness: str, megabytes: float) -> None:
    writer = write_claude if harness == "claude" else write_codex
    with tempfile.TemporaryDirectory() as tmp:
        big_dir, small_dir = Path(tmp, "big"), Path(tmp, "small")
        big_dir.mkdir()
        small_dir.mkdir()
        big = writer(big_dir, megabytes)
        small = writer(small_dir, megabytes / 100)
        size = sum(p.stat().st_size for p in big_dir.rglob("*.jsonl")) / 1_000_000
        base, _, _ = peak("none", None)
        small_rss, small_s, _ = peak(harness, small)
        big_rss, big_s, big_calls = peak(harness, big)
    print(f"{harness}: {size:.0f} MB log, {big_calls} tool calls")
    print(f"  interpreter + importer, nothing read: {base:6.1f} MiB peak RSS")
    print(f"  import of the {size / 100:5.1f} MB log:       {small_rss:6.1f} MiB ({small_s:.2f} s)")
    print(
        f"  import of the {size:5.0f} MB log:       {big_rss:6.1f} MiB ({big_s:.2f} s, "
        f"{size / big_s:.0f} MB/s)"
    )
    print(
        f"  large vs small: {big_rss / small_rss:.2f}x peak RSS for 100x the file; "
        f"above the bare interpreter: {big_rss - base:.1f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=150.0)
    parser.add_argument("--harness", choices=("claude", "codex", "both"), default="both")
    args = parser.parse_args()
    started = time.perf_counter()
    for harness in ("claude", "codex") if args.harness == "both" else (args.harness,):
        run(harness, args.megabytes)
    print(f"(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
