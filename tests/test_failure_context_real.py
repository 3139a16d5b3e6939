"""What a repository-discovery task shows of a failure whose calls name no file, and of
a failure episode under the prompt bound, on real sessions with their repositories.

The learning bench's sequences (tests/fixtures/learning/): sessions recorded with the
real `claude` and `codex` binaries, and the five public Claude Code sessions of
marot/spotter, each with the repository at the commit it ended on. A session is replayed
through the hook's recall path first (its receipts: what it read and edited), then
imported with `active-memory import`, scanned with the failure signatures of the
sessions before it, and its task built by the postmortem's builder within the
postmortem's default bound on the whole prompt.

Before: `git push` without an upstream gave a task with no file and no listing (nothing
current a lesson could cite); `make test` refused by the suite's `conftest.py` showed
`make: *** [Makefile:5: test] Error 4` and not the file; `npm run build` from the wrong
folder did not show the `package.json` that has the script; an ignored path did not show
the rule; and the bound could leave spotter's `git push` episode with `calls: []`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))

from learning.calls import session_calls
from learning.replay import replay
from learning.sequence import PreparedSession, checkout_commit, load_sequence, prepare
from learning.steps import environment, import_session

from active_memory.checkout import Checkout
from active_memory.evidence import scan
from active_memory.evidence.repeated_failures import branches_of
from active_memory.evidence.signatures import signature
from active_memory.prompts import load_prompts
from active_memory.runlog.record import RunRecord, load_run_record
from active_memory.specialists.tasks import DEFAULT_BATCH_BYTES, DiscoveryTask, build_discovery
from active_memory.specialists.tasks.gather_command_files import (
    command_files,
    is_test_run,
    run_folders,
)

LEARNING = REPO_ROOT / "tests" / "fixtures" / "learning"


def _sessions(name: str, work: Path) -> list[PreparedSession]:
    return prepare(load_sequence(LEARNING / name / "sequence.json"), work)


def _imported(session: PreparedSession, work: Path, *, hooks: bool) -> RunRecord:
    """The session's run record, at its end commit, with its hooks' receipts if asked."""
    env = environment(work / f"state-{session.key}")
    harness = session.spec.harness
    if hooks:
        checkout_commit(session.checkout, session.spec.start)  # as the session began
        session_id, calls = session_calls(harness, session.log, session.checkout)
        assert not replay(harness, session_id, session.log, calls, env).errors
    checkout_commit(session.checkout, session.spec.end)
    return load_run_record(import_session(harness, session.log, work / f"{session.key}.json", env))


def _task(
    record: RunRecord,
    checkout: Path,
    earlier: Sequence[RunRecord] = (),
    bound: int | None = None,
) -> DiscoveryTask:
    known = {signature(f, branches_of(r)) for r in earlier for f in r.tool_failures}
    if bound is None:
        bound = DEFAULT_BATCH_BYTES - load_prompts().fixed_bytes("repository_discovery")
    return build_discovery(
        "repository_discovery",
        record,
        evidence=scan(record, known),
        checkout=Checkout(checkout),
        max_bytes=bound,
    )


def _shown(task: DiscoveryTask) -> dict[str, str]:
    """Each file the task shows with content, and its text."""
    return {f.path: "\n".join(f.content) for f in task.files if f.content}


def _episode(task: DiscoveryTask, family: str) -> dict[str, Any]:
    data = task.to_json()
    (item,) = [i for i in data["evidence"] if i.get("family") == family]
    return dict(item)


def test_a_push_without_an_upstream_shows_the_work_pushed_and_how_to_push(
    tmp_path: Path,
) -> None:
    first = _sessions("handbook-push", tmp_path)[0]
    task = _task(_imported(first, tmp_path, hooks=True), first.checkout)
    item = _episode(task, "git push")
    assert "has no upstream branch" in str(item)
    shown = _shown(task)
    # The file the session edited before pushing, and the repository's push rules.
    assert "docs/onboarding.md" in shown
    assert "push the branch to `origin`" in shown["CONTRIBUTING.md"]
    assert {"", "docs"} <= {listing.folder for listing in task.listing}


def test_make_test_refused_by_the_suite_shows_the_recipes_error_and_the_conftest(
    tmp_path: Path,
) -> None:
    first = _sessions("calc-env", tmp_path)[0]
    task = _task(_imported(first, tmp_path, hooks=False), first.checkout)
    item = _episode(task, "make test")
    assert "ERROR: CALC_ENV is not 'test'" in str(item) and "Makefile:5" not in str(item)
    shown = _shown(task)
    assert 'os.environ.get("CALC_ENV") != "test"' in shown["tests/conftest.py"]
    assert "Makefile" in shown


def test_npm_run_build_from_the_wrong_folder_shows_the_package_json_that_has_it(
    tmp_path: Path,
) -> None:
    first = _sessions("web-build", tmp_path)[0]
    task = _task(_imported(first, tmp_path, hooks=False), first.checkout)
    assert 'Missing script: "build"' in str(_episode(task, "npm run build"))
    shown = _shown(task)
    assert '"build"' in shown["web/package.json"] and "package.json" in shown


@pytest.fixture(scope="module")
def spotter(tmp_path_factory: pytest.TempPathFactory) -> list[PreparedSession]:
    return _sessions("spotter", tmp_path_factory.mktemp("spotter"))


def test_git_add_of_an_ignored_folder_shows_the_ignore_rule(
    spotter: list[PreparedSession], tmp_path: Path
) -> None:
    # spotter's fourth session, with the second's signatures (the same refusal there).
    second = next(s for s in spotter if s.session_id.startswith("8463c716"))
    fourth = next(s for s in spotter if s.session_id.startswith("fa812bfe"))
    earlier = _imported(second, tmp_path, hooks=False)
    task = _task(_imported(fourth, tmp_path, hooks=False), fourth.checkout, [earlier])
    assert "ignored by one of your .gitignore files" in str(_episode(task, "git add"))
    assert "priv/static/assets/" in _shown(task)[".gitignore"]


def test_an_episode_under_the_bound_keeps_its_failing_call(
    spotter: list[PreparedSession], tmp_path: Path
) -> None:
    # spotter's second session, with its hooks' receipts (a long exploration item) and
    # the first session's signatures: its one `git push` failure qualifies. From the
    # postmortem's bound down to 20 KB, wherever the episode is shown it keeps its call.
    first = next(s for s in spotter if s.session_id.startswith("258c7280"))
    second = next(s for s in spotter if s.session_id.startswith("8463c716"))
    earlier = _imported(first, tmp_path, hooks=False)
    record = _imported(second, tmp_path, hooks=True)
    default = DEFAULT_BATCH_BYTES - load_prompts().fixed_bytes("repository_discovery")
    shown_at: list[int] = []
    for bound in (default, *range(64 * 1024, 20 * 1024, -2 * 1024)):
        task = _task(record, second.checkout, [earlier], bound)
        items = [i for i in task.to_json()["evidence"] if i.get("family") == "git push"]
        for item in items:
            (group,) = item["failures"]
            assert group["calls"], f"at {bound} B: {group}"
            assert group["calls"][0]["command"].startswith("git push")
            shown_at.append(bound)
    assert default in shown_at and min(shown_at) <= 24 * 1024


def test_the_folders_a_command_ran_in_follow_its_cds_inside_the_checkout() -> None:
    assert run_folders("cd web && npm run build", "") == ["", "web"]
    assert run_folders("cd src && cd ../web && make", "app") == ["app", "app/src", "app/web"]
    # Leaving the checkout reads as its root; variables, home and absolute paths are
    # not followed.
    assert run_folders("cd ../.. && ls", "a") == ["a", ""]
    assert run_folders("cd $HOME && cd ~ && cd /tmp && ls", "") == [""]


def test_a_test_run_is_told_by_its_family() -> None:
    assert is_test_run("make test") and is_test_run("mix test") and is_test_run("pytest")
    assert not is_test_run("make build") and not is_test_run("git push")
    files = command_files("make test", ["", "web"], ["ERROR: refused"])
    assert files[:2] == ["Makefile", "GNUmakefile"] and "tests/conftest.py" in files
    assert "web/Makefile" in files and ".credo.exs" not in files
    assert ".credo.exs" in command_files("git commit", [""], ["[F] → too complex"])
