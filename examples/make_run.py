"""Write `examples/run.json`: the recorded zeroshot `software-change` run of the example.

    python3 examples/make_run.py [OUT]

The run (SPEC §3, `active-memory/run@1`): a worker adds a currency to checkout sessions
after 41 minutes of reading how the API client is generated; the reviewers reject two
rounds; `review_repair` times out twice (an hour each, running the Stripe sandbox tests
that an outdated lesson told it to deselect with the old marker name); the third round
is accepted and a pull request opened. The cards delivered during the run (`deliveries`)
are lessons of `examples/lessons.jsonl`. Kept as a script so the data can be read and
changed as code; the committed `run.json` is its output.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GRAPH_FILE = HERE.parent / "software-change.graph.json"
CONFIG_FILE = HERE.parent / "config.example.json"
RUN_ID = "run-2026-11-28-e"
CHECKOUT = "/home/ada/src/acme-api"  # where it ran; `postmortem --checkout` points elsewhere
COMMIT = "7b91fb09577784f025726abf478e75cdfa3d6ef5"  # examples/make_checkout.py's commit
START = datetime(2026, 11, 28, 15, 0, 0, tzinfo=UTC)

Json = dict[str, Any]


def at(minutes: float) -> str:
    """The time `minutes` after the run started, as RFC 3339 UTC."""
    moment = START + timedelta(seconds=round(minutes * 60))
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Log:
    """Builds zeroshot RunEvents in sequence order."""

    def __init__(self) -> None:
        self.events: list[Json] = []

    def add(self, minutes: float, event: Json) -> None:
        self.events.append({"sequence": len(self.events) + 1, "at": at(minutes), "event": event})

    def start(self, minutes: float, node: str, execution: str, instance: str) -> None:
        reference = {
            "runId": RUN_ID,
            "node": node,
            "nodeInstance": instance,
            "execution": execution,
        }
        self.add(
            minutes,
            {
                "kind": "node_started",
                "reference": reference,
                "occurrence": {"node": node, "mapIndices": []},
                "attempt": 1,
                "input": None,
            },
        )

    def settle(
        self, minutes: float, node: str, execution: str, instance: str, outcome: Json
    ) -> None:
        reference = {
            "runId": RUN_ID,
            "node": node,
            "nodeInstance": instance,
            "execution": execution,
        }
        self.add(
            minutes,
            {"kind": "node_completed", "completion": {"reference": reference, "outcome": outcome}},
        )

    def log(self, minutes: float, execution: str, line: str) -> None:
        self.add(
            minutes, {"kind": "safe_log", "execution": execution, "stream": "stdout", "line": line}
        )


def verdict(value: str) -> Json:
    return {"status": "verifier", "signals": {"verdict": value}}


TIMEOUT: Json = {"status": "error", "code": "timeout", "reason": "deadline_exceeded"}


def events() -> list[Json]:
    log = Log()
    log.add(0, {"kind": "run_started"})
    log.start(0.1, "worker", "ex-w1", "ni-worker-1")
    log.settle(41.2, "worker", "ex-w1", "ni-worker-1", {"status": "verified", "output": None})
    # Round 1: both reviewers reject.
    log.start(41.3, "acceptance", "ex-a1", "ni-acceptance-1")
    log.start(41.3, "code", "ex-c1", "ni-code-1")
    log.settle(49.5, "acceptance", "ex-a1", "ni-acceptance-1", verdict("rejected"))
    log.settle(53.0, "code", "ex-c1", "ni-code-1", verdict("rejected"))
    log.start(53.1, "review_repair", "ex-r1", "ni-review_repair-1")
    log.log(61.1, "ex-r1", "$ pytest tests/checkout -m 'not sandbox'")
    log.log(
        72.4,
        "ex-r1",
        "tests/checkout/test_session.py::test_sandbox_payment_intent_settles waiting for webhook",
    )
    log.settle(113.1, "review_repair", "ex-r1", "ni-review_repair-1", TIMEOUT)
    # Round 2: acceptance is satisfied, the code reviewer is not.
    log.start(113.2, "acceptance", "ex-a2", "ni-acceptance-2")
    log.start(113.2, "code", "ex-c2", "ni-code-2")
    log.settle(119.7, "acceptance", "ex-a2", "ni-acceptance-2", verdict("accepted"))
    log.settle(124.9, "code", "ex-c2", "ni-code-2", verdict("rejected"))
    log.start(125.0, "review_repair", "ex-r2", "ni-review_repair-2")
    log.log(132.3, "ex-r2", "$ pytest tests/checkout -m 'not sandbox'")
    log.settle(185.0, "review_repair", "ex-r2", "ni-review_repair-2", TIMEOUT)
    # Round 3: accepted; the pull request is opened.
    log.start(185.1, "acceptance", "ex-a3", "ni-acceptance-3")
    log.start(185.1, "code", "ex-c3", "ni-code-3")
    log.settle(190.0, "acceptance", "ex-a3", "ni-acceptance-3", verdict("accepted"))
    log.settle(193.5, "code", "ex-c3", "ni-code-3", verdict("accepted"))
    log.start(193.6, "deliver", "ex-d1", "ni-deliver-1")
    log.settle(
        194.2,
        "deliver",
        "ex-d1",
        "ni-deliver-1",
        {"status": "verifier", "signals": {"delivery": "opened"}},
    )
    log.add(194.3, {"kind": "terminal", "result": {"status": "succeeded", "output": None}})
    return log.events


COMPLETIONS = {
    "ex-w1": (
        "Checkout sessions now take a `currency` (EUR, GBP, USD). api/schema.json: `currency` "
        "added to CheckoutSessionCreate and CheckoutSession; src/generated/client.ts "
        "regenerated with `make api-client`; src/checkout/session.py prices the cart in the "
        "requested currency. `make check-generated` is clean; "
        "tests/checkout/test_session.py passes."
    ),
    "ex-a1": (
        "REJECTED. The task says currency codes are accepted case-insensitively; "
        "`create_checkout_session(cart, 'gbp', ...)` raises KeyError because session.py "
        "looks the code up directly instead of going through `normalize_currency()` in "
        "src/checkout/currencies.py, and the exponent table `SUPPORTED_CURRENCIES` is "
        "duplicated in session.py."
    ),
    "ex-c1": (
        "REJECTED. session.py keeps its own copy of the currency list; use "
        "`SUPPORTED_CURRENCIES` / `normalize_currency()` from src/checkout/currencies.py "
        "(api/schema.json's enum must list the same codes). No test for an unsupported "
        "currency."
    ),
    "ex-a2": "ACCEPTED. Lower-case codes work; amounts are in minor units per currency.",
    "ex-c2": (
        "REJECTED. tests/checkout/test_session.py was edited but never run: the repair "
        "timed out inside `pytest tests/checkout -m 'not sandbox'` (the marker is "
        "`stripe_sandbox`, so the sandbox tests ran and waited for webhooks). "
        "`test_unsupported_currency_is_refused` is missing its import."
    ),
    "ex-a3": "ACCEPTED.",
    "ex-c3": "ACCEPTED. `make test-checkout` and `make check-generated` pass.",
    "ex-d1": "Opened acme/api#482 from branch zeroshot/run-2026-11-28-e.",
}

# (minutes, node, tool, paths): what the hooks recorded (never arguments or results).
RECEIPTS = [
    (1.2, "worker", "Read", ["api/schema.json"]),
    (3.7, "worker", "Grep", ["src"]),
    (6.0, "worker", "Read", ["src/checkout/session.py"]),
    (9.3, "worker", "Read", ["src/generated/client.ts"]),
    (12.5, "worker", "Read", ["Makefile"]),
    (14.8, "worker", "Bash", []),
    (18.3, "worker", "Read", ["scripts/bundle_client.py"]),
    (22.1, "worker", "Grep", ["src/checkout"]),
    (24.7, "worker", "Read", ["src/checkout/currencies.py"]),
    (29.2, "worker", "Edit", ["api/schema.json"]),
    (33.2, "worker", "Bash", ["Makefile"]),
    (36.7, "worker", "Edit", ["src/checkout/session.py"]),
    (39.0, "worker", "Bash", ["tests/checkout/test_session.py"]),
    (54.2, "review_repair", "Read", ["src/checkout/currencies.py"]),
    (57.5, "review_repair", "Edit", ["src/checkout/session.py"]),
    (59.4, "review_repair", "Edit", ["tests/checkout/test_session.py"]),
    (61.1, "review_repair", "Bash", ["tests/checkout"]),
    (125.7, "review_repair", "Read", ["tests/checkout/test_session.py"]),
    (128.9, "review_repair", "Edit", ["tests/checkout/test_session.py"]),
    (132.3, "review_repair", "Bash", ["tests/checkout"]),
]

# Cards and graph lessons this run received (from the session ledgers): lessons of
# examples/lessons.jsonl, published by earlier runs.
DELIVERIES = [
    ("s-worker-1", "L-4", 1, 0.1),  # graph lesson appended to the worker's instructions
    ("s-worker-1", "L-1", 2, 1.2),  # Read api/schema.json
    ("s-worker-1", "L-2", 1, 6.0),  # Read src/checkout/session.py (folder src/checkout)
    ("s-review_repair-1", "L-2", 1, 54.2),
    ("s-review_repair-2", "L-2", 1, 125.7),
]


def run_record() -> Json:
    graph = json.loads(GRAPH_FILE.read_text(encoding="utf-8"))
    sys.path.insert(0, str(HERE.parent))
    from active_memory.runlog.canonical import graph_hash

    return {
        "schema": "active-memory/run@1",
        "run_id": RUN_ID,
        "title": "Accept a currency when creating checkout sessions",
        "outcome": "succeeded",
        "seeded": False,
        "source": {"repository": "acme/api", "branch": "main", "revision": COMMIT},
        "repository": {
            "namespace": "repo:github.com/acme/api",
            "checkout": CHECKOUT,
            "remote": "git@github.com:acme/api.git",
            "aliases": ["api", "acme/api"],
        },
        "graph": {"name": "software-change", "hash": graph_hash(graph), "ir": graph},
        "runtime": json.loads(CONFIG_FILE.read_text(encoding="utf-8")),
        "events": events(),
        "completions": COMPLETIONS,
        "receipts": [
            {"node": node, "tool": tool, "at": at(m), "paths": [f"{CHECKOUT}/{p}" for p in paths]}
            for m, node, tool, paths in RECEIPTS
        ],
        "deliveries": [
            {"session": session, "lesson": lesson, "revision": revision, "at": at(m)}
            for session, lesson, revision, m in DELIVERIES
        ],
    }


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else HERE / "run.json"
    out.write_text(json.dumps(run_record(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
