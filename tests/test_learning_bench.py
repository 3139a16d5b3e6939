"""The learning bench (bench/learning_bench.py): a recorded sequence through the real
import, postmortem and recall path on the replay lane, and the verdicts it gives.

The end-to-end case: calc-env (tests/fixtures/learning/, four real Claude Code sessions
whose `make test` fails unless CALC_ENV=test is set), its store seeded with one lesson
that names `make test` and is associated with `src/calc`. Session 2 reads
`src/calc/ops.py` before its `make test` fails: prevented. Session 3 reads
`src/calc/ledger.py` and never runs the tests: the card concerns nothing it then did.
Session 4's first call is the failing `make test`, which touches nothing under
`src/calc`: missed. These hold whatever the discovery tasks hold, so the lesson is seeded
and every task the postmortems ask is answered by a script (maintenance keeps, discovery
proposes nothing)."""

from __future__ import annotations

import json
import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT
from pydantic import JsonValue

sys.path.insert(0, str(REPO_ROOT / "bench"))

import learning_bench
from learning.answers import Recorder, Store, fingerprint, task_name
from learning.calls import Call
from learning.contexts import claude_contexts
from learning.outcome import classify, concerned_families
from learning.replay import Delivery
from learning.run import Lane, MissingRecording, run_variant
from learning.sequence import SequenceError, load_sequence

from active_memory.specialists.kinds import kind_of
from active_memory.specialists.providers.base import input_digest

CALC = REPO_ROOT / "tests" / "fixtures" / "learning" / "calc-env"
SEED = {
    "id": "L-1",
    "revision": 1,
    "scope": {"kind": "repository", "repository": "repo:example.com/acme/calc"},
    "status": "active",
    "title": "Run the calc tests as CALC_ENV=test make test",
    "recommendation": "`make test` refuses to start unless `CALC_ENV=test` is set "
    "(tests/conftest.py guards the real ledger): run `CALC_ENV=test make test`.",
    "associations": {"folders": ["src/calc"]},
    "evidence": {"run_ids": ["run-0"], "evidence_ids": [], "citations": []},
}


def _seeded_calc(tmp_path: Path) -> Path:
    """A copy of calc-env without recordings, whose store starts with `SEED`."""
    folder = tmp_path / "calc-seeded"
    folder.mkdir()
    for name in ("repo.bundle", "transcripts.tar.xz"):
        shutil.copy(CALC / name, folder / name)
    document = json.loads((CALC / "sequence.json").read_text(encoding="utf-8"))
    document["name"] = "calc-seeded"
    document["lessons"] = "seed.jsonl"
    (folder / "sequence.json").write_text(json.dumps(document), encoding="utf-8")
    (folder / "seed.jsonl").write_text(json.dumps(SEED) + "\n", encoding="utf-8")
    return folder


def _scripted(name: str, specialist: str, task: JsonValue) -> JsonValue:
    if not kind_of(specialist).is_maintenance:
        return {"lessons": []}
    lessons = task.get("lessons") if isinstance(task, dict) else None
    assert isinstance(lessons, list)
    return {
        "decisions": [
            {"id": x["id"], "revision": x["revision"], "action": "keep", "reason": "still true"}
            for x in lessons
            if isinstance(x, dict)
        ]
    }


def test_a_seeded_sequence_is_prevented_then_missed_and_pays_bytes_for_nothing(
    tmp_path: Path,
) -> None:
    sequence = load_sequence(_seeded_calc(tmp_path))
    store = Store.read(sequence.answers, sequence.recordings)
    recorder = Recorder(store, tmp_path / "tasks", fallback=_scripted)
    result = run_variant(
        sequence, with_failures=True, lane=Lane("replay"), work=tmp_path / "work",
        recorder=recorder,
    )  # fmt: skip
    assert recorder.missing == [] and result.problems == []
    # Every task was recorded, and the real postmortems replayed those recordings.
    assert store.used and sequence.recordings.exists()
    verdicts = {(r.session, r.family): r.verdict for s in result.sessions for r in s.recurrences}
    session = {s.session.index: s.session.key for s in result.sessions}
    assert verdicts == {
        (session[2], "make test"): "prevented",
        (session[4], "make test"): "missed",
    }
    second = next(s for s in result.sessions if s.session.index == 2)
    (recurrence,) = second.recurrences
    first_failure = next(c for c in second.calls if c.failed)
    assert first_failure.tool_input["command"] == "make test"
    assert recurrence.delivered_at is not None
    assert recurrence.delivered_at < recurrence.first_failure == first_failure.index
    third = next(s for s in result.sessions if s.session.index == 3)
    (delivery,) = third.replayed.deliveries
    assert third.nothing_cards == [("L-1", 1)] and third.nothing_bytes == delivery.size > 0
    assert second.nothing_bytes == 0  # it ran `make test` after the card
    # The run records joined the replayed deliveries, stamped at the calls' times.
    record = json.loads(
        (tmp_path / "work" / "runs" / f"{session[2]}.run.json").read_text(encoding="utf-8")
    )
    assert [d["lesson"] for d in record["deliveries"]] == ["L-1"]
    delivered_at = datetime.fromisoformat(record["deliveries"][0]["at"].replace("Z", "+00:00"))
    assert abs(delivered_at - second.calls[recurrence.delivered_at].at) < timedelta(seconds=1)


def test_a_task_without_a_recording_fails_naming_it_and_the_command(tmp_path: Path) -> None:
    sequence = load_sequence(_seeded_calc(tmp_path))
    with pytest.raises(MissingRecording) as raised:
        run_variant(sequence, with_failures=False, lane=Lane("replay"), work=tmp_path / "w")
    message = str(raised.value)
    # The seeded card reached session 1, so its postmortem asks maintenance first.
    assert "repository_maintenance" in message and "session 1-" in message
    assert "without tool_failures" in message
    assert "bench/learning_bench.py --record --sequence calc-seeded" in message


def _calls(failing: dict[int, str], resolving: dict[int, str], count: int = 8) -> list[Call]:
    start = datetime(2026, 2, 1, tzinfo=UTC)
    calls = []
    for index in range(count):
        family = failing.get(index) or resolving.get(index) or "Read"
        call = Call(index, start + timedelta(seconds=index), "Bash", {"command": family},
                    "/r", "worker", None, f"c{index}", family)  # fmt: skip
        if index in failing:
            call.failed, call.failure_family = True, failing[index]
        if index in resolving:
            call.resolves.append(resolving[index])
        calls.append(call)
    return calls


def _delivered(at: int) -> list[Delivery]:
    return [Delivery(at, datetime(2026, 2, 1, tzinfo=UTC), "L-1", 1, 300, "folder")]


@pytest.mark.parametrize(
    ("delivered_at", "verdict"),
    [(1, "prevented"), (3, "shortened"), (4, "shortened"), (5, "missed"), (None, "missed")],
)
def test_the_first_relevant_card_decides_the_verdict(
    delivered_at: int | None, verdict: str
) -> None:
    # `git push` fails at calls 3 and 5, and is resolved at 6: a card at the first failing
    # call itself can only shorten (it arrives with that call's result).
    calls = _calls({3: "git push", 5: "git push"}, {6: "git push"})
    deliveries = _delivered(delivered_at) if delivered_at is not None else []
    found = classify("s", calls, "git push", deliveries, lambda key: frozenset({"git push"}))
    assert (found.verdict, found.first_failure, found.bound) == (verdict, 3, 5)


def test_a_card_about_something_else_is_no_card_for_the_family() -> None:
    calls = _calls({3: "git push"}, {4: "git push"})
    found = classify("s", calls, "git push", _delivered(1), lambda key: frozenset({"mix test"}))
    assert found.verdict == "missed" and found.lesson is None


def test_a_card_counts_only_in_the_failing_calls_context_until_a_compaction() -> None:
    calls = _calls({5: "git push"}, {6: "git push"})
    at = datetime(2026, 2, 1, tzinfo=UTC)
    about = lambda key: frozenset({"git push"})  # noqa: E731
    # A sub-agent's card is not in the main agent's context.
    sub = [Delivery(1, at, "L-1", 1, 300, "folder", agent="a1")]
    assert classify("s", calls, "git push", sub, about).verdict == "missed"
    # A main-agent card before a compaction of the main context (epoch 0, the failing
    # call in epoch 1) is lost; one given again after it prevents.
    epochs = [0, 0, 0, 1, 1, 1, 1, 1]
    lost = [Delivery(1, at, "L-1", 1, 300, "folder")]
    assert classify("s", calls, "git push", lost, about, epochs).verdict == "missed"
    again = [*lost, Delivery(4, at, "L-1", 1, 300, "folder", epoch=1)]
    found = classify("s", calls, "git push", again, about, epochs)
    assert (found.verdict, found.delivered_at) == ("prevented", 4)


def test_a_claude_logs_context_events_are_its_prompts_compactions_and_calls_that_never_ran(
    tmp_path: Path,
) -> None:
    def line(kind: str, at: int, **fields: Any) -> str:
        stamp = f"2026-02-01T10:00:{at:02d}Z"
        return json.dumps({"type": kind, "timestamp": stamp, **fields})

    refused = {"type": "tool_result", "tool_use_id": "t1",
               "content": "The user doesn't want to proceed with this tool use."}  # fmt: skip
    log = tmp_path / "s.jsonl"
    log.write_text("\n".join([
        line("user", 1, message={"content": "fix the build"}),
        line("user", 2, message={"content": [refused]}),
        line("user", 3, message={"content": [{"type": "text",
                                              "text": "[Request interrupted by user]"}]}),
        line("user", 4, message={"content": "<task-notification>done</task-notification>"}),
        line("user", 5, isMeta=True, message={"content": "caveat"}),
        line("system", 6, subtype="compact_boundary"),
        line("user", 7, isCompactSummary=True, message={"content": "summary"}),
        line("user", 8, message={"content": "<command-name>/compact</command-name>"}),
        line("user", 9, message={"content": [{"type": "text", "text": "continue"}]}),
        "not json",
    ]))  # fmt: skip
    found = claude_contexts(log)
    assert [t.second for t in found.prompts] == [1, 9]
    assert [t.second for t in found.refunding] == [1, 4, 9]
    assert [t.second for t in found.compactions] == [6]
    assert found.never_ran == {"t1"}


def test_a_lesson_concerns_the_families_it_cites_names_or_associates() -> None:
    families = ["git push", "mix test", "npm run build", "Read test/support"]
    evidence = {"ev-tf-000000000001": "npm run build"}
    lesson: dict[str, JsonValue] = {
        "title": "Push new branches with -u",
        "recommendation": "Use `git push -u origin HEAD`; `Read test/support` is a folder.",
        "associations": {"keywords": [["mix", "test"]]},
        "evidence": {"evidence_ids": ["ev-tf-000000000001"]},
    }
    assert concerned_families(lesson, families, evidence) == {
        "git push", "mix test", "npm run build"
    }  # fmt: skip
    assert (
        concerned_families({"title": "git pushing", "recommendation": "x"}, families, {}) == set()
    )


def test_re_recording_keys_an_unchanged_answer_anew_and_writes_out_a_changed_task(
    tmp_path: Path,
) -> None:
    answers, recordings = tmp_path / "answers.json", tmp_path / "recordings.json"
    store = Store.read(answers, recordings)
    task: dict[str, Any] = {"evidence": [{"id": "ev-tf-1"}], "lessons": [], "files": ["v1"]}
    name = task_name("1-abc.with", "repository_discovery", task)
    lesson: dict[str, JsonValue] = {
        "title": "Push new branches with -u origin",
        "recommendation": "Run `git push -u origin HEAD` the first time.",
        "associations": {"folders": ["docs"], "a_field_of_a_later_schema": ["git push"]},
        "evidence": ["ev-tf-1"],
        "why_recurs": "every change is pushed",
    }
    plain: dict[str, JsonValue] = {**lesson, "associations": {"folders": ["docs"]}}
    # Best first: an answer this schema refuses (a field it does not have), then one it takes.
    store.add(name, fingerprint(task), "repository_discovery", {"lessons": [plain]})
    store.add(name, fingerprint(task), "repository_discovery", {"lessons": [lesson]})
    store.write()
    store = Store.read(answers, recordings)
    recorder = Recorder(store, tmp_path / "tasks")
    # The view of the files changed, not the evidence: the answer the schema takes fits.
    reworded = task | {"files": ["v2"]}
    found = recorder.answer("1-abc.with", "repository_discovery", reworded, "p", "s")
    assert found == {"lessons": [plain]}
    assert store.rekeyed == 1 and recorder.missing == []
    assert store.recordings.find("repository_discovery", input_digest(reworded)) is not None
    # New evidence: the old answer is not replayed; the task is written out with it.
    changed = task | {"evidence": [{"id": "ev-tf-1"}, {"id": "ev-tf-2"}]}
    assert recorder.answer("1-abc.with", "repository_discovery", changed, "p", "s") is None
    (asked,) = recorder.missing
    assert sorted(p.name for p in asked.files) == [
        f"{name}.previous-answer.json", f"{name}.prompt.md", f"{name}.system.md",
        f"{name}.task.json",
    ]  # fmt: skip
    (tmp_path / "tasks" / f"{name}.answer.json").write_text('{"lessons": []}', "utf-8")
    assert recorder.answer("1-abc.with", "repository_discovery", changed, "p", "s") == {
        "lessons": []
    }
    assert store.added == 1 and len(store.answers) == 3
    # Pruning keeps what this run used: the answer it re-keyed and the one it added.
    assert store.prune() == 1
    store.write()
    assert len(Store.read(answers, recordings).answers) == 2


def test_a_bad_sequence_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sequence.json").write_text('{"schema": "nope"}', encoding="utf-8")
    with pytest.raises(SequenceError, match="not a learning sequence"):
        load_sequence(tmp_path)
    assert learning_bench.main(["--sequence", str(tmp_path)]) == 2
    assert "not a learning sequence" in capsys.readouterr().err
    assert learning_bench.main(["--sequence", "no-such-sequence"]) == 2
    assert "calc-env" in capsys.readouterr().err  # the bundled ones are named
    assert learning_bench.main(["--record", "--lane", "claude"]) == 2
    assert learning_bench.main(["--prune"]) == 2


def test_every_bundled_sequence_has_four_sessions_or_more_and_its_recordings() -> None:
    found = learning_bench.bundled()
    assert len(found) >= 3
    for folder in found:
        sequence = load_sequence(folder)
        assert len(sequence.spec.sessions) >= 4
        assert sequence.recordings.exists() and sequence.answers.exists()


def test_the_bundled_calc_env_replays_its_recordings_prevented_then_shortened(
    tmp_path: Path,
) -> None:
    # The recorded answers are current: the bench with no arguments needs them. When a
    # task changes, this fails naming the task; `bench/learning_bench.py --record` fixes it.
    sequence = load_sequence(CALC)
    result = run_variant(sequence, with_failures=True, lane=Lane("replay"), work=tmp_path)
    assert result.problems == []
    verdicts = {
        (s.session.index, r.family): (r.verdict, r.delivered_at)
        for s in result.sessions
        for r in s.recurrences
    }
    # Session 2 reads src/calc/ops.py (the lesson's folder) first; session 4's first call
    # is the failing `make test` itself, whose command card comes with its result.
    assert verdicts == {(2, "make test"): ("prevented", 0), (4, "make test"): ("shortened", 0)}
    fourth = next(s for s in result.sessions if s.session.index == 4)
    assert [d.match for d in fourth.replayed.deliveries] == ["command"]
