"""The `codex exec` lane, one run per turn; a repair turn resumes the thread.

What the real binary (0.171) showed, and what this lane does about it:

- `turn.completed.usage` after `codex exec resume` is the thread's running total, not the
  turn's: the lane remembers each thread's last total and counts the difference.
- The sandbox: a permission profile that may read only the working folder (the checkout,
  or an empty private folder) and what a shell needs to start (`:minimal`, plus codex's
  own install folder, which its sandbox helper runs from); it writes nothing and has no
  network. `--sandbox` is not passed because it selects the older sandbox settings,
  which read the whole disk; if the user's config sets `sandbox_mode` (which would
  override a profile), `sandbox_mode="read-only"` is forced instead (no writes, no
  network, but reads are not confined). Approvals are `never`: nothing asks a person.
- Off for a specialist: web search, hooks (so Active Memory's own hooks never see a
  specialist's thread), goals, sub-agents, plugins and image generation.
- Tool use: every `command_execution` (and MCP, web search or file change) item is a
  tool call; one that did not complete (declined, failed) is a tool error. Requests are
  counted as one per turn plus one per tool call (each result goes back to the model).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from active_memory.specialists.providers.base import Request, TurnOutput, Usage, excerpt
from active_memory.specialists.providers.cli_common import (
    CliSession,
    as_int,
    investigation_note,
    json_lines,
    transcript,
)

# codex's model_reasoning_effort stops at xhigh.
_CODEX_EFFORT: dict[str, str] = {"max": "xhigh"}
PROFILE = "active_memory_read_only"
DISABLED_FEATURES = ("hooks", "goals", "multi_agent", "plugins", "image_generation")
TOOL_ITEMS = frozenset({"command_execution", "mcp_tool_call", "web_search", "file_change"})


class CodexCliSession(CliSession):
    """`codex exec --json`, one run per turn, read-only and offline."""

    executable = "codex"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._thread_totals: dict[str, tuple[int, int]] = {}

    def argv(self, request: Request) -> list[str]:
        """The command line of one turn (flags go between `exec` and `resume`)."""
        argv = [self.executable, "exec", "--json", "--skip-git-repo-check", "--model", self.model]
        if self._effort is not None:
            effort = _CODEX_EFFORT.get(self._effort, self._effort)
            argv += ["--config", f'model_reasoning_effort="{effort}"']
        argv += ["--config", 'approval_policy="never"', "--config", 'web_search="disabled"']
        for feature in DISABLED_FEATURES:
            argv += ["--disable", feature]
        argv += self._sandbox()
        argv += ["--cd", str(self.workdir)]
        if request.resume is not None:
            argv += ["resume", request.resume]
        return [*argv, "-"]

    def _sandbox(self) -> list[str]:
        if self._config_sets_sandbox_mode():
            return ["--config", 'sandbox_mode="read-only"']
        readable = ['":minimal" = "read"', '":workspace_roots" = { "." = "read" }']
        install = self._install_folder()
        if install is not None:
            readable.append(f'{_toml_string(install)} = "read"')
        return [
            "--config", f'default_permissions="{PROFILE}"',
            "--config", f"permissions.{PROFILE}.filesystem={{{', '.join(readable)}}}",
        ]  # fmt: skip

    def _install_folder(self) -> str | None:
        """The folder codex runs its sandbox helper from: its npm scope folder
        (`node_modules/@openai`, which holds the platform package), else its own folder."""
        found = self.resolved_executable()
        if found is None:
            return None
        path = Path(found)
        for parent in path.parents:
            if parent.parent.name == "node_modules" and parent.name.startswith("@"):
                return str(parent)
        return str(path.parent)

    def _config_sets_sandbox_mode(self) -> bool:
        home = self._env.get("CODEX_HOME") or os.path.join(self._env.get("HOME", "~"), ".codex")
        files = [Path(home) / "config.toml", self.workdir / ".codex" / "config.toml"]
        return any(_sets_sandbox_mode(path) for path in files)

    async def _turn(self, request: Request) -> TurnOutput:
        # codex has no system-prompt flag: the answer contract leads the first prompt.
        if request.resume is not None:
            prompt = request.messages[-1].content
        else:
            instructions = request.instructions()
            if self.investigates:
                instructions += investigation_note(self.workdir, "read-only shell commands")
            prompt = f"{instructions}\n\n{transcript(request.messages)}"
        finished = await self.run(self.argv(request), prompt)
        thread: str | None = None
        answer: str | None = None
        failure: str | None = None
        totals = (0, 0)
        turns = calls = errors = 0
        for event in json_lines(finished.stdout):
            kind = event.get("type")
            if kind == "thread.started" and isinstance(event.get("thread_id"), str):
                thread = event["thread_id"]
            elif kind == "item.completed":
                item = event.get("item")
                if not isinstance(item, dict):
                    continue
                if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                    answer = item["text"]
                elif item.get("type") in TOOL_ITEMS:
                    calls += 1
                    errors += item.get("status") != "completed"
            elif kind == "turn.completed":
                raw = event.get("usage") if isinstance(event.get("usage"), dict) else {}
                assert isinstance(raw, dict)
                totals = (as_int(raw.get("input_tokens")), as_int(raw.get("output_tokens")))
                turns += 1
            elif kind == "turn.failed":
                error = event.get("error")
                failure = str(error.get("message") if isinstance(error, dict) else error)
            elif kind == "error":
                failure = str(event.get("message"))
        usage = self._usage_of(thread, request.resume, totals, turns, calls, errors)
        if failure is not None and answer is None:
            self._usage = self._usage.plus(usage)
            raise self.failed(f"codex turn failed: {excerpt(failure)}")
        if answer is None and finished.returncode:
            raise self.failed(self.exit_detail(finished))
        return TurnOutput(text=answer or "", usage=usage, resume=thread)

    def _usage_of(
        self,
        thread: str | None,
        resumed: str | None,
        totals: tuple[int, int],
        turns: int,
        calls: int,
        errors: int,
    ) -> Usage:
        # A resumed thread reports its running total: count only what this turn added.
        before = self._thread_totals.get(resumed, (0, 0)) if resumed is not None else (0, 0)
        if thread is not None and turns:
            self._thread_totals[thread] = totals
        return Usage(
            input_tokens=max(0, totals[0] - before[0]),
            output_tokens=max(0, totals[1] - before[1]),
            requests=turns + calls if turns else 0,
            tool_calls=calls,
            tool_errors=errors,
        )


def _sets_sandbox_mode(path: Path) -> bool:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    profiles = document.get("profiles")
    nested = profiles.values() if isinstance(profiles, dict) else ()
    return "sandbox_mode" in document or any(
        isinstance(p, dict) and "sandbox_mode" in p for p in nested
    )


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
