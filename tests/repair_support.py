"""The repair turn in every lane (issue 27, SPEC §6): the bundled example's run and
checkout, a repository discovery answer that fails once (an unknown field and a citation
of lines 200-260 of a 27-line file) and its repair, a destructive answer, and answers for
the other specialists from the example's recordings.

`respond` answers the fake model server's requests (API lanes and the real CLIs),
`answer_exchange` the exchange lane's task files; both answer repository discovery's
repair turn (the request or task that carries our repair message) with `REPAIRED`.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT
from fakes.model_server import Received, Turn, answer

from active_memory.cli import main

EXAMPLES = REPO_ROOT / "examples"
RUN = EXAMPLES / "run.json"
RECORDINGS = EXAMPLES / "recordings.json"
REPAIR_HEADER = "Your previous answer was not accepted:"
_SPECIALIST = re.compile(r"You are the (graph|repository) (discovery|maintenance) specialist")
TITLE = "Validate currencies with normalize_currency, not a local list"
RULE_ONLY = "lessons[0]: refused by destroy-data"


def run_cli(*argv: str) -> tuple[int, str, str]:
    """`active-memory ARGV` in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def example_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state dir holding the example's lessons, and a fresh copy of its checkout."""
    monkeypatch.setenv("ZEROSHOT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("ACTIVE_MEMORY_STORE", raising=False)
    code, _, err = run_cli("lessons", "import", str(EXAMPLES / "lessons.jsonl"))
    assert code == 0, err
    spec = importlib.util.spec_from_file_location("make_checkout", EXAMPLES / "make_checkout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    checkout = tmp_path / "acme-api"
    module.make_checkout(checkout)
    return checkout


def runtime(tmp_path: Path, harness: str, provider: str, env: list[str]) -> Path:
    """The example's runtime JSON on `harness`/`provider`, declaring `env` for the worker."""
    document = json.loads(RUN.read_text())["runtime"]
    document["harness"], document["provider"] = harness, provider
    model = "claude-sonnet-5" if harness == "claude" else "gpt-5.1-codex"
    document["nodes"]["worker"] = {"kind": "agent", "model": model, "env": env}
    path = tmp_path / f"runtime-{harness}-{provider}.json"
    path.write_text(json.dumps(document))
    return path


def _evidence(kind: str) -> str:
    """An evidence ID of the example's run (as the recorded discovery answers cite it)."""
    for recording in json.loads(RECORDINGS.read_text())["recordings"]:
        if recording["specialist"] == "repository_discovery":
            for cited in recording["answer"]["lessons"][0]["evidence"]:
                if cited.startswith(kind):
                    return str(cited)
    raise AssertionError(f"no {kind} evidence in the recordings")


def _lesson(lines: list[int]) -> dict[str, Any]:
    return {
        "title": TITLE,
        "recommendation": "Look currency codes up through `normalize_currency()` and "
        "`SUPPORTED_CURRENCIES` in src/checkout/currencies.py; adding a currency means adding "
        "it there and to the `currency` enum in api/schema.json, then `make api-client`.",
        "associations": {
            "files": ["src/checkout/currencies.py"],
            "identifiers": ["SUPPORTED_CURRENCIES", "normalize_currency"],
        },
        "evidence": [_evidence("ev-rr-")],
        "citations": [{"path": "src/checkout/currencies.py", "lines": lines}],
        "why_recurs": "Both reviewers rejected round 1 for a hand-kept currency list.",
    }


def first_answer() -> dict[str, Any]:
    """Refused twice over: an unknown field (`confidence`) and lines 200-260 of a file of
    27 lines (rule citation-lines)."""
    lesson = _lesson([200, 260])
    lesson["confidence"] = 0.9
    return {"lessons": [lesson]}


def repaired_answer() -> dict[str, Any]:
    """Both faults fixed."""
    return {"lessons": [_lesson([5, 19])]}


def destructive_answer() -> dict[str, Any]:
    """A card that destroys data, with an out-of-range citation too: refused by its rule's
    name alone, with no repair turn (so nothing says what else was wrong)."""
    lesson = _lesson([200, 260])
    lesson["recommendation"] = (
        "Before `make api-client`, run `rm -rf src/checkout` and restore it with "
        "`git checkout src/checkout/currencies.py`."
    )
    return {"lessons": [lesson]}


def recorded(specialist: str) -> Any:
    """The example's recorded first answer for `specialist`."""
    for recording in json.loads(RECORDINGS.read_text())["recordings"]:
        if recording["specialist"] == specialist:
            return copy.deepcopy(recording["answer"])
    raise AssertionError(f"no recording for {specialist}")


def specialist_of(text: str) -> str | None:
    """The specialist a prompt (or request body) is for."""
    found = _SPECIALIST.search(text)
    return f"{found.group(1)}_{found.group(2)}" if found else None


def responder(discovery_first: dict[str, Any]) -> Callable[[Received], Turn | None]:
    """A `respond` for the fake model server: repository discovery answers
    `discovery_first`, then `repaired_answer()` to our repair message; the other
    specialists answer as the example's recordings do."""

    def respond(request: Received) -> Turn | None:
        dump = request.dump()
        name = specialist_of(dump)
        if name is None:
            return None
        if name != "repository_discovery":
            return answer(recorded(name))
        return answer(repaired_answer() if REPAIR_HEADER in dump else discovery_first)

    return respond


def discovery_requests(requests: list[Received]) -> tuple[list[Received], list[Received]]:
    """Repository discovery's model requests, and those of them carrying our repair message."""
    asked = [r for r in requests if specialist_of(r.dump()) == "repository_discovery"]
    return asked, [r for r in asked if REPAIR_HEADER in r.dump()]


def assert_repaired_and_published(report: dict[str, Any], repair_text: str) -> None:
    """Repository discovery took one repair turn, listing both faults, and published."""
    entry = report["specialists"]["repository_discovery"]
    assert entry["status"] == "reconciled", entry
    assert entry["repair_turns"] == 1
    assert [a["title"] for a in entry["accepted"]] == [TITLE] and entry["rejected"] == []
    # The one repair turn lists each failure: the unknown field and the citation.
    assert "lessons[0].confidence" in repair_text and "is not a known field" in repair_text
    assert "citation-lines" in repair_text and "200-260" in repair_text
    created = [m for m in report["mutations"] if m["action"] == "create" and m["title"] == TITLE]
    assert len(created) == 1 and created[0]["revision"] == 1  # published, not only decided


def assert_refused_without_repair(report: dict[str, Any]) -> None:
    """The destructive card is refused by its rule's name alone; no repair turn."""
    entry = report["specialists"]["repository_discovery"]
    assert entry["status"] == "reconciled", entry
    assert "repair_turns" not in entry
    assert entry["accepted"] == []
    [rejected] = entry["rejected"]
    assert rejected["reasons"] == [RULE_ONLY]  # no detail beyond the rule's name
    assert all(m["title"] != TITLE for m in report["mutations"])


class ExchangeAnswerer:
    """Answers the exchange lane's task files from a thread, as a host would: repository
    discovery with `discovery_first`, its repair task with `repaired_answer()`, the other
    specialists with the example's recordings."""

    def __init__(self, directory: Path, discovery_first: dict[str, Any]) -> None:
        self.directory = directory
        self.first = discovery_first
        self.stop = threading.Event()
        self.tasks: dict[str, dict[str, Any]] = {}
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ExchangeAnswerer:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)

    def _run(self) -> None:
        while not self.stop.wait(0.1):
            for task_file in sorted(self.directory.glob("*.task.json")):
                try:
                    task = json.loads(task_file.read_text())
                except (OSError, ValueError):
                    continue  # being written
                self.tasks[task_file.name] = task
                target = self.directory / task["answer_file"]
                if target.exists():
                    continue
                name = task["specialist"]
                if name != "repository_discovery":
                    body = recorded(name)
                elif task_file.name.endswith(".repair.task.json"):
                    body = repaired_answer()
                else:
                    body = self.first
                envelope = {
                    "schema": "active-memory/exchange-answer@1",
                    "specialist": name,
                    "digest": task["digest"],
                    "answer": body,
                }
                partial = target.with_suffix(".partial")
                partial.write_text(json.dumps(envelope))
                partial.rename(target)
