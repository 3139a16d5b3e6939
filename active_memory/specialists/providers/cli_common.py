"""What the two harness CLI lanes share: the child's environment, the working folder,
starting the CLI, and reading its JSON output.

Each turn is one CLI run with the prompt on stdin. The child gets only a base environment
(PATH, HOME, locale, the CLIs' config folders) plus the names the lane declares. It runs
in the checkout when there is one (`investigate`: the model may read it with the
harness's read-only tools) and otherwise in an empty private folder, so a file tool sees
nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from active_memory.config import Effort, SpecialistLane
from active_memory.errors import SpecialistFailed
from active_memory.processes import BASE_ENV
from active_memory.specialists.providers.base import BaseSession, Message, excerpt
from active_memory.specialists.providers.credentials import Secrets, declared_names
from active_memory.specialists.providers.process import Finished, run_cli


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


def investigation_note(folder: Path, tools: str) -> str:
    """What the instructions add when the model may read the checkout."""
    return (
        f"\n\nYou may read the repository checkout at {folder} with {tools} to verify "
        "paths, identifiers and commands before you cite them. You are read-only: you "
        "cannot change files, run anything that writes, or reach the network. Read only "
        "what the task needs; the time budget covers your reading."
    )


class CliSession(BaseSession):
    """One harness CLI lane; subclasses build the command line and read the output."""

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
        investigate: bool = True,
    ) -> None:
        super().__init__(specialist, provider, model, deadline=deadline)
        self._effort = effort
        self._env = dict(env)
        self._secrets = secrets
        self._cwd = cwd
        self._scratch: Path | None = None
        # Reading the checkout needs one; without it there is nothing to investigate.
        self.investigates = investigate and cwd is not None
        if executable is not None:
            self.executable = executable

    @property
    def workdir(self) -> Path:
        """Where the CLI runs: the checkout, else an empty private folder."""
        if self._cwd is not None:
            return self._cwd
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="active-memory-specialist-"))
        return self._scratch

    def resolved_executable(self) -> str | None:
        """The executable's real path as the child's PATH finds it (None: not found)."""
        found = shutil.which(self.executable, path=self._env.get("PATH"))
        return os.path.realpath(found) if found else None

    def failed(self, detail: str) -> SpecialistFailed:
        """A harness failure of this lane, with declared secrets masked."""
        return SpecialistFailed(
            self.specialist,
            "harness",
            self._secrets.mask(detail),
            provider=self.provider,
            model=self.model,
        )

    async def run(self, argv: list[str], prompt: str) -> Finished:
        """One CLI run with `prompt` on stdin, in `workdir`."""
        try:
            return await run_cli(argv, stdin=prompt.encode(), env=self._env, cwd=self.workdir)
        except (FileNotFoundError, PermissionError) as exc:
            raise self.failed(
                f"cannot start {self.executable!r} ({exc.strerror}); install it or put it "
                "on PATH, or use the API lane"
            ) from None

    def exit_detail(self, finished: Finished) -> str:
        """Why a run ended badly, from its exit code and stderr."""
        stderr = finished.stderr.decode(errors="replace")
        return f"{self.executable} exited with code {finished.returncode}: {excerpt(stderr)}"

    async def aclose(self) -> None:
        """Remove the private folder, if one was made."""
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


def as_int(value: object) -> int:
    """An integer field of the CLI's output, 0 when absent or not an integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def json_lines(stdout: bytes) -> list[dict[str, Any]]:
    """The JSON objects of a JSON Lines output; other lines (banners, warnings) skipped."""
    events = []
    for line in stdout.decode(errors="replace").splitlines():
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):  # a banner, or JSON past Python's limits
            continue
        if isinstance(value, dict):
            events.append(value)
    return events
