"""The learning bench: does the next session avoid the mistake? (issue 25, item 9)

    .venv/bin/python bench/learning_bench.py                 # every bundled sequence, replay lane
    .venv/bin/python bench/learning_bench.py --sequence spotter --verbose
    .venv/bin/python bench/learning_bench.py --lane claude   # the specialists on a real model
    .venv/bin/python bench/learning_bench.py --record        # after a task changed: re-record

A sequence (tests/fixtures/learning/<name>/sequence.json) is the sessions of one
repository, in order, with the repository at each session's start and end commits. For
each session, in the order they happened (bench/learning/run.py): `active-memory import`
builds its run record (joined with the cards its replayed hooks delivered), the
postmortem runs on the chosen lane and publishes; each later session's real tool calls go,
in order and with their working folders, through the function the `PreToolUse` hook calls,
seeing only what was published before that session began. For every failure family that
recurs in a later session the bench says whether a card about it was delivered before the
first failing call (prevented), before the second failure or the resolution (shortened),
or not in time (missed), and how many bytes of delivered cards concern nothing the session
then did (bench/learning/outcome.py). Each sequence runs twice: with the run records'
`tool_failures`, and without them (dropped before the postmortem), which is what the
specialists were given before issue 25.

Lanes: `replay` (default) answers each specialist from the sequence's
`recordings.json`; a task without a recording fails, naming the task and the command that
re-records it. `api`, `claude`, `codex` and `exchange` are the postmortem's own lanes
(docs/providers.md), with `--model` for the runtime plan's model.

`--record` re-records after a change to the tasks: each task whose digest is recorded
replays; a task whose recorded answer was given for the same evidence and lessons (only
its wording or views changed) gets that answer under its new digest; any other task is
written to `--tasks DIR` (default `.learning-tasks/`) with its prompt, for a person to
answer in `<task>.answer.json` beside it, and the command run again. Answers no task asks
for any more are kept unless `--prune` is given with a complete run
(bench/learning/answers.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from learning.answers import Recorder, Store  # noqa: E402
from learning.report import render, to_json  # noqa: E402
from learning.run import (  # noqa: E402
    RECORD_COMMAND,
    Lane,
    MissingRecording,
    NeedAnswers,
    VariantResult,
    run_variant,
)
from learning.sequence import Sequence, SequenceError, load_sequence  # noqa: E402
from learning.steps import StepFailed  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "learning"
DEFAULT_TASKS = ROOT / ".learning-tasks"


def bundled() -> list[Path]:
    """The sequences that ship with the bench."""
    return sorted(path.parent for path in FIXTURES.glob("*/sequence.json"))


def _sequences(names: list[str] | None) -> list[Sequence]:
    if not names:
        return [load_sequence(path) for path in bundled()]
    found = []
    for name in names:
        path = Path(name)
        if not path.exists():
            path = FIXTURES / name
        if not path.exists():
            known = ", ".join(p.name for p in bundled())
            raise SequenceError(f"--sequence {name}: no such file or bundled sequence ({known})")
        found.append(load_sequence(path))
    return found


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sequence",
        action="append",
        metavar="NAME_OR_PATH",
        help="a bundled sequence's name or a sequence.json (repeatable; default: all bundled)",
    )
    parser.add_argument(
        "--lane",
        choices=("replay", "api", "claude", "codex", "exchange"),
        default="replay",
        help="where the specialists' answers come from (default: recorded answers)",
    )
    parser.add_argument("--exchange-dir", type=Path, help="--lane exchange: the task folder")
    parser.add_argument("--model", help="the model of the runtime plan (live lanes)")
    parser.add_argument(
        "--timeout-ms", type=int, default=120_000, help="each postmortem's deadline (SPEC §2)"
    )
    parser.add_argument(
        "--variant",
        choices=("both", "with", "without"),
        default="both",
        help="run with the records' tool_failures, without them, or both (default)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="re-record the answers of changed tasks (see the module docstring)",
    )
    parser.add_argument(
        "--prune",
        action="store_true",
        help="--record: drop the answers no task of this complete run asked for",
    )
    parser.add_argument(
        "--tasks",
        type=Path,
        default=DEFAULT_TASKS,
        help=f"--record: where unanswered tasks are written (default {DEFAULT_TASKS.name}/)",
    )
    parser.add_argument("--work", type=Path, help="keep the work folders here (default: temporary)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--verbose", action="store_true", help="also list every card delivered")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.prune and not args.record:
        print("learning_bench: --prune goes with --record", file=sys.stderr)
        return 2
    if args.record and args.lane != "replay":
        print("learning_bench: --record answers from recordings: drop --lane", file=sys.stderr)
        return 2
    if args.lane == "exchange" and args.exchange_dir is None:
        print("learning_bench: --lane exchange needs --exchange-dir DIR", file=sys.stderr)
        return 2
    try:
        sequences = _sequences(args.sequence)
    except SequenceError as exc:
        print(f"learning_bench: {exc}", file=sys.stderr)
        return 2
    lane = Lane(args.lane, args.exchange_dir, args.model, args.timeout_ms)
    variants = {"both": (True, False), "with": (True,), "without": (False,)}[args.variant]
    work = args.work.resolve() if args.work else Path(tempfile.mkdtemp(prefix="learning-bench-"))
    started = time.monotonic()
    results: list[VariantResult] = []
    waiting: list[str] = []
    try:
        for sequence in sequences:
            store = Store.read(sequence.answers, sequence.recordings) if args.record else None
            complete = True
            for with_failures in variants:
                variant = "with" if with_failures else "without"
                folder = work / sequence.name / variant
                if folder.exists():
                    shutil.rmtree(folder)
                recorder = (
                    Recorder(store, args.tasks.resolve() / sequence.name)
                    if store is not None
                    else None
                )
                try:
                    results.append(
                        run_variant(sequence, with_failures=with_failures, lane=lane,
                                    work=folder, recorder=recorder)
                    )  # fmt: skip
                except NeedAnswers as stopped:
                    complete = False
                    assert recorder is not None
                    waiting.extend(str(f) for a in recorder.missing for f in a.files[2:3])
                    print(
                        f"learning_bench: {sequence.name} ({variant} tool_failures) stopped at "
                        f"session {stopped}: {len(recorder.missing)} task(s) need an answer",
                        file=sys.stderr,
                    )
            if store is not None:
                dropped = store.prune() if args.prune and complete and len(variants) == 2 else 0
                store.write()
                print(
                    f"learning_bench: {sequence.name}: {len(store.chosen)} answers in use, "
                    f"{store.rekeyed} re-keyed, {store.added} added, {dropped} dropped",
                    file=sys.stderr,
                )
    except MissingRecording as exc:
        print(f"learning_bench: {exc}", file=sys.stderr)
        return 1
    except (StepFailed, SequenceError) as exc:
        print(f"learning_bench: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started
    if waiting:
        print(
            f"learning_bench: answer each task below in <task>.answer.json beside it, then run "
            f"`{RECORD_COMMAND}` again:\n  " + "\n  ".join(waiting),
            file=sys.stderr,
        )
        return 1
    if args.json:
        print(json.dumps(to_json(results) | {"lane": args.lane, "seconds": round(elapsed, 1)}))
    else:
        print(f"learning bench: {len(sequences)} sequence(s), lane {args.lane}, {elapsed:.0f} s")
        print(render(results, verbose=args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
