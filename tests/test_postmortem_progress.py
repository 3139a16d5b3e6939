"""`postmortem`'s progress for people: every line says how long the postmortem has run,
and on the exchange lane where each task's files are (docs/orchestrator.md, "Progress")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_postmortem_cli import RUN, checkout, run_cli, state  # noqa: F401


def _short_run(tmp_path: Path, timeout_ms: int) -> Path:
    document = json.loads(RUN.read_text(encoding="utf-8"))
    document["runtime"]["globalAgents"]["postmortem"]["timeoutMs"] = timeout_ms
    path = tmp_path / "run-short.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_the_exchange_lane_says_where_each_task_and_its_answer_file_are(
    state: Path,  # noqa: F811
    checkout: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    code, _, err = run_cli(
        "postmortem", str(_short_run(tmp_path, 3000)), "--checkout", str(checkout),
        "--lane", "exchange", "--exchange-dir", str(exchange), "--dry-run",
    )  # fmt: skip
    assert code == 1  # nobody answered before the deadline
    assert f"postmortem: task and answer files in {exchange}" in err
    waiting = re.findall(r"postmortem: (\w+): waiting for (\S+) \(the task is (\S+)\)", err)
    assert {name for name, _, _ in waiting} >= {"repository_discovery", "graph_discovery"}
    for _, answer, task in waiting:
        # The files named are the ones written: the task, and where its answer goes.
        assert Path(task).is_file() and Path(task).parent == exchange
        assert json.loads(Path(task).read_text())["answer_file"] == Path(answer).name
        assert Path(answer).parent == exchange and not Path(answer).exists()
    assert all(re.search(r" \(at \d+\.\ds\)$", line) for line in err.splitlines()
               if "waiting for" in line)  # fmt: skip


def test_on_a_terminal_each_specialist_shows_its_elapsed_time_and_waiting_task(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from active_memory.commands.postmortem_view import Display
    from active_memory.orchestrator import ProgressEvent
    from active_memory.specialists.providers.exchange import Pending

    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich's own switch: stderr is a terminal
    monkeypatch.delenv("CI", raising=False)
    display = Display(json_mode=False)
    assert display.live
    display.event(ProgressEvent("started", "repository_discovery"))
    task, answer = tmp_path / "rd-1.task.json", tmp_path / "rd-1.answer.json"
    display.waiting(Pending("repository_discovery", "d" * 64, task, answer))
    display.event(ProgressEvent("finished", "repository_discovery", "reconciled"))
    display.close()
    err = capsys.readouterr().err
    assert f"waiting for {answer} (the task is {task})" in err.replace("\n", "")
    row = next(line for line in err.splitlines()[::-1] if "repository_discovery" in line)
    assert re.search(r"\d:\d\d:\d\d", row) and "reconciled" in row
