"""The pip command that adds an extra to this installation (README, "Install").

Active Memory is on no package index: pip finds nothing by its name. An error that names a
missing extra says instead how to reinstall this very installation with it: its own
interpreter's pip (so the extra lands in the environment that runs the command) and the
source it was installed from, as pip recorded it (`direct_url.json`, PEP 610: the clone's
folder, a wheel's file, a VCS URL). Without that record (the package found on
`PYTHONPATH`, or from an index some day), the clone holding the package when there is one,
else the name.

Standard library only; read on error paths alone.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

DISTRIBUTION = "active-memory"


def extra_command(extra: str) -> str:
    """`<this python> -m pip install '<source>[extra]'` (`-e` for an editable install): a
    command that works as printed."""
    return _pip(requirement(extra))


def install_command() -> str:
    """`<this python> -m pip install '<source>'`: this installation again, as it was made."""
    return _pip(requirement(None))


def _pip(spec: str) -> str:
    recorded = _direct_url() or {}
    folder = recorded.get("dir_info")
    editable = isinstance(folder, dict) and folder.get("editable") is True
    flag = "-e " if editable else ""
    return f"{shlex.quote(sys.executable)} -m pip install {flag}{shlex.quote(spec)}"


def requirement(extra: str | None) -> str:
    """What pip installs this package from, with `extra` when given: `/clone[extra]`,
    `/dist/active_memory-….whl[extra]`, `active-memory[extra] @ git+URL`, or
    `active-memory[extra]` when nothing better is known."""
    extras = f"[{extra}]" if extra else ""
    recorded = _direct_url()
    if recorded is not None:
        url = recorded.get("url")
        if isinstance(url, str) and url.startswith("file:"):
            return f"{unquote(urlsplit(url).path)}{extras}"
        vcs = recorded.get("vcs_info")
        if isinstance(url, str) and isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
            return f"{DISTRIBUTION}{extras} @ {vcs['vcs']}+{url}"
        if isinstance(url, str) and url:
            return f"{DISTRIBUTION}{extras} @ {url}"
    clone = Path(__file__).resolve().parent.parent
    if (clone / "pyproject.toml").is_file() and (clone / "active_memory").is_dir():
        return f"{clone}{extras}"
    return f"{DISTRIBUTION}{extras}"


def _direct_url() -> dict[str, object] | None:
    from importlib import metadata

    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None
