"""The journal keeps every postmortem of a run, and the view shows a partly failed one as
such (issue 30): the bundled example run postmortemed twice through the real command,
the second time with recorded answers for one specialist only."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.testclient import TestClient
from test_postmortem_cli import RECORDINGS, RUN, checkout, postmortem, run_cli, state
from ui_support import TOKEN, login

from active_memory.orchestrator.journal import Journal, store_journal_dir
from active_memory.ui.app import create_app
from active_memory.ui.auth import Gate

__all__ = ["checkout", "state"]  # fixtures used by name
RUN_ID = json.loads(RUN.read_text())["run_id"]


def test_a_rerun_keeps_the_earlier_entry_and_a_partial_failure_shows_as_partial(
    state: Path, checkout: Path, tmp_path: Path
) -> None:
    code, _, err = postmortem(checkout, "--json")
    assert code == 0, err
    recorded = json.loads(RECORDINGS.read_text())
    only_one = [r for r in recorded["recordings"] if r["specialist"] == "repository_maintenance"]
    partial = tmp_path / "one-specialist.json"
    partial.write_text(json.dumps({**recorded, "recordings": only_one}))
    code, out, _ = run_cli("postmortem", str(RUN), "--checkout", str(checkout), "--replay",
                           str(partial), "--json")  # fmt: skip
    statuses = {name: s["status"] for name, s in json.loads(out)["specialists"].items()}
    assert sorted(statuses.values()).count("failed") == 3, statuses

    location = str(state / "active-memory" / "lessons.sqlite3")
    journal = Journal(store_journal_dir(location))
    assert journal.attempts(RUN_ID) == [1, 2]
    first, second = (journal.path(RUN_ID, n) for n in (1, 2))
    assert first.name == f"{RUN_ID}.json" and second.name == f"{RUN_ID}@2.json"
    latest = journal.read(RUN_ID)
    assert latest is not None and latest.attempt == 2 and latest.verdict() == "partial"
    assert latest.state == "finished" and len(latest.failed_specialists()) == 3

    app = create_app(location, Gate(TOKEN))
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as client:
        login(client)
        data = client.get(f"/api/postmortems?run={RUN_ID}").json()
        assert [(p["attempt"], p["state"]) for p in data["postmortems"]] == [
            (2, "partial"), (1, "finished")]  # fmt: skip
        assert data["counts"]["partial"] == 1 and data["counts"]["finished"] == 1
        assert data["postmortems"][1]["published"]["created"] >= 1  # the first is kept
        page = client.get(f"/postmortems?run={RUN_ID}").text
        assert "3 of 4 specialists failed" in page and "postmortem #2" in page
        assert '<td class="state-partial">partial' in page
