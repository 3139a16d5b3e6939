"""What reading a call's signals costs a hook process in imports, against another copy of
the package (issue 31: `recall/signals.py` split into modules of one rule).

    .venv/bin/python bench/signal_imports_bench.py --compare DIR [--runs 41]

Each run is a new interpreter that imports the recall engine and reads the signals of
one call (a `Read`, then a `Bash` call), under `-X importtime`; the figure is the self
time of the modules that read signals (`recall/types`, `signals`, `path_signals`,
`terms`, `shell_signals`, `shell_paths`, `shell`, `command_family`: whichever the call
loads), as the median of `--runs`. Ours and DIR's processes alternate, so a load change
on a shared machine moves both; the baseline is DIR's figure (`--compare`, e.g. a `git
archive` of main). Bytecode is written for both before timing (a hook install does).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_PROBE = """
import json, sys
import active_memory.recall.engine
from active_memory.recall.signals import extract_signals
from active_memory.recall.types import ToolCall
tool, tool_input = json.loads(sys.argv[1])
extract_signals(ToolCall("claude", tool, tool_input, cwd="/work/api"), "/work/api")
"""

SIGNAL_MODULES = frozenset(
    f"active_memory.{name}"
    for name in (
        "recall.types", "recall.signals", "recall.path_signals", "recall.terms",
        "recall.shell_signals", "recall.shell_paths", "shell", "command_family",
    )
)  # fmt: skip

CALLS: dict[str, tuple[str, dict[str, str]]] = {
    "Read": ("Read", {"file_path": "/work/api/src/a.py"}),
    "Bash": ("Bash", {"command": "cd src && timeout 60 pytest tests/test_a.py -q"}),
}


def signal_imports(code: str, call: tuple[str, dict[str, str]]) -> tuple[float, list[str]]:
    """Milliseconds of import self time of the signal modules one process loads, and
    which; `code` is a folder put first on `sys.path` ("" for this checkout's package)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if code:
        env["PYTHONPATH"] = code
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _PROBE, json.dumps(call)],
        env=env, cwd=Path(code or ".").resolve(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    micros, names = 0, []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = line.split("|")
        if name.strip() in SIGNAL_MODULES:
            micros += int(own.split(":")[1])
            names.append(name.strip().removeprefix("active_memory."))
    return micros / 1000, sorted(names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--compare",
        required=True,
        metavar="DIR",
        help="the other copy of the package (the folder holding active_memory)",
    )
    parser.add_argument("--runs", type=int, default=41)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"load {' '.join(f'{n:.2f}' for n in os.getloadavg())}")  # fmt: skip
    label = Path(args.compare).name
    for name, call in CALLS.items():
        for code in ("", args.compare):
            signal_imports(code, call)  # writes bytecode, warms the file caches
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(args.runs):
            mine, our_names = signal_imports("", call)
            other, their_names = signal_imports(args.compare, call)
            ours.append(mine)
            theirs.append(other)
        print(f"\n{name} call, import self time of the signal modules (median of {args.runs})")
        print(f"  {label:<12} {statistics.median(theirs):6.2f} ms  1.00 x  "
              f"{len(their_names)} modules: {', '.join(their_names)}")  # fmt: skip
        print(f"  {'this tree':<12} {statistics.median(ours):6.2f} ms  "
              f"{statistics.median(ours) / statistics.median(theirs):4.2f} x  "
              f"{len(our_names)} modules: {', '.join(our_names)}")  # fmt: skip


if __name__ == "__main__":
    main()
