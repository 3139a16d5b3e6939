"""What a plugin's hook launcher adds to every tool call (docs/plugins.md).

    .venv/bin/python bench/plugin_launcher_bench.py [--runs 41] [--lessons 1000]

A plugin's hook (Claude Code, Codex, Copilot CLI, Gemini CLI) runs a POSIX shell
launcher, which `exec`s the lean hook entry the set-up wrote into the plugin's data
folder. Over a store of --lessons lessons (a checkout, one matching `Read` per call, a new
session each time, so the card is delivered), interleaved, median wall time of:

- a bare `python -c pass` (the baseline every ratio is against);
- the lean entry called directly, as `hook install` runs it;
- each harness's launcher in front of the same entry.

Never a timed test: nothing here fails a build.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from recall_support import make_checkout, publish, repository_lesson  # noqa: E402

from active_memory.hooks.lean import compile_hook_path, write_entry  # noqa: E402

LAUNCHERS = {
    "claude": ("plugins/claude-code/bin/active-memory-hook", "CLAUDE_PLUGIN_DATA"),
    "codex": ("plugins/codex/bin/active-memory-hook", "PLUGIN_DATA"),
    "copilot": ("plugins/copilot/bin/active-memory-hook", "COPILOT_PLUGIN_DATA"),
    "gemini": ("plugins/gemini/bin/active-memory-hook", None),
}


CARD = "Run make client."


def _timed(command: list[str], env: dict[str, str], stdin: str, *, card: bool) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - started
    if card and CARD not in done.stdout:  # a figure without the card would mean nothing
        raise SystemExit(f"{command[0]} delivered no card: {done.stdout!r} {done.stderr!r}")
    return elapsed


def main() -> None:
    """Run the figures and print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=41)
    parser.add_argument("--lessons", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        home = root / "home"
        data = home / ".gemini" / "active-memory"  # one data folder serves every launcher
        entry = write_entry(data / "bin")
        compile_hook_path()
        work = make_checkout(root / "api")
        (work / "client.py").write_text("CLIENT = 1\n", encoding="utf-8")
        store = root / "lessons.sqlite3"
        lessons = [repository_lesson("Regenerate the client", CARD, files=["client.py"])]
        lessons += [repository_lesson(f"Lesson {n}", f"Do thing {n}.", files=[f"src/m{n}.py"])
                    for n in range(args.lessons - 1)]  # fmt: skip
        publish(store, lessons)
        base = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "ZEROSHOT_STATE_DIR": str(root / "state"),
            "ACTIVE_MEMORY_STORE": str(store),
        }
        commands: dict[str, tuple[list[str], dict[str, str]]] = {
            "bare python -c pass": ([sys.executable, "-c", "pass"], base),
            "lean entry (hook install)": ([str(entry), "claude"], base),
        }
        for harness, (launcher, variable) in LAUNCHERS.items():
            env = base | ({variable: str(data)} if variable else {})
            # The same payload and hook word for all: what differs is the launcher alone.
            launched = [str(REPO / launcher), "claude"]
            commands[f"{harness} plugin launcher + entry"] = (launched, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for run in range(args.runs):
            for name, (command, env) in commands.items():
                payload = json.dumps({
                    "hook_event_name": "PreToolUse", "session_id": f"s-{run}-{name}",
                    "tool_name": "Read", "tool_input": {"file_path": str(work / "client.py")},
                    "cwd": str(work),
                })  # fmt: skip
                card = not name.startswith("bare")
                times[name].append(_timed(command, env, payload, card=card))
    bare = statistics.median(times["bare python -c pass"])
    entry_time = statistics.median(times["lean entry (hook install)"])
    print(f"plugin hook launchers, {args.lessons} lessons, card delivered "
          f"(median of {args.runs}, interleaved)")  # fmt: skip
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<34} {median * 1000:7.1f} ms  {median / bare:5.2f} x bare  "
              f"{median / entry_time:5.2f} x entry")  # fmt: skip


if __name__ == "__main__":
    main()
