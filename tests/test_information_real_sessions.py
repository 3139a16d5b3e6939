"""Information sufficiency on real sessions (issue 25): for each of eight sessions with a
recurring failure, the repository-discovery task holds every command, path and error
phrase of the lesson a careful engineer would write from it.

The sessions are real: five public Claude Code sessions of marot/spotter (an
Elixir/Phoenix app; tests/fixtures/spotter/, in the order they ran), and sessions of the
real `claude`, `codex`, `pi`, `gemini` and `copilot` binaries (tests/fixtures/sessions/
and tests/fixtures/harness_sessions/, made by tests/failure_sessions.py and the harness
fixtures' scripts). Each is imported with `active-memory import`, scanned with the
failure signatures of the repository's earlier sessions (what the store keeps, SPEC §4
item 4: a failure seen once here and once before qualifies), and its task built by the
builder the postmortem uses, within the postmortem's default bound on the whole prompt.
The sessions whose failures qualify on their own also go through
`active-memory postmortem --show-tasks` (the CLI path, no signatures from a store).

The expected phrases were written by reading the transcripts: what failed, the error as
the agent saw it, and what resolved it (the command that worked, the file changed).
The spotter checkouts are not needed: every phrase is in the run.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import failure_sessions
import pytest

from active_memory.checkout import Checkout
from active_memory.cli import main
from active_memory.evidence import FailureSignature, scan
from active_memory.evidence.repeated_failures import branches_of
from active_memory.evidence.signatures import signature
from active_memory.prompts import load_prompts
from active_memory.runlog.record import RunRecord, load_run_record
from active_memory.specialists.tasks import DEFAULT_BATCH_BYTES, DiscoveryTask, build_discovery

FIXTURES = Path(__file__).parent / "fixtures"
SPOTTER = {
    # the spotter sessions in the order they ran (by their first tool call)
    "gqc": "258c7280-ae70-4798-800f-63464d01a85d",
    "fum": "8463c716-a2ea-4c14-9efa-87158ebd9f20",
    "4te": "ae4a77f8-aedd-4bc1-888f-c94edc91af04",
    "a0y": "fa812bfe-b295-4cca-9c2f-fdf01028cb46",
    "dov": "4d5611e5-241a-462a-8d15-5122611a9569",
}
CLAUDE_REAL = "sessions/claude-2.1.332-failures-real/c5a7db27-940a-4514-93dc-834cccb28f0c.jsonl"
CODEX_REAL = "sessions/codex-0.171-failures-real.jsonl"


@dataclass(frozen=True)
class Lesson:
    """The lesson a careful engineer writes from one episode, as what it must name."""

    family: str
    """The failing family whose evidence item the lesson cites."""
    needs: tuple[str, ...]
    """Every command, path and error phrase the lesson names."""


@dataclass(frozen=True)
class Session:
    name: str
    harness: str
    log: str
    earlier: tuple[str, ...]
    """The sessions of the same repository that ran before it (their signatures count)."""
    lessons: tuple[Lesson, ...]
    request: str = ""
    """A phrase of what the person asked (the task's `run.requests`)."""
    workspace: bool | None = None
    """Rebuild the checkout of tests/failure_sessions.py (True: Claude's, with its hook)."""


UPSTREAM = "has no upstream branch"
GCC_UNDECLARED = "\u2018y\u2019 undeclared"  # gcc quotes with typographic quotes
IGNORED = "ignored by one of your .gitignore files"

SESSIONS = (
    Session(
        "spotter-fum",
        "claude",
        f"spotter/{SPOTTER['fum']}.jsonl",
        ("spotter-gqc",),
        (
            # New worktree branches have no upstream: push with --set-upstream.
            Lesson("git push", ("git push", UPSTREAM, "git push --set-upstream origin")),
            # LiveView tests need the Endpoint's secret_key_base in the test config.
            Lesson(
                "mix test",
                (
                    "mix test",
                    "no :secret_key_base configuration found in SpotterWeb.Endpoint",
                    "config/test.exs",
                    "test/spotter_web/live/session_live_test.exs",
                ),
            ),
        ),
        request="Work on bead spotter-fum",
    ),
    Session(
        "spotter-4te",
        "claude",
        f"spotter/{SPOTTER['4te']}.jsonl",
        ("spotter-gqc", "spotter-fum"),
        (
            # The commit check runs format, credo and Dialyzer; --no-verify does not skip
            # it; Dialyzer's never-matching pattern was fixed with :otel_span.hex_trace_id/1.
            Lesson(
                "git commit",
                (
                    "git commit",
                    "--no-verify",
                    "Code is not formatted. Run 'mix format' to fix.",
                    "Function is too complex",
                    "lib/spotter_web/controllers/hooks_controller.ex",
                    "The pattern can never match the type",
                    "lib/spotter_web/controllers/otel_trace_helpers.ex",
                    "Dialyzer",
                    ":otel_span.hex_trace_id/1",
                ),
            ),
        ),
        request="Work on bead spotter-4te",
    ),
    Session(
        "spotter-a0y",
        "claude",
        f"spotter/{SPOTTER['a0y']}.jsonl",
        ("spotter-gqc", "spotter-fum", "spotter-4te"),
        (
            # The built CSS is ignored; migrations are staged from priv/, not _build/.
            Lesson(
                "git add",
                (
                    "git add",
                    "priv/static/assets/spotter.css",
                    IGNORED,
                    "is beyond a symbolic link",
                    "_build/dev/lib/spotter/priv/repo/migrations/",
                    "git add priv/repo/migrations/20260212155510_add_message_upsert_identity.exs",
                ),
            ),
            Lesson("git commit", ("git commit", "Code is not formatted", "mix format")),
            Lesson(
                "git push", ("git push", UPSTREAM, "git push --set-upstream origin spotter-a0y")
            ),
            # credo --strict wants nested modules aliased; compile first.
            Lesson(
                "mix credo",
                (
                    "mix credo --strict",
                    "Nested modules could be aliased at the top of the invoking module",
                    "lib/spotter/services/active_session_registry.ex",
                    "mix compile --warnings-as-errors",
                ),
            ),
        ),
        request="Work on bead spotter-a0y",
    ),
    Session(
        "spotter-dov",
        "claude",
        f"spotter/{SPOTTER['dov']}.jsonl",
        ("spotter-gqc", "spotter-fum", "spotter-4te", "spotter-a0y"),
        (
            Lesson("git add", ("git add", "priv/static/assets/spotter.css", IGNORED)),
            Lesson(
                "git commit",
                (
                    "git commit",
                    "Code is not formatted",
                    "mix format",
                    "Nested modules could be aliased",
                    "lib/spotter/services/waiting_summary.ex",
                    "The pattern can never match the type",
                ),
            ),
            Lesson(
                "git push", ("git push", UPSTREAM, "git push --set-upstream origin spotter-dov")
            ),
        ),
        request="Work on bead spotter-dov",
    ),
    Session(
        "claude-real",
        "claude",
        CLAUDE_REAL,
        (),
        (
            # The project's PreToolUse hook refuses every commit until ruff format ran.
            Lesson(
                "git commit",
                (
                    "git add -A && git commit",
                    ".claude/refuse_commit.sh",
                    "Pre-commit validation failed",
                    "ruff format",
                ),
            ),
            # The script is `build`, not `biuld` (package.json).
            Lesson(
                "npm run biuld",
                ("npm run biuld", 'Missing script: "biuld"', '"build": "node build.js"'),
            ),
            Lesson("gcc", ("gcc -c bad.c -o bad.o", "bad.c:2:10", GCC_UNDECLARED)),
            # `sleep 3` under `timeout 1` is always killed.
            Lesson("sleep", ("timeout 1 sleep 3", "timed out", '"exit_code":124')),
        ),
        request=failure_sessions.PROMPT,
        workspace=True,
    ),
    Session(
        "codex-real",
        "codex",
        CODEX_REAL,
        ("claude-real",),
        (
            # No remote is configured in this checkout.
            Lesson("git push", ("git push", "No configured push destination", '"exit_code":128')),
            # build/ is ignored: the built file is staged with -f (seen in the Claude session too).
            Lesson("git add", ("git add build/app.css", IGNORED, "git add -f build/app.css")),
            Lesson(
                "npm run biuld",
                ("npm run biuld", 'Missing script: "biuld"', '"build": "node build.js"'),
            ),
            Lesson("gcc", ("gcc -c bad.c -o bad.o", GCC_UNDECLARED)),
            Lesson("sleep", ("timeout 1 sleep 3", "timed out")),
        ),
        request=failure_sessions.PROMPT,
        workspace=False,
    ),
    Session(
        "gemini",
        "gemini",
        "harness_sessions/gemini-0.61.0-failures.jsonl",
        ("pi",),
        (Lesson("git add", ("git add build/a.css", f"{IGNORED}: build")),),
    ),
    Session(
        "copilot",
        "copilot",
        "harness_sessions/copilot-1.0.102-failures.jsonl",
        ("pi", "gemini"),
        (Lesson("git add", ("git add build/a.css", f"{IGNORED}: build")),),
    ),
)
EARLIER_ONLY = {
    "spotter-gqc": ("claude", f"spotter/{SPOTTER['gqc']}.jsonl"),
    "pi": ("pi", "harness_sessions/pi-0.73.1-failures.jsonl"),
}
ON_THEIR_OWN = ("spotter-4te", "claude-real", "codex-real")
"""Sessions whose failures qualify without an earlier session: the CLI path shows them."""


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/fixtures with the spotter transcripts unpacked beside the others."""
    folder = tmp_path_factory.mktemp("fixtures")
    (folder / "spotter").mkdir()
    with tarfile.open(FIXTURES / "spotter" / "transcripts.tar.xz", "r:xz") as archive:
        archive.extractall(folder / "spotter", filter="data")
    for name in ("sessions", "harness_sessions"):
        (folder / name).symlink_to(FIXTURES / name)
    return folder


@pytest.fixture(scope="module")
def records(fixtures: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunRecord]:
    """Every session imported with `active-memory import`, by name."""
    out = tmp_path_factory.mktemp("runs")
    logs = {s.name: (s.harness, s.log) for s in SESSIONS} | EARLIER_ONLY
    found = {}
    for name, (harness, log) in logs.items():
        target = out / f"{name}.json"
        assert main(["import", harness, str(fixtures / log), "-o", str(target)]) == 0
        found[name] = load_run_record(target)
    return found


def earlier_signatures(
    records: dict[str, RunRecord], names: tuple[str, ...]
) -> set[FailureSignature]:
    """The failure signatures the store holds after the postmortems of `names`."""
    return {
        signature(failure, branches_of(records[name]))
        for name in names
        for failure in records[name].tool_failures
    }


def workspace(root: Path, session: Session) -> Checkout | None:
    if session.workspace is None:
        return None
    return Checkout(failure_sessions.workspace(root, claude=session.workspace))


def discovery_task(session: Session, records: dict[str, RunRecord], root: Path) -> DiscoveryTask:
    """The task the postmortem builds for this session, within its default prompt bound."""
    record = records[session.name]
    evidence = scan(record, earlier_signatures(records, session.earlier))
    bound = DEFAULT_BATCH_BYTES - load_prompts().fixed_bytes("repository_discovery")
    return build_discovery(
        "repository_discovery",
        record,
        evidence=evidence,
        checkout=workspace(root, session),
        max_bytes=bound,
    )


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, and its compact JSON spelling per object."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        yield json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        for item in value.values():
            yield from strings(item)


def missing(needs: tuple[str, ...], data: Any) -> list[str]:
    text = "\n".join(strings(data))
    return [phrase for phrase in needs if phrase not in text]


def test_there_are_eight_sessions_each_with_a_recurring_failure() -> None:
    assert len(SESSIONS) >= 8
    assert all(session.lessons for session in SESSIONS)


@pytest.mark.parametrize("session", SESSIONS, ids=[s.name for s in SESSIONS])
def test_the_discovery_task_holds_what_the_lesson_needs(
    session: Session, records: dict[str, RunRecord], tmp_path: Path
) -> None:
    task = discovery_task(session, records, tmp_path)
    data = task.to_json()
    items = {i["family"]: i for i in data["evidence"] if i["kind"] == "tool_failures"}
    assert task.evidence_omitted == 0
    for lesson in session.lessons:
        # Each lesson stands on a repeated-failure item of its family (what it cites)...
        assert lesson.family in items, f"{session.name}: no episode of {lesson.family}"
        # ...and everything it names is in the task (the item, the files, the texts).
        assert missing(lesson.needs, data) == [], f"{session.name}: {lesson.family}"
    if session.request:
        assert missing((session.request,), data["run"]["requests"]) == []


@pytest.mark.parametrize("name", ON_THEIR_OWN)
def test_the_cli_shows_the_same_episodes(
    name: str, fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = next(s for s in SESSIONS if s.name == name)
    record = tmp_path / "run.json"
    assert main(["import", session.harness, str(fixtures / session.log), "-o", str(record)]) == 0
    runtime = {
        "harness": session.harness,
        "provider": "anthropic" if session.harness == "claude" else "openai",
        "size": "small",
        "nodes": {"worker": {"kind": "agent", "model": "m"}},
    }
    config = tmp_path / "runtime.json"
    config.write_text(json.dumps(runtime), encoding="utf-8")
    shown = tmp_path / "tasks"
    command = ["postmortem", str(record), "--config", str(config), "--show-tasks", str(shown)]
    if session.workspace is not None:
        checkout = failure_sessions.workspace(tmp_path / "checkout", claude=session.workspace)
        command += ["--checkout", str(checkout)]
    command += ["--store", str(tmp_path / "lessons.sqlite3")]
    assert main(command) == 0, capsys.readouterr().err
    data = json.loads((shown / "repository_discovery.task.json").read_text(encoding="utf-8"))
    prompt = (shown / "repository_discovery.prompt.md").read_text(encoding="utf-8")
    families = {i["family"] for i in data["evidence"] if i["kind"] == "tool_failures"}
    qualifying = scan(load_run_record(record)).evidence
    assert families == {i.family for i in qualifying if i.kind == "tool_failures"}
    for lesson in session.lessons:
        if lesson.family in families:
            assert missing(lesson.needs, data) == [], f"{name}: {lesson.family}"
    assert "what resolved it" in prompt
