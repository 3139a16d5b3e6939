"""The web view's postmortems and costs pages, from a real journal and real recall
records in a state dir of the test's own."""

from __future__ import annotations

import json
import marshal
import re
from pathlib import Path

from conftest import Backend
from starlette.testclient import TestClient
from ui_support import MARKUP, TOKEN, login, publish, seed_mutations

from active_memory.orchestrator.journal import Journal, store_journal_dir
from active_memory.orchestrator.report import UsageReport
from active_memory.recall.frame import render_card
from active_memory.ui.app import create_app
from active_memory.ui.auth import Gate


def _state(tmp_path: Path, location: str) -> dict[str, str]:
    env = {"ZEROSHOT_STATE_DIR": str(tmp_path / "state")}
    journal = Journal(store_journal_dir(location, env))  # the store's own journal
    first = journal.started("run-a", "succeeded")
    journal.write(first.model_copy(update={
        "state": "finished", "started_at": "2026-11-30T10:00:00Z",
        "ended_at": "2026-11-30T10:02:00Z",
        "usage": UsageReport(input_tokens=1000, output_tokens=200, requests=4, cost_usd=0.5),
        "specialist_usage": {
            "repository_discovery": UsageReport(input_tokens=600, output_tokens=150, requests=3),
            "repository_maintenance": UsageReport(input_tokens=400, output_tokens=50, requests=1),
        },
        "published": {"created": 1, "adapted": 0, "retired": 0, "deferred": 0, "kept": 2,
                      "proposed": 0},
    }))  # fmt: skip
    second = journal.started(f"run-{MARKUP}", "failed")
    journal.write(second.model_copy(update={
        "state": "failed", "started_at": "2026-12-01T09:00:00Z",
        "ended_at": "2026-12-01T09:00:05Z", "reason": "the provider refused: bad key",
        "usage": UsageReport(input_tokens=10, output_tokens=0, requests=1, complete=False),
    }))  # fmt: skip
    recall = tmp_path / "state" / "active-memory" / "recall"
    (recall / "sessions").mkdir(parents=True)
    (recall / "sessions" / "sess-1.ledger").write_bytes(
        marshal.dumps({"spent": 812, "delivered": [("L-1", 1), ("L-3", 1)]})
    )
    runs = recall / "runs" / "run-a"
    runs.mkdir(parents=True)
    lines = [{"session": "sess-1", "lesson": "L-1", "revision": 1, "at": "x"},
             {"session": "sess-2", "lesson": "L-1", "revision": 1, "at": "x"},
             {"session": "sess-1", "lesson": "L-3", "revision": 1, "at": "x"}]  # fmt: skip
    (runs / "deliveries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return env


def _queue(location: str) -> None:
    """Three sessions in the store's queue: one failed, one running, one pending."""
    import anyio

    from active_memory.store import open_store
    from active_memory.store.queue import SessionEnd

    async def main() -> None:
        async with open_store(location) as store:
            queue = store.queue
            for n in (1, 2, 3):
                await queue.enqueue(SessionEnd(harness="claude", session_id=f"s-{n}",
                                               transcript="", cwd=f"/w/{MARKUP}",
                                               event="SessionEnd"))  # fmt: skip
            first, _running = await queue.claim("w1", limit=2, lease=60, settle=0)
            await queue.finish(first.id, "w1", "failed", reason="transcript unreadable")

    anyio.run(main, backend="asyncio")


def test_postmortems_and_costs_pages_show_the_journal_and_recall_records(
    backend: Backend, tmp_path: Path
) -> None:
    publish(backend.location, seed_mutations())
    _queue(backend.location)
    env = _state(tmp_path, backend.location)
    app = create_app(backend.location, Gate(TOKEN), env=env)
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as client:
        for path in ("/postmortems", "/costs", "/api/postmortems", "/api/costs"):
            assert client.get(path).status_code == 401, path
        login(client)
        page = client.get("/postmortems").text
        assert "the provider refused: bad key" in page and "(at least)" in page
        assert MARKUP not in page and "&lt;script&gt;" in page
        assert "created 1" in page and "kept 2" in page
        data = client.get("/api/postmortems").json()
        assert [p["run_id"] for p in data["postmortems"]] == [f"run-{MARKUP}", "run-a"]
        assert data["counts"] == {"running": 0, "finished": 1, "partial": 0, "failed": 1,
                                  "cancelled": 0}  # fmt: skip
        assert data["queue_counts"] == {"pending": 1, "running": 1, "failed": 1}
        assert data["queue"]["failed"][0]["reason"] == "transcript unreadable"
        assert data["queue"]["running"][0]["lease_owner"] == "w1"
        assert "transcript unreadable" in page and "/w/&lt;script&gt;" in page

        costs = client.get("/api/costs").json()
        assert [(d["day"], d["tokens"], d["requests"]) for d in costs["per_day"]] == [
            ("2026-11-30", 1200, 4), ("2026-12-01", 10, 1),
        ]  # fmt: skip
        assert costs["per_day"][0]["cost_usd"] == 0.5 and costs["per_day"][1]["cost_usd"] is None
        assert [(s["specialist"], s["tokens"]) for s in costs["per_specialist"]] == [
            ("repository_discovery", 750), ("repository_maintenance", 450),
        ]  # fmt: skip
        assert costs["per_session"] == [{"session": "sess-1", "bytes": 812, "cards": 2}]
        card_1 = len(render_card("L-1", 1, "Regenerate the client through make api-client",
                                 "After editing `api/schema.json` run `make api-client`.")
                     .encode())  # fmt: skip
        by_lesson = {x["lesson"]: x for x in costs["per_lesson"]}
        assert by_lesson["L-1"] == {"lesson": "L-1", "deliveries": 2, "bytes": 2 * card_1}
        assert by_lesson["L-3"]["deliveries"] == 1

        html = client.get("/costs").text
        charts = re.findall(r'<figure class="chart">.*?</figure>', html, re.S)
        assert len(charts) == 2 and all("<script" not in c for c in charts)
        assert charts[0].count("<rect") == 2 * 2  # two days, two series stacked
        assert MARKUP not in html and "run-&lt;script&gt;" in html


def test_the_costs_page_counts_the_cards_a_real_hook_delivered(tmp_path: Path) -> None:
    """The hook records a session's deliveries under its run key `session:<id>`, a folder
    named `session%3A<id>`: the per-lesson table reads that folder as it is."""
    from conftest import AUTHOR, NAMESPACE
    from recall_support import claude_payload, hook_env, make_checkout, run_hook

    from active_memory.lessons import Associations, Card, CreateLesson, RepositoryScope

    root = make_checkout(tmp_path / "api")
    (root / "src").mkdir()
    (root / "src" / "client.ts").write_text("export {}\n")
    store = tmp_path / "lessons.sqlite3"
    card = Card(title="Regenerate the client", recommendation="Run `make api-client` first.",
                associations=Associations(folders=["src"]))  # fmt: skip
    scope = RepositoryScope(repository=NAMESPACE)
    publish(str(store), [CreateLesson(scope=scope, card=card, author=AUTHOR)])
    env = hook_env(tmp_path / "state", store)
    payload = claude_payload("Read", {"file_path": str(root / "src" / "client.ts")},
                             session="sess-9", cwd=root)  # fmt: skip
    answer = run_hook("claude", json.dumps(payload), env)
    assert answer.returncode == 0, answer.stderr
    assert "(L-1 r1)" in answer.stdout.decode()
    runs = tmp_path / "state" / "active-memory" / "recall" / "runs"
    assert [p.name for p in runs.iterdir()] == ["session%3Asess-9"]
    app = create_app(str(store), Gate(TOKEN), env=env)
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as client:
        login(client)
        costs = client.get("/api/costs").json()
        size = len(render_card("L-1", 1, card.title, card.recommendation).encode())
        assert costs["per_lesson"] == [{"lesson": "L-1", "deliveries": 1, "bytes": size}]
        page = client.get("/costs").text
        assert 'href="/lessons/L-1">L-1</a>' in page


def test_both_pages_say_whether_and_where_the_worker_runs_and_what_each_day_cost(
    tmp_path: Path,
) -> None:
    import os
    import socket
    import time

    from active_memory.worker_state import (
        WorkerFiles,
        record_spend,
        take_lock,
        utc_day,
        write_status,
    )

    location = str(tmp_path / "lessons.sqlite3")
    publish(location, seed_mutations())
    env = {"ZEROSHOT_STATE_DIR": str(tmp_path / "state"), "PATH": "/usr/bin:/bin"}
    settings = tmp_path / "state" / "active-memory" / "settings.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text('[worker]\ndaily_tokens = 50000\n\n[worker.env]\nANTHROPIC_API_KEY = '
                        '"sk-ant-api03-NEVERSHOWNkey0123456789abcdef"\n')  # fmt: skip
    files = WorkerFiles.of(location, env)
    today, yesterday = utc_day(), utc_day(time.time() - 86400)
    for day, tokens, cost in ((today, 1500, 0.25), (today, 500, 0.5), (yesterday, 300, None)):
        record_spend(files, {"day": day, "run_id": "r", "input_tokens": tokens,
                             "output_tokens": 100, "cost_usd": cost, "requests": 2})  # fmt: skip
    app = create_app(location, Gate(TOKEN), env=env)
    with TestClient(app, base_url="http://127.0.0.1", follow_redirects=False) as client:
        login(client)
        worker = client.get("/api/costs").json()["worker"]
        assert worker["status"]["running"] is False and worker["auto_start"] is True
        assert worker["today"] == {"day": today, "postmortems": 2, "input_tokens": 2000,
                                   "output_tokens": 200, "tokens": 2200, "cost_usd": 0.75,
                                   "complete": True}  # fmt: skip
        assert (worker["days"][1]["tokens"], worker["days"][1]["cost_usd"]) == (400, None)
        for path in ("/costs", "/postmortems"):
            html = client.get(path).text
            assert "Not running; the next session end starts one." in html, path
            assert "daily cap 50,000 tokens" in html
            row = re.search(r'<table id="worker-days".*?</table>', html, re.S)
            assert row is not None
            assert f'{today} <span class="muted">(today)</span>' in row.group(0)
            assert "2,000" in row.group(0) and "$0.75" in row.group(0)
            assert "not reported by the lane" in row.group(0)  # yesterday's lane gave no $
            assert "NEVERSHOWN" not in html
        # A worker of this machine holds the store's lock: the page says where it runs.
        held = take_lock(files.lock)
        assert held is not None
        try:
            status = {"pid": os.getpid(), "host": socket.gethostname(), "auto": True,
                      "started_at": "2026-12-07T10:00:00Z", "model": None,
                      "lane": "lane claude (from the settings)"}  # fmt: skip
            write_status(files, status)
            html = client.get("/costs").text
        finally:
            os.close(held)
        assert (
            f"Automatic worker running: pid {os.getpid()} on <code>{socket.gethostname()}"
            "</code> since 2026-12-07 10:00:00; lane claude (from the settings)."
        ) in html
        # Switched off: the page says so and what to run instead.
        settings.write_text("[worker]\nenabled = false\n")
        html = client.get("/postmortems").text
        assert "session ends start none ([worker] enabled = false in" in html
        assert "run <code>active-memory worker</code>" in html
