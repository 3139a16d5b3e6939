"""What the real-binary plugin tests share: a local copy of this repository to install
from, a lesson in the default store of an empty HOME, and what the queue holds."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import anyio
from recall_support import make_checkout, publish, repository_lesson

from active_memory.store import open_store

ROOT = Path(__file__).resolve().parents[1]
TITLE = "Regenerate the client"
RECOMMENDATION = "Run make client after editing api/schema.json; never edit client.py by hand."
SKIPPED = shutil.ignore_patterns(
    ".git", ".venv", ".ci", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache",
    ".hypothesis", "*.egg-info", "build", "dist", ".learning-tasks", "example.sqlite3*",
)  # fmt: skip


def copy_repository(target: Path) -> Path:
    """A copy of this repository (its links kept as links), as a clone would be."""
    shutil.copytree(ROOT, target, ignore=SKIPPED, symlinks=True)
    return target


def default_store(home: Path) -> Path:
    """The store a plugin uses when nothing says otherwise (docs/store.md)."""
    return home / ".local/state/zeroshot/active-memory/lessons.sqlite3"


def checkout_with_lesson(root: Path, home: Path) -> Path:
    """A checkout `root/api` with `client.py`, and the lesson about that file published
    in HOME's default store."""
    work = make_checkout(root / "api")
    (work / "client.py").write_text("CLIENT = 1\n", encoding="utf-8")
    store = default_store(home)
    store.parent.mkdir(parents=True, exist_ok=True)
    publish(store, [repository_lesson(TITLE, RECOMMENDATION, files=["client.py"])])
    return work


def run(command: list[str], env: dict[str, str], cwd: Path, timeout: float = 1200) -> str:
    """Run a harness command; its stdout, or a failure showing both streams' ends."""
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


def queued(home: Path) -> list[tuple[str, str]]:
    """(harness, session ID) of every entry in HOME's default store's queue."""

    async def read() -> list[tuple[str, str]]:
        async with open_store(str(default_store(home))) as opened:
            entries = await opened.queue.entries()
        return [(e.harness, e.session_id) for e in entries]

    return anyio.run(read)


def setup_log(data: Path) -> str:
    """The set-up's log, for a failure message."""
    log = data / "bootstrap.log"
    return log.read_text("utf-8") if log.exists() else f"(no {log})"


def skill_command(skill: Path, env: dict[str, str]) -> Path:
    """The command the init skill at `skill` names, as the shell of a session with `env`
    expands it."""
    found = re.search(r"^\s*ACTIVE_MEMORY_COMMAND: (.+)$", skill.read_text("utf-8"), re.M)
    assert found, skill
    done = subprocess.run(["sh", "-c", f"printf %s {found.group(1)}"], env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    return Path(done.stdout)


def setup_folders(home: Path) -> list[Path]:
    """Every folder under HOME a set-up built in (the hooks and the MCP server of one
    plugin must agree on one)."""
    return sorted(log.parent for log in home.rglob("bootstrap.log"))


GIT_URL = "https://git.invalid/acme/active-memory.git"


def as_git_remote(source: Path, env: dict[str, str]) -> str:
    """Commit the copy at `source` and make the environment's git fetch it for `GIT_URL`
    (a `url.<copy>.insteadOf` rule in HOME's git config), so a harness that clones a
    marketplace from a URL clones the copy, offline."""
    run(["git", "init", "-q", "-b", "main"], env, source)
    run(["git", "add", "-A"], env, source)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy"],
        env, source)  # fmt: skip
    run(["git", "config", "--global", f"url.{source}.insteadOf", GIT_URL], env, source)
    return GIT_URL
