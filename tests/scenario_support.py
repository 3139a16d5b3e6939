"""Information-sufficiency scenarios (`tests/fixtures/scenarios/<name>/`): a recorded run
(`run.json`), the repository it ran in (`files/`, made a real git checkout here), the
lessons stored before it (`scenario.json` → `stored`), and the lessons a careful engineer
would write from it (`expected`), each with the paths, identifiers and commands it uses.

`asked(scenario, tmp)` runs the real postmortem on it, dry, with capture sessions (no
model), and returns what each specialist received; `coverage` says which of an expected
lesson's paths, identifiers and commands the specialist's task holds. A path or an
identifier must appear verbatim; a command when each of its words does (`make
api-client` is in a task that shows the Makefile's `api-client:` target).

`build_run(spec)` makes `run.json` from the scenario's compact `run` description;
`python tests/scenario_support.py` rewrites every `run.json` (the test checks they match).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run_builder import RunBuilder, error, ok, software_change, verdict  # noqa: E402
from specialist_builders import with_graph_hash  # noqa: E402

SCENARIOS = HERE / "fixtures" / "scenarios"
Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Scenario:
    """One scenario folder."""

    name: str
    folder: Path
    spec: Json
    run: Json


def names() -> list[str]:
    """Every scenario, by folder name."""
    return sorted(p.name for p in SCENARIOS.iterdir() if (p / "scenario.json").is_file())


def load(name: str) -> Scenario:
    """A scenario with its recorded run."""
    folder = SCENARIOS / name
    spec = json.loads((folder / "scenario.json").read_text())
    run = json.loads((folder / "run.json").read_text())
    return Scenario(name, folder, spec, run)


def build_run(spec: Json) -> Json:
    """The run record of a scenario's `run` description (software-change graph)."""
    described = spec["run"]
    run = RunBuilder(software_change(), run_id=described["run_id"])
    failures = described.get("failures")
    if failures:
        node = failures["node"]
        for attempt, text in enumerate(failures["texts"], start=1):
            execution = run.visit(node, error(failures["code"]), attempt=attempt)
            run.completions[execution] = text
        if node == "worker":
            run.visit("worker", ok(), attempt=len(failures["texts"]) + 1)
    for index, round_ in enumerate(described.get("rounds", [])):
        worker = "worker" if index == 0 else "review_repair"
        if not (index == 0 and failures and failures["node"] == "worker"):
            execution = run.visit(worker, ok())
            if round_.get("worker_text"):
                run.completions[execution] = round_["worker_text"]
        acceptance = run.start("acceptance")
        code = run.start("code")
        run.complete(code, "code", verdict(round_["code"][0]))
        run.complete(acceptance, "acceptance", verdict(round_["acceptance"][0]))
        run.completions[code] = round_["code"][1]
        run.completions[acceptance] = round_["acceptance"][1]
    for receipt in described.get("receipts", []):
        run.receipt(
            receipt["tool"], receipt["paths"], receipt["minute"], receipt.get("node", "worker")
        )
    data = with_graph_hash(run.build())
    data["title"] = described["title"]
    data["deliveries"] = described.get("deliveries", [])
    data["runtime"] = {
        "harness": "claude",
        "provider": "anthropic",
        "size": "standard",
        "nodes": {"worker": {"kind": "agent", "model": "claude-sonnet-5"}},
    }
    return data


def make_checkout(scenario: Scenario, root: Path) -> Path:
    """The scenario's repository as a git checkout at `root` (files/ committed; a
    `.gitignore` in files/ applies)."""
    shutil.copytree(scenario.folder / "files", root)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "scenario"]):
        subprocess.run(
            ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
            cwd=root,
            check=True,
            capture_output=True,
        )
    for name, text in scenario.spec.get("untracked", {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


async def asked(scenario: Scenario, tmp_path: Path) -> dict[str, str]:
    """What each specialist received (its rendered prompts, joined) in a dry postmortem."""
    from active_memory.checkout import Checkout
    from active_memory.commands.files import read_lesson_lines
    from active_memory.lessons import Author
    from active_memory.orchestrator import config_from_record, run_postmortem
    from active_memory.orchestrator.preview import CaptureSessions
    from active_memory.runlog.record import load_run_record
    from active_memory.store import open_store

    root = make_checkout(scenario, tmp_path / "checkout")
    data = dict(scenario.run)
    data["repository"] = {**data["repository"], "checkout": str(root)}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    record = load_run_record(path)
    stored = tmp_path / "stored.jsonl"
    graph_hash = record.graph.hash if record.graph else None
    lines = [
        json.dumps(x).replace("__GRAPH_HASH__", graph_hash or "")
        for x in scenario.spec.get("stored", [])
    ]
    stored.write_text("".join(line + "\n" for line in lines))
    capture = CaptureSessions()
    async with open_store(str(tmp_path / "lessons.sqlite3"), create=True) as store:
        lessons = read_lesson_lines(str(stored))
        if lessons:
            await store.import_lessons(list(lessons), Author(specialist="scenario"))
        await run_postmortem(
            record,
            config_from_record(record),
            store,
            checkout=Checkout(root),
            sessions=capture,
            dry_run=True,
        )
    found: dict[str, list[str]] = {}
    for question in capture.captured:
        found.setdefault(question.specialist, []).append(question.prompt)
    return {name: "\n".join(prompts) for name, prompts in found.items()}


def _framed(prompt: str, drop: tuple[str, ...] = ()) -> str:
    """The task data of a prompt (inside its frame), decoded back to plain text so that a
    file line `"12: x"` or an escaped quote reads as the model reads it; `drop` leaves
    out top-level parts (the bench's baseline without the views of the code)."""
    parts = re.findall(r"^<task-data-[0-9a-f]{16}>\n(.*?)\n</task-data-", prompt, re.S | re.M)
    texts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for part in parts:
        data = json.loads(part)
        walk({key: value for key, value in data.items() if key not in drop})
    return "\n".join(texts)


def coverage(
    expected: Json, prompt: str, drop: tuple[str, ...] = ()
) -> tuple[list[str], list[str]]:
    """(found, missing) among the expected lesson's paths, identifiers and commands, in
    the task data the specialist received.

    A path or identifier must appear verbatim. A command is there when each of its words
    is (a word: a run of non-space characters, trailing `.:,;` dropped, so `api-client:`
    in a Makefile and `--timeout=300.` in a sentence count); `make` and `npm run` count
    when the task shows the `Makefile` or the `package.json` that defines the target.
    """
    text = _framed(prompt, drop)
    words = {w.rstrip(".:,;") for w in re.findall(r"[^\s`'\"(),\[\]{}]+", text)}
    found: list[str] = []
    missing: list[str] = []
    for value in [*expected.get("paths", []), *expected.get("identifiers", [])]:
        (found if value in text else missing).append(value)
    for command in expected.get("commands", []):
        parts = command.split()
        if parts[:1] == ["make"] and "Makefile" in words:
            parts = parts[1:]
        elif parts[:2] == ["npm", "run"] and "package.json" in words:
            parts = parts[2:]
        present = all(part in words for part in parts)
        (found if present else missing).append(command)
    return found, missing


def main() -> int:
    """Rewrite every scenario's run.json from its description."""
    for name in names():
        folder = SCENARIOS / name
        spec = json.loads((folder / "scenario.json").read_text())
        (folder / "run.json").write_text(json.dumps(build_run(spec), indent=2) + "\n")
        print(f"wrote {folder / 'run.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
