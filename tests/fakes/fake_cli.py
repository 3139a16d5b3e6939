"""The program behind the fake `claude` and `codex` executables (see `fakes.cli`).

It logs each call (argv, stdin, environment names) to `calls.jsonl` in its folder, then
plays the next step of `script.json`: print `stdout` / `stderr` and exit with `exit`, or
with `"sleep": "forever"` start a grandchild, write both PIDs to `pids.json` and hang.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    folder = Path(os.environ["FAKE_CLI_DIR"])
    stdin = sys.stdin.read()
    with (folder / "calls.jsonl").open("a", encoding="utf-8") as log:
        log.write(json.dumps({"argv": sys.argv[1:], "stdin": stdin, "env": sorted(os.environ)}))
        log.write("\n")
    steps = json.loads((folder / "script.json").read_text(encoding="utf-8"))
    counter = folder / "turn"
    turn = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(turn + 1))
    step = steps[min(turn, len(steps) - 1)]
    if step.get("sleep") == "forever":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        (folder / "pids.json").write_text(json.dumps({"cli": os.getpid(), "child": child.pid}))
        time.sleep(120)
    sys.stdout.write(step.get("stdout", ""))
    sys.stderr.write(step.get("stderr", ""))
    return int(step.get("exit", 0))


if __name__ == "__main__":
    sys.exit(main())
