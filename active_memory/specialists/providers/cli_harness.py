"""The CLI harness lanes: `claude -p` (`claude_cli`) and `codex exec` (`codex_cli`).

See those modules for what each real binary needs; `cli_common` holds what they share.
"""

from __future__ import annotations

from active_memory.processes import BASE_ENV as BASE_ENV
from active_memory.specialists.providers.claude_cli import ClaudeCliSession as ClaudeCliSession
from active_memory.specialists.providers.cli_common import CliSession as CliSession
from active_memory.specialists.providers.cli_common import (
    child_environment as child_environment,
)
from active_memory.specialists.providers.cli_common import transcript as transcript
from active_memory.specialists.providers.codex_cli import CodexCliSession as CodexCliSession
