"""The pip command an error gives for a missing extra installs from where this package came
from (README, "Install": it is on no index), with the interpreter that runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from active_memory import install_source

ROOT = Path(__file__).resolve().parent.parent


def _recorded(monkeypatch: pytest.MonkeyPatch, document: dict[str, Any] | None) -> None:
    # What pip wrote into direct_url.json (PEP 610) at install time.
    monkeypatch.setattr(install_source, "_direct_url", lambda: document)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"url": "file:///home/u/src/active-memory", "dir_info": {}},
         "-m pip install '/home/u/src/active-memory[server]'"),
        ({"url": "file:///home/u/src/active%20memory", "dir_info": {"editable": True}},
         "-m pip install -e '/home/u/src/active memory[server]'"),
        ({"url": "file:///tmp/dist/active_memory-0.1.0-py3-none-any.whl",
          "archive_info": {}},
         "-m pip install '/tmp/dist/active_memory-0.1.0-py3-none-any.whl[server]'"),
        ({"url": "https://example.org/active-memory.git",
          "vcs_info": {"vcs": "git", "commit_id": "abc"}},
         "-m pip install 'active-memory[server] @ git+https://example.org/active-memory.git'"),
    ],
)  # fmt: skip
def test_the_extra_is_installed_from_the_recorded_source(
    monkeypatch: pytest.MonkeyPatch, document: dict[str, Any], expected: str
) -> None:
    _recorded(monkeypatch, document)
    assert install_source.extra_command("server") == f"{sys.executable} {expected}"


def test_without_a_record_the_clone_holding_the_package_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _recorded(monkeypatch, None)
    assert install_source.extra_command("mcp") == (f"{sys.executable} -m pip install '{ROOT}[mcp]'")
    assert install_source.install_command() == f"{sys.executable} -m pip install {ROOT}"


def test_this_environment_names_its_own_install() -> None:
    # The suite's environment: pip's own record of how the package was installed.
    shown = subprocess.run(
        [sys.executable, "-m", "pip", "inspect", "--local"], capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    installed = {item["metadata"]["name"]: item for item in json.loads(shown.stdout)["installed"]}
    url = installed["active-memory"]["direct_url"]["url"]
    assert url.startswith("file://")
    command = install_source.extra_command("postgres")
    assert command.startswith(f"{sys.executable} -m pip install ")
    assert command.endswith(f"{url.removeprefix('file://')}[postgres]'")
