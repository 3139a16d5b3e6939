"""The web view in a real browser: headless Chromium (Debian's package) driven through
Playwright against `active-memory ui` serving a fixture store, with JavaScript off (every
page must work as plain HTML). Asserts on the rendered pages and on the store afterwards;
screenshots of the main pages are saved in the test's temp folder.

Skips locally when Chromium or Playwright is missing; in CI (CI=true) it must run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import CHROMIUM, CHROMIUM_FLAGS, browser_or_skip
from ui_support import (
    MARKUP,
    history,
    proposals,
    propose,
    proposed_lesson,
    publish,
    read,
    seed_mutations,
    specialist_adapt,
)

from active_memory.lessons import Lesson, Tombstone


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """`active-memory ui` on a free loopback port over a seeded store: (login link, store)."""
    store = str(tmp_path / "lessons.sqlite3")
    publish(store, seed_mutations())
    sdk = "Run `make sdk` after `api/schema.json` edits."
    propose(store, [
        proposed_lesson("Regenerate the SDK after schema edits", sdk),
        proposed_lesson("Run the linter first", "Run `make lint` before `make api-client`."),
    ])  # fmt: skip
    from test_ui_costs import _state

    env = {**os.environ, **_state(tmp_path, store)}
    command = Path(sys.executable).with_name("active-memory")
    log = tmp_path / "ui.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [str(command), "ui", "--port", "0", "--store", store,
             "--token-file", str(tmp_path / "server.token")],
            stderr=sink, cwd=tmp_path, env=env,
        )  # fmt: skip
    try:
        found = None
        for _ in range(200):  # the link is printed once the store opened and the port bound
            found = re.search(r"(http://127\.0\.0\.1:\d+/login\?code=\S+)", log.read_text())
            if found or process.poll() is not None:
                break
            time.sleep(0.05)
        assert found, f"no login link printed: {log.read_text()!r}"
        yield found.group(1), store
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_review_edit_conflict_revert_and_retire_in_chromium(
    served: tuple[str, str], tmp_path: Path
) -> None:
    sync_playwright = browser_or_skip()
    link, store = served
    base = link.split("/login")[0]
    shots = tmp_path / "screenshots"
    shots.mkdir()
    alerts: list[str] = []
    with sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=CHROMIUM,
            args=CHROMIUM_FLAGS,
            headless=True,
            java_script_enabled=False,
            viewport={"width": 1200, "height": 900},
        )
        try:
            page = context.new_page()

            def on_dialog(dialog: Any) -> None:
                alerts.append(dialog.message)
                dialog.dismiss()

            page.on("dialog", on_dialog)
            # Without the login link: the login page, no lesson.
            page.goto(base + "/")
            assert page.locator("h1").inner_text() == "Log in"
            page.goto(link)
            assert page.url == base + "/"
            assert page.locator("#count").inner_text() == "3 lessons"
            page.screenshot(path=str(shots / "lessons.png"), full_page=True)

            # The review queue: approve one proposal, reject the other with a reason.
            page.click("text=Review")
            assert page.locator("#waiting").inner_text() == "2 proposals waiting"
            page.screenshot(path=str(shots / "review.png"), full_page=True)
            page.click("#approve-1")
            assert "proposal 1 approved: L-4 r1" in page.locator("#saved").inner_text()
            page.fill("#reject-reason-2", "lint has nothing to do with the client")
            page.click("#reject-2")
            assert "proposal 2 rejected" in page.locator("#saved").inner_text()
            assert page.locator("#waiting").inner_text() == "0 proposals waiting"
            approved = read(store, "L-4")
            assert isinstance(approved, Lesson)
            assert approved.title == "Regenerate the SDK after schema edits"
            decided = {p.seq: (p.state, p.decision_reason) for p in proposals(store)}
            assert decided[2] == ("rejected", "lint has nothing to do with the client")
            page.goto(base + "/")
            assert page.locator("#count").inner_text() == "4 lessons"

            # Search and filters are a plain GET form.
            page.fill("#q", "linter")
            page.click("#filter")
            assert page.locator("#count").inner_text() == "1 lesson"
            assert page.locator("#lessons tbody tr").inner_text().startswith("L-3")
            page.goto(base + "/?kind=repository")
            assert page.locator("#count").inner_text() == "3 lessons"

            # The journal and the costs, with their charts.
            page.goto(base + "/postmortems")
            assert "the provider refused: bad key" in page.locator("#postmortems").inner_text()
            page.screenshot(path=str(shots / "postmortems.png"), full_page=True)
            page.goto(base + "/costs")
            assert page.locator("#chart-days svg rect").count() == 4  # 2 days, in and out
            assert "repository_discovery" in page.locator("#per-specialist").inner_text()
            page.screenshot(path=str(shots / "costs.png"), full_page=True)

            # Markup in every card field renders as text and runs nothing.
            page.goto(base + "/lessons/L-2")
            assert MARKUP in page.locator("#agent-card").inner_text()
            assert "<b>now</b>" in page.locator("#agent-card").inner_text()
            assert page.locator("#associations").inner_text().count("<") >= 3
            page.screenshot(path=str(shots / "lesson-markup.png"), full_page=True)

            # Edit: the same checks as a specialist's adaptation, then saved as r2.
            page.goto(base + "/lessons/L-1")
            assert "## Regenerate the client through make api-client  (L-1 r1)" in (
                page.locator("#agent-card").inner_text()
            )
            page.fill("#recommendation", "Be careful.")
            page.click("#save")
            assert "generic advice" in page.locator("#problems").inner_text()
            page.fill("#title", "Regenerate the API client with make api-client")
            page.fill("#recommendation", "After editing `api/schema.json` run `make api-client`.")
            page.fill("#reason", "a clearer title")
            page.click("#save")
            assert "is now r2" in page.locator("#saved").inner_text()
            page.screenshot(path=str(shots / "lesson-edited.png"), full_page=True)
            edited = read(store, "L-1")
            assert isinstance(edited, Lesson) and edited.revision == 2
            assert edited.title == "Regenerate the API client with make api-client"

            # A postmortem adapts the lesson while the page is open: the edit is refused.
            publish(store, [specialist_adapt("L-1", 2, "Regenerate via make api-client twice")])
            page.fill("#title", "A title that must not win")
            page.click("#save")
            assert "nothing published" in page.locator("#conflict").inner_text()
            page.screenshot(path=str(shots / "conflict.png"), full_page=True)
            kept = read(store, "L-1")
            assert isinstance(kept, Lesson) and kept.title == "Regenerate via make api-client twice"

            # Revert to r1 from the history table.
            page.goto(base + "/lessons/L-1")
            page.click("#rev-1 button")
            assert "is now r4" in page.locator("#saved").inner_text()
            reverted = read(store, "L-1")
            assert isinstance(reverted, Lesson) and reverted.revision == 4
            assert reverted.title == "Regenerate the client through make api-client"

            # Retire: a reason, then a confirmation.
            page.fill("#retire-reason", "the wrapper is gone")
            page.click("#retire")
            assert "the wrapper is gone" in page.locator("#retire-why").inner_text()
            assert isinstance(read(store, "L-1"), Lesson)  # not yet
            page.click("#retire-confirmed")
            assert page.locator("#lesson-status").inner_text() == "retired"
            assert page.locator("#edit-form").count() == 0
            page.screenshot(path=str(shots / "retired.png"), full_page=True)
        finally:
            context.close()
    assert isinstance(read(store, "L-1"), Tombstone)
    entries = history(store, "L-1")
    assert [(e.action, e.author.specialist.split(":")[0]) for e in entries] == [  # type: ignore[attr-defined]
        ("create", "repository_discovery"),
        ("adapt", "person"),
        ("adapt", "repository_maintenance"),
        ("revert", "person"),
        ("retire", "person"),
    ]
    assert entries[-1].reason == "the wrapper is gone"  # type: ignore[attr-defined]
    assert alerts == []
    assert sorted(p.name for p in shots.iterdir()) == [
        "conflict.png", "costs.png", "lesson-edited.png", "lesson-markup.png", "lessons.png",
        "postmortems.png", "retired.png", "review.png",
    ]  # fmt: skip
    print(f"screenshots: {shots}")


@pytest.fixture
def served_by_serve(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """`active-memory serve` on a free loopback port over a seeded store, with lessons
    observed by runs: (login link under /ui/, store, token)."""
    from test_ui_effectiveness import observe

    store = str(tmp_path / "lessons.sqlite3")
    publish(store, seed_mutations())
    propose(store, [proposed_lesson("Regenerate the SDK after schema edits",
                                    "Run `make sdk` after `api/schema.json` edits.")])  # fmt: skip
    observe(store, "run-1", ("L-1", True, False), ("L-3", False, True))
    observe(store, "run-2", ("L-1", True, True))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env["ZEROSHOT_STATE_DIR"] = str(tmp_path / "state")
    command = Path(sys.executable).with_name("active-memory")
    log = tmp_path / "serve.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [str(command), "serve", "--port", "0", "--store", store],
            stderr=sink, cwd=tmp_path, env=env,
        )  # fmt: skip
    try:
        found = None
        for _ in range(200):
            found = re.search(r"(http://127\.0\.0\.1:\d+/ui/login\?code=\S+)", log.read_text())
            if found or process.poll() is not None:
                break
            time.sleep(0.05)
        assert found, f"no login link printed: {log.read_text()!r}"
        token = (tmp_path / "state" / "active-memory" / "server.token").read_text().strip()
        yield found.group(1), store, token
    finally:
        process.terminate()
        assert process.wait(timeout=20) == 0


def _hook_call(base: str, token: str) -> int:
    import http.client
    import json

    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    body = json.dumps({"session_id": "s-1", "cwd": "/nowhere", "tool_name": "Read",
                       "tool_input": {"file_path": "/nowhere/x"}})  # fmt: skip
    conn.request("POST", "/active-memory/v1/hook/claude", body=body,
                 headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    status = conn.getresponse().status
    conn.close()
    return status


def test_the_same_pages_through_serves_mount_in_chromium(
    served_by_serve: tuple[str, str, str], tmp_path: Path
) -> None:
    sync_playwright = browser_or_skip()
    link, store, token = served_by_serve
    base = link.split("/ui/login")[0]
    shots = tmp_path / "screenshots"
    shots.mkdir()
    assert _hook_call(base, token) == 200  # the hook path answers before the view exists
    with sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=CHROMIUM,
            args=CHROMIUM_FLAGS,
            headless=True,
            java_script_enabled=False,
            viewport={"width": 1200, "height": 900},
        )
        try:
            page = context.new_page()
            page.goto(base + "/ui/")
            assert page.locator("h1").inner_text() == "Log in"
            page.goto(link)
            assert page.url == base + "/ui/"
            assert page.locator("#count").inner_text() == "3 lessons"
            page.screenshot(path=str(shots / "serve-lessons.png"), full_page=True)

            # Effectiveness over time: one group of bars per run on the lesson page.
            page.click("text=L-1")
            assert page.url == base + "/ui/lessons/L-1"
            assert "per run" in (
                page.locator("#effectiveness-chart svg title").first.text_content() or ""
            )
            # Two runs stacked in four parts, and the rates beside them.
            assert page.locator("#effectiveness-chart svg rect").count() == 2 * 4
            assert page.locator("#effectiveness-chart svg circle").count() >= 2
            assert "store schema 7" in page.locator("#effectiveness-since").inner_text()
            page.screenshot(path=str(shots / "serve-lesson.png"), full_page=True)

            # A write through the mount (CSRF from the page), then the store has it.
            page.fill("#title", "Regenerate the API client with make api-client")
            page.fill("#reason", "a clearer title")
            page.click("#save")
            assert "is now r2" in page.locator("#saved").inner_text()
            edited = read(store, "L-1")
            assert isinstance(edited, Lesson) and edited.revision == 2

            # Review: approve the waiting proposal.
            page.click("text=Review")
            assert page.url == base + "/ui/review"
            page.click("#approve-1")
            assert "proposal 1 approved: L-4 r1" in page.locator("#saved").inner_text()
            assert isinstance(read(store, "L-4"), Lesson)

            page.goto(base + "/ui/costs")
            chart = page.locator("#chart-effectiveness svg")
            assert "every lesson" in (chart.locator("title").first.text_content() or "")
            page.screenshot(path=str(shots / "serve-costs.png"), full_page=True)
            assert _hook_call(base, token) == 200  # and still answers with the view open
        finally:
            context.close()
    print(f"screenshots: {shots}")
