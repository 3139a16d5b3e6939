"""Shared by the Chromium tests: Debian's Chromium through Playwright, and
`active-memory ui` as a real process on a free loopback port."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("ACTIVE_MEMORY_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def browser_or_skip() -> Any:
    """Playwright's `sync_playwright`; skips when Chromium or Playwright is missing (in
    CI, CI=true makes the skip a failure)."""
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is missing (pip install -e '.[dev]')")
    return sync_playwright


@contextmanager
def ui_process(
    tmp_path: Path,
    store: str,
    env: Mapping[str, str],
    checkouts: Sequence[Path] = (),
) -> Iterator[str]:
    """`active-memory ui --port 0` over `store` with `env`: yields the login link."""
    command = Path(sys.executable).with_name("active-memory")
    log = tmp_path / "ui.log"
    extra = [arg for root in checkouts for arg in ("--checkout", str(root))]
    with log.open("w") as sink:
        process = subprocess.Popen(
            [str(command), "ui", "--port", "0", "--store", store,
             "--token-file", str(tmp_path / "server.token"), *extra],
            stderr=sink, cwd=tmp_path, env=dict(env),
        )  # fmt: skip
    try:
        found = None
        for _ in range(400):  # the link is printed once the store opened and the port bound
            found = re.search(r"(http://127\.0\.0\.1:\d+/login\?code=\S+)", log.read_text())
            if found or process.poll() is not None:
                break
            time.sleep(0.05)
        assert found, f"no login link printed: {log.read_text()!r}"
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=20)


@contextmanager
def chromium_page(
    tmp_path: Path, width: int = 1200, height: int = 900, *, dark: bool = False
) -> Iterator[Any]:
    """A page of headless Chromium with JavaScript off (every page is plain HTML)."""
    sync_playwright = browser_or_skip()
    with sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(tmp_path / f"chromium-profile-{width}"),
            executable_path=CHROMIUM,
            args=CHROMIUM_FLAGS,
            headless=True,
            java_script_enabled=False,
            viewport={"width": width, "height": height},
            color_scheme="dark" if dark else "light",
        )
        try:
            yield context.new_page()
        finally:
            context.close()
