"""The settings files in the postmortem: switches, and `exclude` leaving no trace.

Runs the bundled example (examples/run.json and a fresh copy of its checkout) as
tests/test_postmortem_cli.py does. The specialists answer through the real provider
interface (`FunctionSession`) with the example's recorded answers, chosen by specialist
rather than by input digest: what an exclusion does to a task changes its digest, and
the answers must still come so the checks decide.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import REPO_ROOT
from test_postmortem_cli import RECORDINGS, RUN, checkout, run_cli, state, write_json

from active_memory.cli import build_parser
from active_memory.commands.postmortem import run_command
from active_memory.specialists.providers.base import ProviderSession, Request
from active_memory.specialists.providers.function import FunctionSession

__all__ = ["checkout", "state"]  # fixtures


def _recorded_answers() -> dict[str, Any]:
    document = json.loads(RECORDINGS.read_text(encoding="utf-8"))
    return {item["specialist"]: item["answer"] for item in document["recordings"]}


def _sessions(specialist: str, *, deadline: float) -> ProviderSession:
    answer = _recorded_answers()[specialist]

    async def reply(request: Request) -> Any:
        return answer

    return FunctionSession(specialist, reply, model="recorded", deadline=deadline)


def postmortem(checkout: Path, *extra: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(["postmortem", str(RUN), "--checkout", str(checkout), *extra])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = run_command(args, sessions=_sessions)
        except Exception as exc:  # the CLI's own error path: message and exit code
            from active_memory.errors import ActiveMemoryError

            if not isinstance(exc, ActiveMemoryError):
                raise
            print(f"active-memory: {exc}", file=__import__("sys").stderr)
            code = exc.exit_code
    return code, out.getvalue(), err.getvalue()


EXCLUDED = "src/checkout/currencies.py"
"""The file the example's repository discovery cites for the lesson it adds."""


def _store_lessons() -> str:
    code, out, err = run_cli("lessons", "export")
    assert code == 0, err
    return out


def _files_holding(folder: Path, text: str) -> list[str]:
    found = subprocess.run(
        ["grep", "-rlF", text, str(folder)], capture_output=True, text=True, check=False
    )
    return sorted(found.stdout.split())


def _added(before: str, after: str) -> list[str]:
    return sorted(set(after.splitlines()) - set(before.splitlines()))


def test_without_exclude_the_run_teaches_a_lesson_citing_the_file(
    state: Path, checkout: Path
) -> None:
    # The control: the same run, nothing excluded, stores the cited path.
    before = _store_lessons()
    code, _, err = postmortem(checkout)
    assert code == 0, err
    assert any(EXCLUDED in line for line in _added(before, _store_lessons()))


def test_an_excluded_path_leaves_no_trace_in_any_stored_artifact(
    state: Path, checkout: Path
) -> None:
    (checkout / ".active-memory.toml").write_text('exclude = ["src/checkout/"]\n')
    before = _store_lessons()
    artifacts_before = _files_holding(state, EXCLUDED)
    code, out, err = postmortem(checkout, "--json")
    assert code == 0, err
    report = json.loads(out)["specialists"]["repository_discovery"]
    assert report["accepted"] == []
    assert any("excluded by the exclude setting" in r["reason"] for r in report["rejected"])
    # No new lesson names it; no journal, snapshot, generation or log holds it.
    assert not any(EXCLUDED in line for line in _added(before, _store_lessons()))
    store_files = {str(p) for p in state.rglob("lessons.sqlite3*")}
    new_files = set(_files_holding(state, EXCLUDED)) - set(artifacts_before) - store_files
    assert new_files == set()
    assert list((state / "active-memory" / "postmortems").iterdir())  # the journal exists


def test_a_repository_file_switches_a_scope_off_when_the_run_does_not_say(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    config = json.loads((REPO_ROOT / "config.example.json").read_text())
    (checkout / ".active-memory.toml").write_text("graph = false\n")
    # The run's own activeMemory section wins over the file.
    config["activeMemory"] = {"repository": True, "graph": True}
    path = write_json(tmp_path / "config.json", config)
    code, out, err = postmortem(checkout, "--config", str(path), "--json", "--dry-run")
    assert code == 0, err
    statuses = {k: v["status"] for k, v in json.loads(out)["specialists"].items()}
    assert statuses["graph_discovery"] != "disabled"
    # Without the section, the file decides.
    config.pop("activeMemory")
    path = write_json(tmp_path / "config.json", config)
    code, out, err = postmortem(checkout, "--config", str(path), "--json")
    assert code == 0, err
    statuses = {k: v["status"] for k, v in json.loads(out)["specialists"].items()}
    assert statuses["graph_maintenance"] == statuses["graph_discovery"] == "disabled"
    assert statuses["repository_discovery"] == "reconciled"


def test_enabled_false_in_the_users_file_stops_the_postmortem(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    config = json.loads((REPO_ROOT / "config.example.json").read_text())
    config.pop("activeMemory")
    path = write_json(tmp_path / "config.json", config)
    (state / "active-memory" / "settings.toml").write_text("enabled = false\n")
    code, out, err = postmortem(checkout, "--config", str(path), "--json")
    assert code == 0, err
    statuses = {k: v["status"] for k, v in json.loads(out)["specialists"].items()}
    assert set(statuses.values()) == {"disabled"}


def test_a_broken_settings_file_stops_the_postmortem_with_exit_2(
    state: Path, checkout: Path
) -> None:
    (checkout / ".active-memory.toml").write_text("exclude = 3\n")
    code, _, err = postmortem(checkout)
    assert code == 2 and "exclude: must be a list" in err
