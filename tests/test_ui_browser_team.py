"""A team's store in a real browser (issue 30's "Must show"): Debian's Chromium through
Playwright against `active-memory ui` as a process.

- Three repositories with their checkouts (one given with `--checkout`, two known to
  this machine) and a fourth whose checkout is elsewhere: no lesson of another
  repository shows as stale; "still valid" clears the banner and adds a history entry.
- 10,000 lessons: the first list page is under 150 KB, paging reaches the last page,
  IDs come in natural order.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from browser_support import chromium_page, ui_process
from repositories_support import ELSEWHERE, change_api_schema, team_store
from ui_support import history, publish, read

from active_memory.lessons import Associations, Author, Card, CreateLesson, Lesson, RepositoryScope

LIST_PAGE_MAX_BYTES = 150 * 1024


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env["ZEROSHOT_STATE_DIR"] = str(tmp_path / "state")
    return env


def test_three_repositories_each_judged_against_its_checkout_and_still_valid_in_chromium(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "lessons.sqlite3")
    env = _env(tmp_path)
    team = team_store(store, tmp_path / "work", env)
    change_api_schema(team)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with ui_process(tmp_path, store, env, [team.api]) as link, chromium_page(tmp_path) as page:
        base = link.split("/login")[0]
        page.goto(link)
        assert page.locator("#count").inner_text() == "7 lessons"
        rows = page.locator("#lessons tbody tr")
        stale = [rows.nth(i).inner_text().split()[0] for i in range(rows.count())
                 if "stale" in rows.nth(i).locator("td").nth(2).inner_text()]  # fmt: skip
        assert stale == ["L-1"]  # api's changed lesson only: web and infra are fresh
        assert "not judged" in rows.nth(6).inner_text()  # L-7: mobile, no checkout here
        assert ELSEWHERE in page.locator("#no-checkout").inner_text()
        page.screenshot(path=str(shots / "team-lessons.png"), full_page=True)

        page.goto(base + "/lessons/L-3")  # web, judged against its own checkout
        assert page.locator("#stale").count() == 0
        assert "export const route1" in page.locator(".citation pre").inner_text()
        page.goto(base + "/lessons/L-7")
        assert page.locator("#stale").count() == 0
        assert "no checkout known" in page.locator("#not-judged").inner_text()
        assert "file gone" not in page.content()

        page.goto(base + "/lessons/L-1")
        banner = page.locator("#stale")
        assert "Cited code changed" in banner.inner_text()
        assert "renumbered" in page.locator("#stale-diff-1 ins").first.inner_text()
        page.screenshot(path=str(shots / "team-stale.png"), full_page=True)
        page.fill("#keep-reason", "only the numbering moved")
        page.click("#still-valid")
        assert "Confirmed still valid" in page.locator("#saved").inner_text()
        assert page.locator("#stale").count() == 0
        kept = page.locator("#history tr.action-keep")
        assert kept.count() == 1 and "only the numbering moved" in kept.inner_text()
        assert "person:" in kept.inner_text()
        page.screenshot(path=str(shots / "team-kept.png"), full_page=True)
        page.goto(base + "/?stale=1")
        assert page.locator("#count").inner_text() == "0 lessons"
    lesson = read(store, "L-1")
    assert isinstance(lesson, Lesson) and lesson.revision == 1
    assert [e.action for e in history(store, "L-1")] == ["create", "keep"]  # type: ignore[attr-defined]
    print(f"screenshots: {shots}")


def _many(count: int) -> list[CreateLesson]:
    scopes = [RepositoryScope(repository=f"repo:github.com/acme/service-{n}") for n in range(12)]
    recommendation = "After editing the schema run `make api-client` and commit."
    return [
        CreateLesson(
            scope=scopes[n % len(scopes)],
            author=Author(specialist="bench"),
            card=Card(
                title=f"Regenerate client module {n} through the wrapper",
                recommendation=recommendation,
                associations=Associations(files=[f"src/m{n % 100}/f{n}.py"]),
            ),
        )
        for n in range(count)
    ]


def test_ten_thousand_lessons_page_by_page_in_natural_order_in_chromium(tmp_path: Path) -> None:
    store = str(tmp_path / "lessons.sqlite3")
    publish(store, _many(10_000))
    with ui_process(tmp_path, store, _env(tmp_path)) as link, chromium_page(tmp_path) as page:
        base = link.split("/login")[0]
        first = page.goto(link)
        assert first is not None
        body = first.body()
        assert len(body) < LIST_PAGE_MAX_BYTES, f"{len(body):,} bytes"
        assert page.locator("#count").inner_text() == "10,000 lessons"
        ids = page.locator("#lessons tbody tr td:first-child").all_inner_texts()
        assert ids[:12] == [f"L-{n}" for n in range(1, 13)]  # L-2 before L-10
        page.click("#page-next")
        assert page.locator("#lessons tbody tr td:first-child").first.inner_text() == "L-51"
        page.click("#page-last")
        assert "page 200 of 200" in page.locator("#range").inner_text()
        last = page.locator("#lessons tbody tr td:first-child").all_inner_texts()
        assert last[0] == "L-9951" and last[-1] == "L-10000" and len(last) == 50
        assert page.locator("#page-next").count() == 0
        page.click("#page-previous")
        assert page.locator("#lessons tbody tr td:first-child").first.inner_text() == "L-9901"
        # A bigger page, and the lessons of one repository only.
        page.select_option("#limit", "200")
        page.click("#pager button")
        assert len(page.locator("#lessons tbody tr").all()) == 200
        page.goto(base + "/?repository=" + "repo:github.com/acme/service-3")
        assert page.locator("#count").inner_text() == "834 lessons"
        numbers = [int(re.sub(r"\D", "", i)) for i in
                   page.locator("#lessons tbody tr td:first-child").all_inner_texts()]  # fmt: skip
        assert numbers == sorted(numbers) and all((n - 1) % 12 == 3 for n in numbers)
