"""The CLI harness lanes: `claude -p --output-format json` and `codex exec --json`.

Each turn is one CLI run, with the prompt on stdin; a repair turn resumes the CLI's own
session (`claude --resume SESSION_ID`, `codex exec resume THREAD_ID`), so the model sees
its previous answer. The child gets only a base environment (PATH, HOME, locale, the
CLIs' config folders) plus the names the lane declares.

- claude prints one result object: `result` (the answer text), `structured_output` (the
  decoded answer when `--json-schema` is given), `is_error`, `subtype`, `session_id`,
  `usage` (`input_tokens`, `cache_*_input_tokens`, `output_tokens`), `total_cost_usd`.
- codex prints JSON Lines events: `thread.started` (`thread_id`), `item.completed` whose
  `item.type` is `agent_message` (`item.text`: the answer), `turn.completed` (`usage`:
  `input_tokens`, `cached_input_tokens`, `output_tokens`), `turn.failed` (`error.message`)
  and `error` (`message`). codex reports no cost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from active_memory.config import Effort, SpecialistLane
from active_memory.errors import SpecialistFailed
from active_memory.specialists.providers.base import (
    BaseSession,
    Message,
    Request,
    TurnOutput,
    Usage,
    excerpt,
)
from active_memory.specialists.providers.credentials import Secrets, declared_names
from active_memory.specialists.providers.process import Finished, run_cli

# What a CLI needs to find itself, its login and its settings; nothing else is inherited.
BASE_ENV = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ",
    "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
    "CLAUDE_CONFIG_DIR", "CODEX_HOME",
)  # fmt: skip

# codex's model_reasoning_effort stops at xhigh.
_CODEX_EFFORT: dict[str, str] = {"max": "xhigh"}


def child_environment(
    lane: SpecialistLane, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, str], Secrets]:
    """The CLI's environment, and the declared values as secrets to mask."""
    source = os.environ if environ is None else environ
    env = {name: source[name] for name in BASE_ENV if name in source}
    secrets = Secrets()
    for name in declared_names(lane):
        if name in source:
            env[name] = source[name]
            secrets.add(source[name])
    return env, secrets


def transcript(messages: tuple[Message, ...]) -> str:
    """Several messages as one prompt (a CLI takes one prompt per run)."""
    if len(messages) == 1:
        return messages[0].content
    return "\n\n".join(f"## {m.role}\n\n{m.content}" for m in messages)


class _CliSession(BaseSession):
    executable: str

    def __init__(
        self,
        specialist: str,
        model: str,
        *,
        provider: str,
        effort: Effort | None,
        deadline: float | None,
        env: Mapping[str, str],
        secrets: Secrets,
        cwd: Path | None = None,
        executable: str | None = None,
    ) -> None:
        super().__init__(specialist, provider, model, deadline=deadline)
        self._effort = effort
        self._env = dict(env)
        self._secrets = secrets
        self._cwd = cwd
        if executable is not None:
            self.executable = executable

    def _failed(self, detail: str) -> SpecialistFailed:
        return SpecialistFailed(
            self.specialist,
            "harness",
            self._secrets.mask(detail),
            provider=self.provider,
            model=self.model,
        )

    async def _run(self, argv: list[str], prompt: str) -> Finished:
        try:
            return await run_cli(argv, stdin=prompt.encode(), env=self._env, cwd=self._cwd)
        except (FileNotFoundError, PermissionError) as exc:
            raise self._failed(
                f"cannot start {self.executable!r} ({exc.strerror}); install it or put it "
                "on PATH, or use the API lane"
            ) from None

    def _exit_detail(self, finished: Finished) -> str:
        stderr = finished.stderr.decode(errors="replace")
        return f"{self.executable} exited with code {finished.returncode}: {excerpt(stderr)}"


class ClaudeCliSession(_CliSession):
    """`claude -p --output-format json`, one run per turn."""

    executable = "claude"

    def argv(self, request: Request) -> list[str]:
        """The command line of one turn."""
        argv = [self.executable, "-p", "--output-format", "json", "--model", self.model]
        if self._effort is not None:
            argv += ["--effort", self._effort]
        argv += ["--json-schema", json.dumps(request.schema, ensure_ascii=False)]
        argv += ["--append-system-prompt", request.instructions()]
        if request.resume is not None:
            argv += ["--resume", request.resume]
        return argv

    async def _turn(self, request: Request) -> TurnOutput:
        prompt = (
            request.messages[-1].content
            if request.resume is not None
            else transcript(request.messages)
        )
        finished = await self._run(self.argv(request), prompt)
        result = _last_json_object(finished.stdout)
        if result is None:
            raise self._failed(
                self._exit_detail(finished)
                if finished.returncode
                else f"claude printed no JSON result: {excerpt(finished.stdout.decode('replace'))}"
            )
        raw_usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
        assert isinstance(raw_usage, dict)
        cost = result.get("total_cost_usd")
        usage = Usage(
            input_tokens=sum(
                _int(raw_usage.get(k))
                for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
            ),
            output_tokens=_int(raw_usage.get("output_tokens")),
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
            requests=1,
        )
        if result.get("is_error") or (result.get("subtype") not in (None, "success")):
            self._usage = self._usage.plus(usage)  # a failed run still cost this
            raise self._failed(
                f"claude reported {result.get('subtype') or 'an error'}: "
                f"{excerpt(str(result.get('result', '')))}"
            )
        session = result.get("session_id")
        text = result.get("result")
        return TurnOutput(
            text=text if isinstance(text, str) else "",
            data=result.get("structured_output"),
            usage=usage,
            resume=session if isinstance(session, str) else None,
        )


class CodexCliSession(_CliSession):
    """`codex exec --json`, one run per turn, read-only sandbox."""

    executable = "codex"

    def argv(self, request: Request) -> list[str]:
        """The command line of one turn (flags go between `exec` and `resume`)."""
        argv = [self.executable, "exec", "--json", "--skip-git-repo-check"]
        argv += ["--sandbox", "read-only", "--model", self.model]
        if self._effort is not None:
            effort = _CODEX_EFFORT.get(self._effort, self._effort)
            argv += ["--config", f'model_reasoning_effort="{effort}"']
        if self._cwd is not None:
            argv += ["--cd", str(self._cwd)]
        if request.resume is not None:
            argv += ["resume", request.resume]
        return [*argv, "-"]

    async def _turn(self, request: Request) -> TurnOutput:
        # codex has no system-prompt flag: the answer contract leads the prompt.
        body = (
            request.messages[-1].content
            if request.resume is not None
            else transcript(request.messages)
        )
        prompt = f"{request.instructions()}\n\n{body}" if request.resume is None else body
        finished = await self._run(self.argv(request), prompt)
        thread: str | None = None
        answer: str | None = None
        failure: str | None = None
        usage = Usage()
        for event in _json_lines(finished.stdout):
            kind = event.get("type")
            if kind == "thread.started" and isinstance(event.get("thread_id"), str):
                thread = event["thread_id"]
            elif kind == "item.completed":
                item = event.get("item")
                if isinstance(item, dict) and item.get("type") == "agent_message":
                    text = item.get("text")
                    answer = text if isinstance(text, str) else answer
            elif kind == "turn.completed":
                raw = event.get("usage") if isinstance(event.get("usage"), dict) else {}
                assert isinstance(raw, dict)
                usage = usage.plus(
                    Usage(
                        input_tokens=_int(raw.get("input_tokens")),
                        output_tokens=_int(raw.get("output_tokens")),
                        requests=1,
                    )
                )
            elif kind == "turn.failed":
                error = event.get("error")
                failure = str(error.get("message") if isinstance(error, dict) else error)
            elif kind == "error":
                failure = str(event.get("message"))
        if failure is not None and answer is None:
            self._usage = self._usage.plus(usage)
            raise self._failed(f"codex turn failed: {excerpt(failure)}")
        if answer is None and finished.returncode:
            raise self._failed(self._exit_detail(finished))
        return TurnOutput(text=answer or "", usage=usage, resume=thread)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _json_lines(stdout: bytes) -> list[dict[str, Any]]:
    events = []
    for line in stdout.decode(errors="replace").splitlines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue  # a CLI may print a banner or warning between events
        if isinstance(value, dict):
            events.append(value)
    return events


def _last_json_object(stdout: bytes) -> dict[str, Any] | None:
    text = stdout.decode(errors="replace").strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        objects = _json_lines(stdout)
        return objects[-1] if objects else None
    return value if isinstance(value, dict) else None
