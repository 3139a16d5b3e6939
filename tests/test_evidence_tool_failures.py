"""Repeated tool failures as evidence (SPEC §4 item 4): thresholds, exclusions, the item,
and `active-memory evidence RUN.json` on the real sessions of tests/fixtures."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from active_memory.cli import main
from active_memory.evidence import FailureSignature, scan
from active_memory.evidence.signatures import signature
from active_memory.runlog.record import parse_run_record

FIXTURES = Path(__file__).parent / "fixtures"
SESSIONS = FIXTURES / "sessions"


def _record(failures: list[dict[str, Any]], **extra: Any) -> Any:
    return parse_run_record(
        {
            "schema": "active-memory/run@1",
            "run_id": "run-tf",
            "outcome": "succeeded",
            "source": {"branch": "feature-7"},
            "tool_failures": failures,
            **extra,
        }
    )


def _failure(
    minute: int, family: str, error: str, command: str | None = None, **fields: Any
) -> dict[str, Any]:
    return {
        "node": "worker",
        "tool": "Bash",
        "at": f"2026-12-01T10:{minute:02d}:00Z",
        "family": family,
        "command": command or family,
        "error": error,
        **fields,
    }


def _resolved(minute: int, command: str, family: str, *, edited: bool) -> dict[str, Any]:
    return {
        "at": f"2026-12-01T10:{minute:02d}:00Z",
        "command": command,
        "family": family,
        "edited": edited,
    }


def _items(record: Any, **options: Any) -> dict[str, Any]:
    result = scan(record, **options)
    return {item.family or "": item for item in result.evidence if item.kind == "tool_failures"}


def test_the_same_normalised_error_twice_qualifies() -> None:
    record = _record(
        [
            _failure(1, "git push", "fatal: The current branch feature-7 has no upstream branch."),
            _failure(9, "git push", "fatal: The current branch feature-7 has no upstream branch."),
        ]
    )
    (item,) = _items(record).values()
    assert item.qualified == "the same error twice" and item.count == 2
    assert item.id.startswith("ev-tf-") and item.specialists == ("repository_discovery",)
    (group,) = item.failures
    assert group.signature == "fatal: The current branch <branch> has no upstream branch."
    assert group.times == ("2026-12-01T10:01:00Z", "2026-12-01T10:09:00Z")


def test_three_failures_with_any_errors_qualify_and_two_different_ones_do_not() -> None:
    errors = ["make: *** [test] Error 2", "timed out", "Makefile:3: missing separator"]
    three = _record([_failure(m, "make test", e) for m, e in enumerate(errors, start=1)])
    assert _items(three)["make test"].qualified == "three failures"
    two = _record([_failure(m, "make test", e) for m, e in enumerate(errors[1:], start=1)])
    assert _items(two) == {}
    once = _record([_failure(1, "npm test", 'npm error Missing script: "test"')])
    assert _items(once) == {}


def test_one_failure_with_an_earlier_run_s_signature_qualifies() -> None:
    failure = _failure(
        1,
        "git add",
        "The following paths are ignored by one of your .gitignore files: priv/static/assets",
    )
    record = _record([failure])
    assert _items(record) == {}
    earlier = {signature(record.tool_failures[0])}
    assert _items(record, earlier_signatures=earlier)["git add"].qualified == (
        "seen in an earlier run"
    )
    other = {FailureSignature("git add", "fatal: pathspec 'x' did not match any files")}
    assert _items(record, earlier_signatures=other) == {}


def test_a_red_green_cycle_does_not_qualify_and_is_reported_as_skipped() -> None:
    green = _resolved(9, "pytest tests/test_cart.py", "pytest", edited=True)
    cycle = [
        _failure(
            m,
            "pytest",
            "FAILED tests/test_cart.py::test_total - assert 0 == 4",
            "pytest tests/test_cart.py",
            resolved_by=green,
        )
        for m in (1, 3, 5)
    ]
    result = scan(_record(cycle))
    assert [i for i in result.evidence if i.kind == "tool_failures"] == []
    (skip,) = [s for s in result.skipped if s.family == "pytest"]
    assert skip.reason.startswith("red-green cycle")


def test_the_same_test_passing_without_an_edit_or_another_test_passing_is_no_cycle() -> None:
    unedited = _resolved(9, "pytest tests/test_cart.py", "pytest", edited=False)
    other_test = _resolved(9, "pytest tests/test_user.py", "pytest", edited=True)
    for resolution in (unedited, other_test):
        failures = [
            _failure(
                m,
                "pytest",
                "FAILED tests/test_cart.py::test_total - assert 0 == 4",
                "pytest tests/test_cart.py",
                resolved_by=resolution,
            )
            for m in (1, 3)
        ]
        assert _items(_record(failures))["pytest"].qualified == "the same error twice"


def test_a_pre_commit_auto_fix_followed_by_a_clean_retry_does_not_qualify() -> None:
    fixed = "ruff....Failed\n- files were modified by this hook"

    def commit(minute: int, error: str, retried: int) -> dict[str, Any]:
        retry = _resolved(retried, "git commit -m x", "git commit", edited=False)
        return _failure(minute, "git commit", error, "git commit -m x", resolved_by=retry)

    # Two auto-fixes, each retried cleanly: nothing qualifies, the skip says why.
    result = scan(_record([commit(1, fixed, 2), commit(5, fixed, 6)]))
    assert [i for i in result.evidence if i.kind == "tool_failures"] == []
    assert [s.reason for s in result.skipped if s.family == "git commit"] == [
        "auto-fixed by a pre-commit hook, then committed on a clean retry"
    ]
    # Auto-fixes followed by another failure before the retry: not clean, all count.
    item = _items(
        _record([commit(1, fixed, 4), commit(2, fixed, 4), commit(3, "mypy....Failed", 4)])
    )
    assert item["git commit"].count == 3 and item["git commit"].not_counted == ()


def test_the_item_carries_groups_the_resolution_and_the_time_lost() -> None:
    resolution = _resolved(12, "git push -u origin feature-7", "git push", edited=False)
    failures = [
        _failure(
            1,
            "git push",
            "fatal: The current branch feature-7 has no upstream branch.",
            exit_code=128,
        ),
        _failure(
            4,
            "git push",
            "fatal: The current branch feature-7 has no upstream branch.",
            "git push origin",
            exit_code=128,
        ),
        _failure(
            7, "git push", "error: failed to push some refs", exit_code=1, resolved_by=resolution
        ),
    ]
    item = _items(_record(failures))["git push"]
    first, second = item.failures
    assert (first.count, first.commands, first.exit_codes) == (
        2,
        ("git push", "git push origin"),
        (128,),
    )
    assert (second.count, second.error) == (1, "error: failed to push some refs")
    assert item.resolution is not None and item.resolution.command == resolution["command"]
    assert item.seconds_to_resolution == 11 * 60.0
    data = item.to_json()
    assert data["family"] == "git push" and "not_counted" not in data


def test_ids_are_stable_whatever_the_order_and_differ_per_family() -> None:
    failures = [
        _failure(1, "npm test", 'npm error Missing script: "test"'),
        _failure(2, "gcc", "a.c:1:1: error: x"),
        _failure(3, "npm test", 'npm error Missing script: "test"'),
        _failure(4, "gcc", "a.c:1:1: error: x"),
    ]
    one = _items(_record(failures))
    other = _items(_record(list(reversed(failures))))
    assert {f: i.id for f, i in one.items()} == {f: i.id for f, i in other.items()}
    assert one["gcc"].id != one["npm test"].id


# --- the real sessions ---------------------------------------------------------------------


def _evidence(
    harness: str, log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    run = tmp_path / f"{log.stem}.json"
    assert main(["import", harness, str(log), "-o", str(run)]) == 0
    capsys.readouterr()
    assert main(["evidence", str(run), "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def _families(document: dict[str, Any]) -> set[str]:
    return {i["family"] for i in document["evidence"] if i["kind"] == "tool_failures"}


@pytest.mark.parametrize(
    ("harness", "log", "qualifying"),
    [
        (
            "claude",
            "claude-2.1.332-failures-real/c5a7db27-940a-4514-93dc-834cccb28f0c.jsonl",
            {"git commit", "npm run biuld", "gcc", "sleep"},
        ),
        ("codex", "codex-0.171-failures-real.jsonl", {"git push", "npm run biuld", "gcc", "sleep"}),
    ],
)
def test_evidence_lists_exactly_the_families_that_meet_the_rule_in_the_real_sessions(
    harness: str,
    log: str,
    qualifying: set[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    document = _evidence(harness, SESSIONS / log, tmp_path, capsys)
    assert _families(document) == qualifying
    # pytest failed three times, each time fixed in a red-green cycle: no item, one skip.
    (skip,) = [s for s in document["skipped"] if s.get("family") == "pytest"]
    assert skip["reason"].startswith("red-green cycle")


SPOTTER_EXPECTED = {
    # session → families that meet SPEC §4 item 4 in that session alone
    "258c7280-ae70-4798-800f-63464d01a85d": set(),  # mix test: a red-green cycle
    "4d5611e5-241a-462a-8d15-5122611a9569": {"git commit"},  # refused three times
    "8463c716-a2ea-4c14-9efa-87158ebd9f20": set(),  # mix test: a red-green cycle
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04": {"git commit"},  # the same dialyzer error 5 times
    "fa812bfe-b295-4cca-9c2f-fdf01028cb46": {"mix credo"},  # the same credo issue twice
}


@pytest.fixture(scope="module")
def spotter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("spotter")
    with tarfile.open(FIXTURES / "spotter" / "transcripts.tar.xz", "r:xz") as archive:
        archive.extractall(folder, filter="data")
    return folder


@pytest.mark.parametrize("session", sorted(SPOTTER_EXPECTED))
def test_evidence_on_the_public_spotter_sessions(
    session: str, spotter: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _evidence("claude", spotter / f"{session}.jsonl", tmp_path, capsys)
    assert _families(document) == SPOTTER_EXPECTED[session]
    for item in document["evidence"]:
        if item["kind"] == "tool_failures":
            assert item["id"].startswith("ev-tf-")
            assert sum(g["count"] for g in item["failures"]) == item["count"]


def test_an_earlier_session_s_signatures_make_a_single_failure_count(
    spotter: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`git push` without an upstream fails once in each of these sessions, on branches of
    different names: with the first session's signatures, the second one's counts."""
    runs = {}
    for session in ("258c7280-ae70-4798-800f-63464d01a85d", "fa812bfe-b295-4cca-9c2f-fdf01028cb46"):
        out = tmp_path / f"{session}.json"
        assert main(["import", "claude", str(spotter / f"{session}.jsonl"), "-o", str(out)]) == 0
        runs[session] = parse_run_record(json.loads(out.read_text()))
    first, second = runs.values()
    branch = [first.source.branch] if first.source and first.source.branch else []
    earlier = {signature(f, branch) for f in first.tool_failures}
    assert "git push" not in _items(second)
    item = _items(second, earlier_signatures=earlier)["git push"]
    assert item.qualified == "seen in an earlier run"
    assert item.failures[0].signature == (
        "fatal: The current branch <branch> has no upstream branch."
    )


LEARNING_EXPECTED = {
    # recorded with the real binaries (tests/learning_sessions.py): the first session of
    # each fails twice the same way; the later ones once (they count only with an earlier
    # session's signatures), or not at all
    ("calc-env", "92724b5a"): ("claude", {"make test"}),
    ("calc-env", "12610603"): ("claude", set()),
    ("calc-env", "3585d5ec"): ("claude", set()),
    ("handbook-push", "61756359"): ("claude", {"git push"}),
    ("handbook-push", "34fb3362"): ("claude", set()),
    ("web-build", "01a237a1-ede5"): ("codex", {"npm run build"}),
    ("web-build", "01a237a1-f7c5"): ("codex", set()),
}


@pytest.mark.parametrize(("sequence", "session"), sorted(LEARNING_EXPECTED))
def test_evidence_on_the_recorded_learning_sessions(
    sequence: str, session: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    harness, expected = LEARNING_EXPECTED[(sequence, session)]
    with tarfile.open(FIXTURES / "learning" / sequence / "transcripts.tar.xz", "r:xz") as archive:
        archive.extractall(tmp_path / "logs", filter="data")
    (log,) = [p for p in (tmp_path / "logs").glob("*.jsonl") if session in p.name]
    document = _evidence(harness, log, tmp_path, capsys)
    assert _families(document) == expected
