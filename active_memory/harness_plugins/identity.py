"""What every harness plugin of ours is called and says about itself (docs/plugins.md)."""

from __future__ import annotations

from typing import Any

from active_memory import __version__

NAME = "active-memory"
"""The plugin's (extension's) name in every harness."""
MARKETPLACE = "active-memory"
"""The name of this repository as a marketplace (Claude Code, Codex, Copilot CLI)."""
DESCRIPTION = (
    "Lessons your agents learn from their own costly mistakes, delivered as short cards "
    "when a tool call touches the matching file, folder, identifier or command."
)
AUTHOR: dict[str, Any] = {"name": "Active Memory maintainers"}
LICENSE = "MIT"
KEYWORDS = ["memory", "lessons", "hooks", "postmortem"]
VERSION = __version__

SETUP_TIMEOUT_SECONDS = 900
"""How long a harness waits for the first set-up (a virtual environment and a pip install
from the package index); later session starts return in milliseconds."""

SOURCE_LINKS = {
    "active_memory": "../../active_memory",
    "pyproject.toml": "../../pyproject.toml",
    "README.md": "../../README.md",
    "bootstrap.py": "../bootstrap.py",
}
"""Links in a plugin folder to the repository's source, for a harness that installs the
folder alone: Copilot CLI copies what they point to, Gemini CLI links to it."""

MCP_ENV = (
    "ZEROSHOT_STATE_DIR", "XDG_STATE_HOME", "ACTIVE_MEMORY_STORE", "ACTIVE_MEMORY_PYTHON",
    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_CERT",
    "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY",
)  # fmt: skip
"""What a harness that starts MCP servers with a bare environment (Codex) is asked to
pass on: where the store is, and what the first set-up's pip needs."""
