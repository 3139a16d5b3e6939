"""Write `examples/recordings.json`: the specialists' answers for the bundled example.

    python3 examples/record_answers.py [OUT]

The four specialists are asked by the postmortem itself (`run_postmortem`, dry, on a
store holding `examples/lessons.jsonl`, with a fresh checkout from `make_checkout.py`),
through `RecordingSession`, so every recording is keyed by the digest of the very task
the postmortem builds (same batching, bounds and views). The answers are scripted here, as a
careful model would write them for this run:

- repository maintenance keeps L-1 (the Makefile still regenerates the client that way)
  and adapts L-2 (its pytest marker was renamed to `stripe_sandbox`; the old spelling
  made `review_repair` run the sandbox tests until it timed out, twice);
- graph maintenance retires L-4 (the worker's authored instructions already say it);
- graph discovery proposes a procedural lesson for `review_repair`, the node that timed
  out twice;
- repository discovery proposes one lesson citing `src/checkout/currencies.py` (why both
  rounds were rejected) and one that cites a file the repository does not have, which
  the checks refuse; its repair turn (SPEC §6: every lane gets one, replay replays it)
  answers again without the refused lesson, as a careful model would.

Discovery is shown the scope's stored lessons, so its tasks are recorded twice: with the
example's lessons in the store, and from an empty store (a dry run before any import).

Re-run it after changing the run, the lessons, the checkout or a task builder: a changed
task has a new digest and the old recording no longer replays.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import anyio  # noqa: E402
from make_checkout import make_checkout  # noqa: E402

MODEL = "claude-sonnet-5"  # the run's source node (worker) model: the specialists inherit it

Json = dict[str, Any]


def _evidence(task: Json, kind: str) -> str:
    return str(next(item["id"] for item in task["evidence"] if item["kind"] == kind))


def repository_maintenance(task: Json) -> Json:
    decisions: list[Json] = []
    for lesson in task["lessons"]:
        if lesson["id"] == "L-1":
            decisions.append(
                {
                    "id": "L-1",
                    "revision": lesson["revision"],
                    "action": "keep",
                    "reason": "Makefile still builds src/generated/client.ts from "
                    "api/schema.json in the `api-client` target and `check-generated` diffs "
                    "it; the worker followed the card and the client passed review.",
                }
            )
        elif lesson["id"] == "L-2":
            decisions.append(
                {
                    "id": "L-2",
                    "revision": lesson["revision"],
                    "action": "adapt",
                    "reason": "tests/checkout/conftest.py renamed the marker to "
                    "`stripe_sandbox`; `-m 'not sandbox'` from this card selected the sandbox "
                    "tests and review_repair timed out twice waiting for webhooks.",
                    "lesson": {
                        "title": "Run checkout tests with make test-checkout "
                        "(marker stripe_sandbox)",
                        "recommendation": "Start `docker compose up stripe-mock`, then run "
                        "`make test-checkout` (`pytest tests/checkout -m 'not stripe_sandbox'`). "
                        "The marker is `stripe_sandbox`: `-m 'not sandbox'` still runs the "
                        "sandbox tests, which need STRIPE_SECRET_KEY and wait up to 10 minutes "
                        "each for webhooks.",
                        "associations": {
                            "files": ["tests/checkout/conftest.py"],
                            "folders": ["tests/checkout", "src/checkout"],
                            "identifiers": ["StripeGateway", "stripe_sandbox"],
                            "keywords": [["stripe", "sandbox"], ["checkout", "webhook"]],
                        },
                    },
                }
            )
        else:
            decisions.append(
                {"id": lesson["id"], "revision": lesson["revision"], "action": "defer",
                 "reason": "not judged by this example"}
            )  # fmt: skip
    return {"decisions": decisions}


def graph_maintenance(task: Json) -> Json:
    return {
        "decisions": [
            {
                "id": lesson["id"],
                "revision": lesson["revision"],
                "action": "retire",
                "reason": "The worker's authored instructions already require running the "
                "checks that cover the change; neither rejected round of this run was about "
                "failing lint or type checks, so the card adds nothing.",
            }
            for lesson in task["lessons"]
        ]
    }


def graph_discovery(task: Json) -> Json:
    return {
        "lessons": [
            {
                "node": "review_repair",
                "title": "Bound every test command in a repair",
                "recommendation": "Run only the tests the reviewers named, each under a time "
                "bound (`timeout 600 pytest …` or `pytest --timeout=300`), and end the turn "
                "with what passed and what did not. A hung test suite uses up the node's "
                "60-minute `timeoutMs`, the repair returns nothing and the round is lost.",
                "associations": {},
                "evidence": [_evidence(task, "timeout_crash")],
                "citations": [],
                "why_recurs": "review_repair timed out twice in this run inside an unbounded "
                "pytest run; every repair that runs tests can hang the same way.",
            }
        ]
    }


def repository_discovery(task: Json) -> Json:
    return {
        "lessons": [
            {
                "title": "Validate currencies with normalize_currency, not a local list",
                "recommendation": "Look currency codes up through `normalize_currency()` and "
                "`SUPPORTED_CURRENCIES` in src/checkout/currencies.py (case-insensitive, "
                "minor-unit exponent). Adding a currency means adding it there and to the "
                "`currency` enum in api/schema.json, then `make api-client`.",
                "associations": {
                    "files": ["src/checkout/currencies.py"],
                    "identifiers": ["SUPPORTED_CURRENCIES", "normalize_currency"],
                    "keywords": [["currency", "checkout"], ["currency", "minor", "units"]],
                },
                "evidence": [_evidence(task, "rejected_rounds"), _evidence(task, "exploration")],
                "citations": [
                    {"path": "src/checkout/currencies.py", "lines": [5, 19]},
                    {"path": "api/schema.json", "lines": [31, 38]},
                ],
                "why_recurs": "Both reviewers rejected round 1 for a hand-kept currency list; "
                "the worker spent 20 minutes finding where currencies live. Every change to "
                "checkout amounts touches this module.",
            },
            {
                "title": "Stripe sandbox tests need STRIPE_SECRET_KEY",
                "recommendation": "Export STRIPE_SECRET_KEY from the team vault before running "
                "sandbox tests, as described in docs/testing.md.",
                "associations": {"files": ["docs/testing.md"]},
                "evidence": [_evidence(task, "timeout_crash")],
                "citations": [{"path": "docs/testing.md"}],
                "why_recurs": "review_repair hung twice on the sandbox tests.",
            },
        ]
    }


def repaired(specialist: str, repair: Json) -> Json:
    """The answer of a repair turn (`repair`: the first task, the refused answer and its
    failures): the refused answer again without the lessons a failure names."""
    refused = json.loads(repair["answer"])
    named = {f"lessons[{index}]" for index in range(len(refused.get("lessons", [])))}
    dropped = {n for n in named for failure in repair["failures"] if failure.startswith(n)}
    if specialist.endswith("discovery"):
        lessons = refused["lessons"]
        return {"lessons": [x for i, x in enumerate(lessons) if f"lessons[{i}]" not in dropped]}
    raise AssertionError(f"no repair is scripted for {specialist}: {repair['failures']}")


SCRIPTS = {
    "repository_maintenance": repository_maintenance,
    "graph_maintenance": graph_maintenance,
    "graph_discovery": graph_discovery,
    "repository_discovery": repository_discovery,
}


async def record(out: Path, checkout_dir: Path) -> int:
    from active_memory.checkout import Checkout
    from active_memory.commands.files import read_lesson_lines
    from active_memory.lessons import Author
    from active_memory.orchestrator import config_from_record, run_postmortem
    from active_memory.orchestrator.preview import CaptureSessions
    from active_memory.runlog.record import load_run_record
    from active_memory.specialists.kinds import SpecialistName
    from active_memory.specialists.providers import ProviderSession
    from active_memory.specialists.providers.base import Request, Usage
    from active_memory.specialists.providers.function import FunctionSession
    from active_memory.specialists.providers.replay import RecordingSession
    from active_memory.store import open_store

    make_checkout(checkout_dir)
    checkout = Checkout(checkout_dir)
    record_ = load_run_record(HERE / "run.json")
    config = config_from_record(record_)
    lessons = read_lesson_lines(str(HERE / "lessons.jsonl"))
    async with open_store(str(checkout_dir.parent / "lessons.sqlite3"), create=True) as store:
        await store.import_lessons(list(lessons), Author(specialist="example"))
        # First, what each specialist is asked, exactly as the postmortem asks it (the
        # same engine, the same batching and bounds), to size each turn's usage.
        capture = CaptureSessions()
        await run_postmortem(
            record_, config, store, checkout=checkout, sessions=capture, dry_run=True
        )
        usage: dict[str, Usage] = {}
        for asked in capture.captured:
            answer_text = json.dumps(SCRIPTS[asked.specialist](asked.input))  # type: ignore[arg-type]
            # What a live turn of this size costs, roughly (4 characters a token), so the
            # replayed report shows plausible usage rather than zeros.
            usage[asked.specialist] = Usage(
                input_tokens=(len(asked.prompt) + len(asked.system)) // 4,
                output_tokens=len(answer_text) // 4,
                requests=1,
            )

        async def scripted(request: Request) -> Any:
            assert isinstance(request.input, dict)
            if request.repair_of is not None:
                return repaired(request.specialist, request.input)
            return SCRIPTS[request.specialist](request.input)

        def sessions(specialist: SpecialistName, *, deadline: float) -> ProviderSession:
            inner = FunctionSession(
                specialist,
                scripted,
                model=MODEL,
                deadline=deadline,
                usage_per_turn=usage.get(specialist),
            )
            return RecordingSession(inner, out)  # type: ignore[return-value]

        # Then the same postmortem again, answered by the scripts and recorded.
        await run_postmortem(
            record_, config, store, checkout=checkout, sessions=sessions, dry_run=True
        )
    # And from an empty store (a dry run before any lesson exists): discovery sees the
    # scope's lessons, so its tasks differ there and are recorded too.
    async with open_store(str(checkout_dir.parent / "empty.sqlite3"), create=True) as empty:
        await run_postmortem(
            record_, config, empty, checkout=checkout, sessions=capture, dry_run=True
        )
        await run_postmortem(
            record_, config, empty, checkout=checkout, sessions=sessions, dry_run=True
        )
    return len(capture.captured)


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve() if argv else HERE / "recordings.json"
    out.unlink(missing_ok=True)  # recorded afresh: stale digests would linger otherwise
    with tempfile.TemporaryDirectory() as temporary:
        count = anyio.run(record, out, Path(temporary) / "acme-api")
    # The specialists answer concurrently, so the file's order is the order they finished
    # in; sort it, so that the same tasks always give the same file.
    document = json.loads(out.read_text(encoding="utf-8"))
    document["recordings"].sort(key=lambda r: (r["specialist"], r["digest"]))
    out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(document['recordings'])} recordings ({count} tasks asked) to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
