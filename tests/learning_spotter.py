"""Build the learning bench's `spotter` sequence (tests/fixtures/learning/spotter/) from a
clone of the public repository https://github.com/marot/spotter.

The five public Claude Code sessions of tests/fixtures/spotter/transcripts.tar.xz each ran
in a worktree of their own and ended in commits that were later rebased onto `master`.
Each session's state is taken at the rebased commits: its start is the parent of its first
commit there, its end its last commit (the table below). The fixture keeps only what the
tasks and lessons need, so it stays small: at each of those commits, the files the five
sessions' tool calls and failures touched, and the root's build and tool configuration,
each at most `MAX_FILE_BYTES` (never `.beads/issues.jsonl`, dependencies, build output or
test fixtures). One commit per state, in time order, in `repo.bundle`:

    python tests/learning_spotter.py PATH/TO/spotter-clone
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from active_memory.runlog.importers.claude import import_transcript

HERE = Path(__file__).resolve().parent
OUT = HERE / "fixtures" / "learning" / "spotter"
ARCHIVE = HERE / "fixtures" / "spotter" / "transcripts.tar.xz"
REMOTE = "https://github.com/marot/spotter.git"
WORKTREES = "/home/USER/projects/spotter-worktrees"
MAX_FILE_BYTES = 32 * 1024

# (log, worktree, upstream start, upstream end): the rebased commits of each session's work.
SESSIONS = [
    ("258c7280-ae70-4798-800f-63464d01a85d.jsonl", "spotter-gqc",
     "980e43b", "e4a031d"),  # spotter-gqc, gqc.4 to gqc.7
    ("8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", "spotter-fum",
     "50ee195", "a273aac"),  # spotter-fum.1 to fum.4
    ("ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", "spotter-4te",
     "b7c9ee2", "3c109f6"),  # OTEL, spotter-4te
    ("fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl", "spotter-a0y",
     "93e2a06", "3114215"),  # spotter-a0y.1 to a0y.4
    ("4d5611e5-241a-462a-8d15-5122611a9569.jsonl", "spotter-dov",
     "e67e02f", "64f1b9a"),  # spotter-dov
]  # fmt: skip
CONFIGURATION = (
    ".gitignore", ".formatter.exs", ".credo.exs", ".dialyzerignore", "mix.exs", "CLAUDE.md",
    "README.md", "config/config.exs", "config/dev.exs", "config/test.exs",
    "config/runtime.exs", "assets/build.js", "assets/package.json", "scripts/setup_worktree.sh",
    "test/test_helper.exs", "test/support/data_case.ex", "test/support/conn_case.ex",
)  # fmt: skip
NEVER = (".beads/", "deps/", "_build/", "priv/static/", "test/fixtures/", "node_modules/")


def _git(repo: Path, *arguments: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *arguments], capture_output=True, check=True, env=env
    )
    return done.stdout.decode("utf-8", "replace").strip()


def touched_paths(logs: Path) -> set[str]:
    """Every root-relative path the five sessions' receipts and failures name."""
    found: set[str] = set()
    for log, *_ in SESSIONS:
        record = import_transcript(logs / log).runs[0].record
        for receipt in record.get("receipts") or []:
            found.update(receipt.get("paths") or [])
        for failure in record.get("tool_failures") or []:
            found.update(failure.get("paths") or [])
    return {p for p in found if not p.startswith(NEVER)}


def build(clone: Path, out: Path) -> None:
    """Write `repo.bundle` and `sequence.json` into `out`."""
    with tempfile.TemporaryDirectory() as temporary:
        logs = Path(temporary) / "logs"
        with tarfile.open(ARCHIVE, "r:xz") as archive:
            archive.extractall(logs, filter="data")
        wanted = sorted(touched_paths(logs) | set(CONFIGURATION))
        states = {c for _, _, start, end in SESSIONS for c in (start, end)}
        dated = sorted((_git(clone, "log", "-1", "--format=%cI", c), c) for c in states)
        repo = Path(temporary) / "repo"
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        mapped: dict[str, str] = {}
        for date, commit in dated:
            for child in repo.iterdir():
                if child.name != ".git":
                    subprocess.run(["rm", "-rf", str(child)], check=True)
            listing = set(_git(clone, "ls-tree", "-r", "--name-only", commit).splitlines())
            for path in wanted:
                if path not in listing:
                    continue
                size = int(_git(clone, "cat-file", "-s", f"{commit}:{path}"))
                if size > MAX_FILE_BYTES:
                    continue
                data = subprocess.run(
                    ["git", "-C", str(clone), "show", f"{commit}:{path}"],
                    capture_output=True, check=True,
                ).stdout  # fmt: skip
                target = repo / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            subject = _git(clone, "log", "-1", "--format=%s", commit)
            full = _git(clone, "rev-parse", commit)
            env = os.environ | {
                "GIT_AUTHOR_NAME": "spotter snapshot",
                "GIT_AUTHOR_EMAIL": "snapshot@example.invalid",
                "GIT_COMMITTER_NAME": "spotter snapshot",
                "GIT_COMMITTER_EMAIL": "snapshot@example.invalid",
                "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date,
            }  # fmt: skip
            _git(repo, "add", "-A", env=env)
            _git(repo, "commit", "-q", "--allow-empty", "-m",
                 f"marot/spotter {full[:12]}: {subject}", env=env)  # fmt: skip
            mapped[commit] = _git(repo, "rev-parse", "HEAD")
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "-C", str(repo), "bundle", "create", str(out / "repo.bundle"), "--all"],
            check=True, capture_output=True,
        )  # fmt: skip
    document = {
        "schema": "active-memory/learning-sequence@1",
        "name": "spotter",
        "description": (
            "the five public Claude Code 2.1.39 sessions of marot/spotter with failed calls "
            "(tests/fixtures/spotter/), the repository reduced to the files they touched and "
            "its build configuration (tests/learning_spotter.py)"
        ),
        "repository": {"bundle": "repo.bundle", "remote": REMOTE},
        "transcripts": "../../spotter/transcripts.tar.xz",
        "sessions": [
            {
                "log": log,
                "harness": "claude",
                "cwd": f"{WORKTREES}/{worktree}",
                "start": mapped[start],
                "end": mapped[end],
                "note": f"marot/spotter {start}..{end} (branch {worktree})",
            }
            for log, worktree, start, end in SESSIONS
        ],
    }
    (out / "sequence.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    build(Path(sys.argv[1]).resolve(), OUT)
    print(OUT)
