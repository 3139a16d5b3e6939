"""`active-memory init` end to end: inventory, discovery through exchange files, one
publication with a durable receipt, and every refusal the session makes."""

from __future__ import annotations

import fcntl
import json
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
from init_support import History, answer, head, scripted_answers
from specialist_builders import git
from test_init_inventory import ledger_run

from active_memory.cli import main
from active_memory.init import InitRefused, InitStopped, advance
from active_memory.init import publish as publish_module
from active_memory.known_checkouts import KnownCheckouts
from active_memory.store import LessonQuery, open_store


def _call(history: History, session: Path, **options: Any) -> dict[str, Any]:
    options.setdefault("ignore_repos", ["delta"])
    options.setdefault("ignore_graphs", ["legacy"])
    options.setdefault("runs_dir", history.runs)
    return advance(
        session, store=str(history.tmp / "lessons.sqlite3"), environ=history.environ, **options
    )


def _lessons(history: History) -> list[Any]:
    async def read() -> list[Any]:
        async with open_store(str(history.tmp / "lessons.sqlite3")) as store:
            return await store.select(LessonQuery())

    return anyio.run(read)


@pytest.fixture
def history(tmp_path: Path) -> History:
    return History(tmp_path)


def test_init_end_to_end_publishes_once_and_a_second_call_returns_the_same_receipt(
    history: History,
) -> None:
    session = history.tmp / "session"
    first = _call(history, session)
    assert first["phase"] == "discovery"
    assert stat.S_IMODE(session.stat().st_mode) == 0o700
    assert stat.S_IMODE((session / "session.json").stat().st_mode) == 0o600
    selected = {e["run_id"]: e for e in first["inventory"]["selected"]}
    assert sorted(selected) == ["run-a1", "run-a2", "run-b1", "run-b2", "run-g1"]
    assert selected["run-a2"]["workspace"] == str(history.alpha.resolve())
    assert selected["run-b1"]["graph"]["name"] == "software-change"
    excluded = {(e["run_id"], e["kind"]) for e in first["inventory"]["excluded"]}
    assert excluded == {
        ("run-g2", "unprovable"),
        ("run-x1", "unprovable"),
        (None, "unreadable"),
        ("run-u1", "unfinished"),
        ("run-m1", "missing_checkout"),
        ("run-d1", "opted_out"),
        ("run-l1", "opted_out"),
    }
    # Only the runs with evidence get tasks: both discovery specialists, two runs.
    assert sorted(t["specialist"] for t in first["tasks"]) == [
        "graph_discovery",
        "graph_discovery",
        "repository_discovery",
        "repository_discovery",
    ]
    assert _call(history, session)["phase"] == "discovery"  # nothing answered yet
    # This machine now knows where alpha and beta are (known_checkouts.py).
    known = KnownCheckouts(env=history.environ)
    assert known.root("repo:github.com/acme/alpha") == history.alpha.resolve()
    assert known.root("repo:github.com/acme/beta") == history.beta.resolve()
    assert known.recorded()["repo:github.com/acme/alpha"][0].source == "init"

    scripted_answers(session, first["tasks"])
    done = _call(history, session)
    assert done["phase"] == "complete"
    created = done["receipt"]["published"]["created"]
    assert len(created) == 1
    lessons = _lessons(history)
    assert [(x.id, x.scope.repository) for x in lessons] == [
        (created[0][0], "repo:github.com/acme/alpha")
    ]

    again = _call(history, session)
    assert again == done
    assert len(_lessons(history)) == 1


def test_a_resume_with_another_ignore_list_is_refused_and_names_the_way_out(
    history: History,
) -> None:
    session = history.tmp / "session"
    _call(history, session, ignore_repos=["delta", "beta"])
    _call(history, session, ignore_repos=["beta,delta"])  # same list, other spelling
    with pytest.raises(InitRefused, match="new session"):
        _call(history, session, ignore_repos=["delta"])


def test_a_resume_that_omits_every_option_keeps_the_saved_values(history: History) -> None:
    state = Path(history.environ["ZEROSHOT_RUST_STATE_DIR"])
    ledger_run(state, "run-z1", "acme/alpha", head(history.alpha))
    session = history.tmp / "session"
    first = _call(history, session, ignore_repos=["beta"], checkouts=[history.alpha])
    saved = json.loads((session / "session.json").read_text())["options"]
    omitted = {"ignore_repos": None, "ignore_graphs": None, "runs_dir": None, "checkouts": None}
    again = _call(history, session, **omitted)
    assert again["phase"] == "discovery"
    assert again["inventory"] == first["inventory"]
    assert again["tasks"] == first["tasks"]
    assert json.loads((session / "session.json").read_text())["options"] == saved
    # each option alone, omitted or repeated with the saved value, resumes too
    for key in omitted:
        options: dict[str, Any] = {"ignore_repos": ["beta"], "checkouts": [history.alpha]}
        assert _call(history, session, **{**options, key: None})["inventory"] == first["inventory"]


@pytest.mark.parametrize(
    ("option", "value", "flag"),
    [
        ("ignore_repos", ["gamma"], "--ignore-repos"),
        ("ignore_repos", [], "--ignore-repos"),
        ("ignore_graphs", ["other"], "--ignore-graphs"),
        ("runs_dir", "elsewhere", "--runs"),
        ("checkouts", ["beta"], "--checkout"),
    ],
)
def test_a_resume_with_a_different_value_is_refused_naming_the_flag_and_the_way_out(
    history: History, option: str, value: Any, flag: str
) -> None:
    session = history.tmp / "session"
    _call(history, session, checkouts=[history.alpha])
    if option == "runs_dir":
        value = history.tmp / value
        value.mkdir()
    elif option == "checkouts":
        value = [history.beta]
    with pytest.raises(InitRefused) as refused:
        _call(history, session, **{"checkouts": [history.alpha], option: value})
    message = str(refused.value)
    assert flag in message
    assert f"omit {flag} to resume with the saved value" in message
    assert "start a new session with another --directory" in message


def test_ignoring_a_short_folder_name_excludes_every_run_of_that_repository(
    history: History,
) -> None:
    first = _call(history, history.tmp / "session", ignore_repos=["alpha delta"])
    selected = sorted(e["run_id"] for e in first["inventory"]["selected"])
    assert selected == ["run-b1", "run-b2", "run-g1"]


def test_a_discovery_answer_the_checks_refuse_gets_one_repair_task_then_publishes(
    history: History,
) -> None:
    session = history.tmp / "session"
    first = _call(history, session)
    scripted_answers(session, first["tasks"], flawed=True)
    waiting = _call(history, session)
    assert waiting["phase"] == "discovery"
    # One repair task, named after the first (`<specialist>-<digest16>.repair.task.json`),
    # listing both failures; the other answers were taken.
    [repair] = waiting["tasks"]
    assert repair["specialist"] == "repository_discovery"
    assert repair["task_file"].endswith(".repair.task.json")
    assert Path(repair["repair_of"]).name == Path(repair["task_file"]).name.replace(
        ".repair.task.json", ".task.json"
    )
    failures = "\n".join(repair["failures"])
    assert "confidence" in failures and "200-260" in failures
    assert not (session / "receipt.json").exists()
    # The repair answered without the unknown field and inside the file: published.
    scripted_answers(session, [repair])
    done = _call(history, session)
    assert done["phase"] == "complete"
    assert len(done["receipt"]["published"]["created"]) == 1
    [lesson] = _lessons(history)
    assert lesson.scope.repository == "repo:github.com/acme/alpha"


def test_a_stale_answer_bound_to_another_task_is_refused(history: History) -> None:
    session = history.tmp / "session"
    first = _call(history, session)
    answer(first["tasks"][0]["task_file"], {"lessons": []}, digest="f" * 64)
    with pytest.raises(InitRefused, match="write the answer to the task it names"):
        _call(history, session)
    assert not (session / "receipt.json").exists()


def test_a_checkout_changed_before_publication_stops_and_publishes_nothing(
    history: History,
) -> None:
    session = history.tmp / "session"
    first = _call(history, session)
    scripted_answers(session, first["tasks"])
    (history.beta / "Makefile").chmod(0o755)  # only the executable bit changes
    with pytest.raises(InitStopped, match="files changed"):
        _call(history, session)
    assert _lessons(history) == []
    assert not (session / "receipt.json").exists()


def test_a_checkout_whose_remote_changed_stops_publication(history: History) -> None:
    session = history.tmp / "session"
    first = _call(history, session)
    scripted_answers(session, first["tasks"])
    git(history.alpha, "remote", "set-url", "origin", "git@github.com:acme/fork.git")
    with pytest.raises(InitStopped, match="remotes or root commits changed"):
        _call(history, session)


def test_a_second_init_on_a_session_in_use_is_refused(history: History) -> None:
    session = history.tmp / "session"
    _call(history, session)
    with (session / "lock").open("a") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(InitRefused, match="another `active-memory init`"):
            _call(history, session)


def test_a_crash_after_the_publish_transaction_recovers_without_publishing_twice(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = history.tmp / "session"
    scripted_answers(session, _call(history, session)["tasks"])

    def crash(*_: Any) -> None:
        raise SystemExit("killed between publication and checkpoint")

    with monkeypatch.context() as patched:
        patched.setattr(publish_module, "write_receipt", crash)
        with pytest.raises(SystemExit):
            _call(history, session)
    assert len(_lessons(history)) == 1  # published, but no receipt yet
    assert not (session / "receipt.json").exists()

    done = _call(history, session)
    assert done["phase"] == "complete"
    assert len(_lessons(history)) == 1
    assert done["receipt"]["published"]["created"] == [[_lessons(history)[0].id, 1]]


def test_a_session_folder_inside_a_git_checkout_is_refused(history: History) -> None:
    with pytest.raises(InitRefused, match="inside the git checkout"):
        _call(history, history.alpha / "session")


def test_the_command_prints_phase_json_and_exits_2_on_a_conflicting_resume(
    history: History, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key, value in history.environ.items():
        monkeypatch.setenv(key, value)
    session = str(history.tmp / "session")
    base = ["init", "--directory", session, "--runs", str(history.runs)]
    store = ["--store", str(history.tmp / "lessons.sqlite3")]
    assert main([*base, "--ignore-repos", "delta", "--ignore-graphs", "legacy", *store]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["phase"] == "discovery" and printed["next_action"]
    assert main([*base, "--ignore-repos", "alpha", *store]) == 2
    assert "new session" in capsys.readouterr().err
    # no flag but the session: the saved lists and --runs folder apply
    assert main(["init", "--directory", session, *store]) == 0
    assert json.loads(capsys.readouterr().out) == printed


def test_a_ledger_run_is_selected_through_a_named_checkout_and_the_set_is_kept(
    history: History,
) -> None:
    state = Path(history.environ["ZEROSHOT_RUST_STATE_DIR"])
    ledger_run(state, "run-z1", "acme/alpha", head(history.alpha))
    session = history.tmp / "session"
    first = _call(history, session, checkouts=[history.alpha, history.beta])
    selected = {e["run_id"]: e for e in first["inventory"]["selected"]}
    assert selected["run-z1"]["workspace"] == str(history.alpha.resolve())
    assert selected["run-z1"]["repository"] == "repo:github.com/acme/alpha"
    # the same set of checkouts, named another way, resumes
    _call(history, session, checkouts=[history.beta / "api", history.alpha])
    with pytest.raises(InitRefused, match=r"--checkout.*new session"):
        _call(history, session, checkouts=[history.alpha])
    # omitted, the saved set applies
    assert _call(history, session)["inventory"] == first["inventory"]


def test_a_session_saved_before_checkouts_existed_resumes_without_them(
    history: History,
) -> None:
    session = history.tmp / "session"
    _call(history, session)
    state = json.loads((session / "session.json").read_text())
    del state["options"]["checkouts"]
    (session / "session.json").write_text(json.dumps(state))
    assert _call(history, session)["phase"] == "discovery"
    with pytest.raises(InitRefused, match="--checkout"):
        _call(history, session, checkouts=[history.alpha])


def test_the_command_exits_2_on_a_checkout_that_is_not_a_git_working_tree(
    history: History, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key, value in history.environ.items():
        monkeypatch.setenv(key, value)
    plain = history.tmp / "plain"
    plain.mkdir()
    session = history.tmp / "session"
    store = ["--store", str(history.tmp / "lessons.sqlite3")]
    assert main(["init", "--directory", str(session), "--checkout", str(plain), *store]) == 2
    assert "not a git working tree" in capsys.readouterr().err
    assert not session.exists()
