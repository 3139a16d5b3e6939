"""The layout in Chromium from a 360 px phone to a wide screen (issue 30): no page scrolls
sideways (wide tables scroll inside their own box), long repository names wrap inside
the sidebar, and `prefers-color-scheme: dark` gives a dark page."""

from __future__ import annotations

import os
from pathlib import Path

from browser_support import chromium_page, ui_process
from conftest import AUTHOR
from ui_support import propose, proposed_lesson, publish, seed_mutations

from active_memory.lessons import Associations, Card, CreateLesson, RepositoryScope

LONG = "repo:github.com/an-organisation-with-a-long-name/a-repository-name-that-goes-on-and-on"
PAGES = ["/", "/lessons/L-1", "/lessons/L-4", "/review", "/postmortems", "/costs"]


def _store(tmp_path: Path) -> str:
    store = str(tmp_path / "lessons.sqlite3")
    publish(store, seed_mutations())
    long_path = "src/" + "/".join(["deeply-nested-folder-name"] * 6) + "/module.py"
    publish(store, [CreateLesson(
        scope=RepositoryScope(repository=LONG), author=AUTHOR,
        card=Card(title="A title " + "that keeps going " * 4,
                  recommendation=f"Run `make check` after editing `{long_path}`.",
                  associations=Associations(files=[long_path])),
    )])  # fmt: skip
    propose(store, [proposed_lesson("Regenerate the SDK", "Run `make sdk` after edits.")])
    return store


def test_no_page_scrolls_sideways_from_360_px_to_wide_screens_in_chromium(tmp_path: Path) -> None:
    store = _store(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env["ZEROSHOT_STATE_DIR"] = str(tmp_path / "state")
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with ui_process(tmp_path, store, env) as link, chromium_page(tmp_path) as page:
        base = link.split("/login")[0]
        page.goto(link)
        for width in (360, 420, 768, 1280, 1920):
            page.set_viewport_size({"width": width, "height": 800})
            for path in PAGES:
                page.goto(base + path)
                wide = page.evaluate("document.documentElement.scrollWidth")
                assert wide <= width, (width, path, wide)
            page.goto(base + "/")
            sidebar = page.locator("#scopes").bounding_box()
            assert sidebar is not None
            for item in page.locator("#scopes li").all():
                box = item.bounding_box()
                assert box and box["x"] + box["width"] <= sidebar["x"] + sidebar["width"] + 0.5
            page.screenshot(path=str(shots / f"lessons-{width}.png"), full_page=True)


def test_dark_mode_follows_the_system_setting_in_chromium(tmp_path: Path) -> None:
    store = _store(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIVE_MEMORY_")}
    env["ZEROSHOT_STATE_DIR"] = str(tmp_path / "state")
    with ui_process(tmp_path, store, env) as link, chromium_page(tmp_path, dark=True) as page:
        page.goto(link)
        colour = page.locator("body").evaluate("e => getComputedStyle(e).backgroundColor")
        assert colour == "rgb(13, 17, 23)"
        card = page.locator("#lessons").evaluate("e => getComputedStyle(e).backgroundColor")
        assert card == "rgb(22, 27, 34)"
        page.screenshot(path=str(tmp_path / "dark.png"), full_page=True)
