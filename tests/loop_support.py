"""The learning loop with a real harness, for the end-to-end tests: a real git repository,
an isolated user whose harness talks to the fake model server, harness sessions, and a
fake model that plays the user's agent and the four specialists.

The fake model tells requests apart by what they carry:
- a session prompt starts with `SESSION-<n>:` (the test's own marker);
- a specialist's request names it ("You are the repository discovery specialist").
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakes.harness import CLAUDE_QUIET, codex_config, isolated_home
from fakes.model_server import ModelServer, Received, Turn, answer, text, tool

REMOTE = "git@github.com:acme/api.git"
NAMESPACE = "repo:github.com/acme/api"
SCHEMA_FILE = "api/schema.json"
LESSON_TITLE = "Run make api-client after editing api/schema.json"
LESSON_TEXT = (
    "After any edit to api/schema.json run `make api-client` before the tests: the tests "
    "import src/generated/client.ts, and a stale client made the test run hang twice."
)
_SPECIALIST = re.compile(r"You are the (graph|repository) (discovery|maintenance) specialist")
_EVIDENCE = re.compile(r"ev-tc-[0-9a-f]{12}")
_SESSION = re.compile(r"SESSION-(\d+):")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def make_repository(root: Path) -> Path:
    """A committed checkout of acme/api with a schema, a Makefile and a generated client."""
    repo = root / "acme-api"
    (repo / "api").mkdir(parents=True)
    (repo / "src" / "generated").mkdir(parents=True)
    (repo / SCHEMA_FILE).write_text(
        json.dumps({"openapi": "3.1.0", "paths": {"/charges": {}}}, indent=2) + "\n"
    )
    (repo / "Makefile").write_text(
        "api-client:\n\tnpx openapi-typescript api/schema.json -o src/generated/client.ts\n"
    )
    (repo / "src" / "generated" / "client.ts").write_text("export type Charge = {};\n")
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "Dev")
    git(repo, "remote", "add", "origin", REMOTE)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def venv_bin() -> str:
    """The folder of the console scripts under test (`active-memory`, `active-memory-hook`)."""
    return str(Path(sys.executable).parent)


@dataclass
class LoopModel:
    """The fake model's answers: the sessions' agent and the specialists."""

    repo: Path
    # How session 1's model requests fail: a hang (Claude Code times out after
    # API_TIMEOUT_MS) or an HTTP error naming a time-out (codex, no retries).
    failure: Turn = field(default_factory=lambda: text("never sent", hang=True))
    hang_sessions: set[int] = field(default_factory=lambda: {1})
    read_in_sessions: set[int] = field(default_factory=lambda: {2, 3})
    lessons: dict[str, int] = field(default_factory=dict)  # published: ID -> revision
    maintained: list[str] = field(default_factory=list)  # IDs maintenance was given

    def __call__(self, request: Received) -> Turn | None:
        dump = request.dump()
        found = _SPECIALIST.search(dump)
        if found is not None:
            return self._specialist(f"{found.group(1)}_{found.group(2)}", dump)
        session = _SESSION.search(dump)
        if session is None:
            return None
        number = int(session.group(1))
        if number in self.hang_sessions:
            return self.failure
        if number in self.read_in_sessions and not request.tool_results():
            if "exec_command" in request.tool_names():
                return tool("exec_command", {"cmd": f"cat {SCHEMA_FILE}"})
            return tool("Read", {"file_path": str(self.repo / SCHEMA_FILE)})
        return text(f"Session {number} done.")

    def _specialist(self, name: str, dump: str) -> Turn:
        if name == "repository_discovery":
            evidence = sorted(set(_EVIDENCE.findall(dump)))
            if not evidence:
                return answer({"lessons": []})
            return answer({"lessons": [lesson(evidence)]})
        if name == "graph_discovery":
            return answer({"lessons": []})
        # Maintenance keeps the lessons it is given; the test tells the fake model which
        # lessons exist (their IDs and revisions), as a model reads them off its task.
        given = {i: r for i, r in self.lessons.items() if f'{i}\\"' in dump or f'{i}"' in dump}
        self.maintained.extend(given)
        return answer({"decisions": [keep(i, r) for i, r in sorted(given.items())]})


def lesson(evidence: list[str]) -> dict[str, Any]:
    return {
        "title": LESSON_TITLE,
        "recommendation": LESSON_TEXT,
        "associations": {"files": [SCHEMA_FILE], "folders": [], "identifiers": [],
                         "keywords": []},
        "evidence": evidence,
        "citations": [{"path": SCHEMA_FILE, "lines": None}],
        "why_recurs": "Every change to the API starts in api/schema.json.",
    }  # fmt: skip


def keep(lesson_id: str, revision: int) -> dict[str, Any]:
    return {
        "id": lesson_id,
        "revision": revision,
        "action": "keep",
        "reason": "api/schema.json still feeds make api-client; the card was delivered "
        "before the edit and the tests did not hang again.",
    }


@dataclass
class Harness:
    """An isolated user whose `claude` or `codex` talks to the fake model server."""

    name: str
    binary: Path
    root: Path
    server: ModelServer
    state: Path
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.env = isolated_home(self.root) | {
            "PATH": f"{venv_bin()}{os.pathsep}{os.environ.get('PATH', '')}",
            "ZEROSHOT_STATE_DIR": str(self.state),
        }
        home = Path(self.env["HOME"])
        if self.name == "claude":
            # The user's Claude Code is configured for the fake server in their settings,
            # as a real user's gateway or login would be.
            (home / ".claude").mkdir(parents=True, exist_ok=True)
            settings = {
                "env": {
                    "ANTHROPIC_BASE_URL": self.server.url,
                    "ANTHROPIC_API_KEY": "sk-ant-api03-LOOPTESTkey0123456789",
                }
            }
            (home / ".claude" / "settings.json").write_text(json.dumps(settings))  # fmt: skip
            self.env |= CLAUDE_QUIET | {"API_TIMEOUT_MS": "1500", "CLAUDE_CODE_MAX_RETRIES": "0"}
        else:
            codex_config(Path(self.env["CODEX_HOME"]), self.server.openai_url, key_name=None)

    def session(
        self, repo: Path, prompt: str, resume: str | None = None, *flags: str
    ) -> dict[str, Any]:
        """One non-interactive turn of the harness in `repo`; its final JSON result."""
        if self.name == "claude":
            argv = [str(self.binary), "-p", "--output-format", "json", "--model",
                    "claude-sonnet-5", *flags]  # fmt: skip
            if resume is not None:
                argv += ["--resume", resume]
        else:
            argv = [str(self.binary), "exec", "--json", "--model", "gpt-5.1-codex", *flags]
            if resume is not None:
                argv += ["resume", resume]
            argv.append("-")
        done = subprocess.run(
            argv, input=prompt.encode(), env=self.env, cwd=repo, capture_output=True,
            timeout=180, check=False,
        )  # fmt: skip
        lines = [
            json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")
        ]
        if self.name == "claude":
            return lines[-1] if lines else {"stderr": done.stderr.decode()}
        thread = next((e["thread_id"] for e in lines if e.get("type") == "thread.started"), None)
        return {"session_id": thread, "events": lines, "stderr": done.stderr.decode()}

    def cli(self, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`active-memory …` as the user would run it, in their environment."""
        return subprocess.run(
            [str(Path(venv_bin()) / "active-memory"), *argv],
            env=self.env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
