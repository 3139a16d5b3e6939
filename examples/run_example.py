"""Run the bundled example end to end, saying what happens at each step.

    .venv/bin/python examples/run_example.py [--work DIR]

1. creates the example repository `acme/api` (`make_checkout.py`) in DIR/acme-api;
2. imports the lessons earlier runs left (`lessons.jsonl`) into the default embedded
   SQLite store, with the zeroshot state dir set to DIR/state;
3. shows the impact evidence the scanner finds in the recorded run (`run.json`);
4. runs the postmortem on it with the recorded specialist answers (`recordings.json`):
   no model, no API key;
5. shows the cards an agent editing `src/checkout/currencies.py` now receives, and the
   graph lesson now appended to `review_repair`'s instructions.

DIR defaults to `examples/.work` (ignored by git) and is re-created on every run, so
running it twice gives the same result. Your own lesson store is never touched: every
command runs with ZEROSHOT_STATE_DIR=DIR/state and without ACTIVE_MEMORY_* variables.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from make_checkout import make_checkout  # noqa: E402

MARKER = ".active-memory-example"  # only a folder holding it is ever deleted
GRAPH_HASH = "02a7790b0e5dad1f7dcc30b2acc583c43658ec40a913536b5a3fce7ca8f4130a"
# `active-memory …` through this interpreter, so the example uses the Active Memory it
# was started with, whatever else is on PATH.
CLI = [
    sys.executable,
    "-c",
    "import sys; sys.argv[0] = 'active-memory'; from active_memory.cli import run; run()",
]


def _say(step: str) -> None:
    print(f"\n\033[1m== {step}\033[0m" if sys.stdout.isatty() else f"\n== {step}", flush=True)


def _fresh(work: Path) -> None:
    """Empty `work` for a new run; refuse a non-empty folder the example did not make."""
    if work.exists():
        if any(work.iterdir()) and not (work / MARKER).exists():
            raise SystemExit(
                f"run_example: {work} exists and was not made by this example; "
                "choose another --work folder"
            )
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / MARKER).write_text("made by examples/run_example.py; safe to delete\n")


def _environment(state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env["ZEROSHOT_STATE_DIR"] = str(state)
    return env


def _run(arguments: list[str], env: dict[str, str], *, allow: tuple[int, ...] = (0,)) -> int:
    shown = " ".join(a if " " not in a and "{" not in a else f"'{a}'" for a in arguments)
    print(f"$ active-memory {shown}", flush=True)
    code = subprocess.run([*CLI, *arguments], env=env, cwd=ROOT).returncode
    if code not in allow:
        raise SystemExit(f"run_example: `active-memory {arguments[0]}` exited {code}")
    return code


def _verify_evidence(env: dict[str, str]) -> None:
    """The run must show every kind of evidence the recorded answers cite (SPEC §4)."""
    done = subprocess.run(
        [*CLI, "evidence", str(HERE / "run.json"), "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"run_example: `active-memory evidence --json` failed: {done.stderr}")
    items = {item["kind"]: item for item in json.loads(done.stdout)["evidence"]}
    timeouts, rounds, exploration = (
        items.get("timeout_crash"),
        items.get("rejected_rounds"),
        items.get("exploration"),
    )
    if not (
        timeouts
        and timeouts["nodes"] == ["review_repair"]
        and rounds
        and rounds["count"] >= 2
        and exploration
        and exploration["count"] >= 3
        and exploration["span_seconds"] >= 300
    ):
        raise SystemExit(f"run_example: examples/run.json lost its evidence: {sorted(items)}")
    print(
        f"verified: review_repair timed out {timeouts['count']} times, "
        f"{rounds['count']} rejected rounds of {rounds['loop']}, "
        f"{exploration['count']} distinct receipts over "
        f"{exploration['span_seconds'] / 60:.0f} minutes"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--work",
        type=Path,
        default=HERE / ".work",
        help="folder for the checkout and the state dir (default: examples/.work)",
    )
    args = parser.parse_args(argv)
    work = args.work.resolve()
    checkout, state = work / "acme-api", work / "state"
    env = _environment(state)

    _say(f"1. The repository the run worked on: acme/api in {checkout}")
    _fresh(work)
    print(f"{checkout}: commit {make_checkout(checkout)}")

    _say(f"2. Lessons from earlier runs, into the default SQLite store under {state}")
    _run(["lessons", "import", str(HERE / "lessons.jsonl")], env)

    _say("3. What the recorded run cost: the impact-evidence scanner on examples/run.json")
    _run(["evidence", str(HERE / "run.json")], env)
    _verify_evidence(env)

    _say("4. The postmortem, with recorded specialist answers (no model, no API key)")
    _run(
        [
            "postmortem",
            str(HERE / "run.json"),
            "--checkout",
            str(checkout),
            "--replay",
            str(HERE / "recordings.json"),
        ],
        env,
    )

    _say("5. An agent in a later run edits src/checkout/currencies.py; it receives:")
    call = {
        "tool_name": "Edit",
        "tool_input": {"file_path": str(checkout / "src" / "checkout" / "currencies.py")},
    }
    _run(["recall", "--session", "demo-1", "--cwd", str(checkout), json.dumps(call)], env)

    _say("6. review_repair's instructions in a later run, with its new graph lesson:")
    _run(
        [
            "instructions",
            "--graph",
            GRAPH_HASH,
            "--node",
            "review_repair",
            "--graph-file",
            str(ROOT / "software-change.graph.json"),
        ],
        env,
    )

    _say("7. The lessons now in the store")
    _run(["lessons", "list", "--retired"], env)
    shown = shlex.quote(_from_here(state))
    print(
        f"\nDone. Explore with ZEROSHOT_STATE_DIR={shown} {_command()} lessons history L-2"
        f"\n(or pass --store {shown}/active-memory/lessons.sqlite3). To type `active-memory`"
        '\nalone, see the README\'s "Install".'
    )
    return 0


def _command() -> str:
    """How the user runs this installation's `active-memory` from the current folder:
    the bare name only when that is what their PATH finds (README, "Install")."""
    script = Path(sys.executable).parent / "active-memory"
    if not script.is_file():
        return f"{shlex.quote(sys.executable)} -m active_memory.cli"
    found = shutil.which("active-memory")
    if found is not None and os.path.samefile(found, script):
        return "active-memory"
    return shlex.quote(_from_here(script))


def _from_here(path: Path) -> str:
    """`path` relative to the current folder when it lies below it, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


if __name__ == "__main__":
    sys.exit(main())
