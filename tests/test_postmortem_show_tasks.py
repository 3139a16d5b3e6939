"""`active-memory postmortem RUN.json --show-tasks DIR`: each specialist's exact prompt,
system instructions and task, written without calling a model; and what the tasks of the
bundled example now hold (the code, the run, the scope's lessons)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from test_postmortem_cli import RUN, checkout, run_cli, snapshot, state

from active_memory.prompts import load_prompts
from active_memory.specialists.tasks import DiscoveryTask, MaintenanceTask

__all__ = ["checkout", "state"]  # fixtures, used by name

SPECIALISTS = (
    "graph_maintenance",
    "repository_maintenance",
    "graph_discovery",
    "repository_discovery",
)


def show(checkout: Path, directory: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(
        "postmortem", str(RUN), "--checkout", str(checkout), "--show-tasks", str(directory), *extra
    )


def test_show_tasks_writes_the_exact_prompt_of_every_specialist_without_a_model(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    before = snapshot(state)
    out_dir = tmp_path / "tasks"
    code, out, err = show(checkout, out_dir, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["run_id"] == "run-2026-11-28-e" and report["not_asked"] == {}
    assert len(report["written"]) == 12
    prompts = load_prompts()
    for name in SPECIALISTS:
        prompt = (out_dir / f"{name}.prompt.md").read_text()
        data = json.loads((out_dir / f"{name}.task.json").read_text())
        model = MaintenanceTask if "maintenance" in name else DiscoveryTask
        # The prompt is exactly the rendering of the task written beside it.
        assert prompts.render(name, model.model_validate(data)) == prompt
        system = (out_dir / f"{name}.system.md").read_text()
        assert "JSON schema" in system
        mode = stat.S_IMODE((out_dir / f"{name}.prompt.md").stat().st_mode)
        assert mode == 0o600  # code and run data: private to the user
    assert snapshot(state) == before  # nothing published, no journal written


def test_the_example_tasks_hold_the_code_the_run_and_the_scope(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    out_dir = tmp_path / "tasks"
    assert show(checkout, out_dir)[0] == 0
    maintenance = json.loads((out_dir / "repository_maintenance.task.json").read_text())
    # Reading order: run first, then the evidence, then the lessons, then the code.
    assert list(maintenance)[:4] == ["specialist", "run", "evidence", "lessons"]
    files = {f["path"]: f for f in maintenance["files"]}
    assert any(line.startswith("1: ") for line in files["Makefile"]["content"])
    assert maintenance["listing"] and all("entries" in x for x in maintenance["listing"])
    by_id = {x["id"]: x for x in maintenance["lessons"]}
    # L-2 (the sandbox marker) concerns the review rounds whose texts name its files.
    assert by_id["L-2"]["run_evidence"]
    evidence = {item["id"]: item for item in maintenance["evidence"]}
    shown = [c["text"] for i in by_id["L-2"]["run_evidence"] for c in evidence[i]["completions"]]
    assert any("stripe_sandbox" in text for text in shown)
    discovery = json.loads((out_dir / "repository_discovery.task.json").read_text())
    assert {x["id"] for x in discovery["lessons"]} >= {"L-1", "L-2"}
    touched = {f["path"] for f in discovery["files"]}
    assert "src/checkout/currencies.py" in touched
    currencies = next(f for f in discovery["files"] if f["path"] == "src/checkout/currencies.py")
    assert any("SUPPORTED_CURRENCIES" in line for line in currencies["content"])


def test_show_tasks_into_a_file_exits_2_and_writes_nothing(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    target = tmp_path / "not-a-folder"
    target.write_text("x")
    before = snapshot(state)
    code, _, err = show(checkout, target)
    assert code == 2 and "--show-tasks" in err and str(target) in err
    assert target.read_text() == "x" and snapshot(state) == before


def test_show_tasks_with_replay_is_a_usage_error(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    code, _, err = show(checkout, tmp_path / "tasks", "--replay", str(tmp_path / "r.json"))
    assert code == 2 and "--show-tasks asks no model" in err
    assert not (tmp_path / "tasks").exists()


def _seconds(prompt_chars: int, answer: int, reasoning: int) -> float:
    """The documented time model (docs/specialists.md), redone here from its rates."""
    prompt = -(-prompt_chars // 4)  # 4 characters a token, rounded up
    first = prompt / 2000 + (reasoning + answer) / 50
    repair = (prompt + answer + 300) / 2000 + (reasoning + answer) / 50
    return first + repair


def test_show_tasks_estimates_each_specialists_time_and_warns_when_120_s_do_not_fit(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    out_dir = tmp_path / "tasks"
    code, out, err = show(checkout, out_dir, "--json")
    assert code == 0, err
    estimate = json.loads(out)["estimate"]
    # The example keeps the seed's 120 s, and its source node asks for high effort.
    assert (estimate["timeout_ms"], estimate["effort"]) == (120_000, "high")
    assert estimate["write_tokens_per_second"] == 50 and estimate["repair_turns_per_ask"] == 1
    assert set(estimate["specialists"]) == set(SPECIALISTS)
    for name, entry in estimate["specialists"].items():
        chars = len((out_dir / f"{name}.prompt.md").read_text()) + len(
            (out_dir / f"{name}.system.md").read_text()
        )
        assert entry["asks"] == entry["repair_turns"] == 1
        assert entry["prompt_tokens"] == -(-chars // 4)
        assert entry["reasoning_tokens"] == 8000  # high effort
        expected = _seconds(chars, entry["answer_tokens"], 8000)
        assert abs(entry["seconds"] - expected) < 0.1
        assert entry["fits"] is (expected <= 120)
    # 8,000 reasoning tokens twice at 50 tokens/s is 320 s alone: 120 s cannot fit.
    assert estimate["fits"] is False
    code, text, _ = show(checkout, tmp_path / "again")
    assert code == 0
    assert "DOES NOT FIT" in text and "warning: " in text
    assert "globalAgents.postmortem.timeoutMs" in text


def test_show_tasks_says_a_larger_timeout_at_low_effort_fits(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    runtime = json.loads(RUN.read_text())["runtime"]
    runtime["nodes"]["worker"]["effort"] = "low"
    runtime["globalAgents"]["postmortem"]["timeoutMs"] = 600_000
    config = tmp_path / "runtime.json"
    config.write_text(json.dumps(runtime))
    code, out, err = show(checkout, tmp_path / "tasks", "--config", str(config), "--json")
    assert code == 0, err
    estimate = json.loads(out)["estimate"]
    assert (estimate["timeout_ms"], estimate["effort"]) == (600_000, "low")
    assert estimate["fits"] is True
    assert all(e["reasoning_tokens"] == 1000 for e in estimate["specialists"].values())
    code, text, _ = show(checkout, tmp_path / "again", "--config", str(config))
    assert "warning" not in text and text.count(", fits") == 4
