"""Failure signatures (evidence/signatures.py): what two occurrences of a failure share."""

from __future__ import annotations

import pytest

from active_memory.evidence.signatures import FailureSignature, normalise_error, signature
from active_memory.runlog.record import ToolFailure


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        # numbers: line and column, counts, durations, thread IDs
        (
            "lib/app.ex:57:13:pattern_match The pattern can never match the type.",
            "lib/app.ex:<n>:<n>:pattern_match The pattern can never match the type.",
        ),
        (
            "thread 'tests::adds' (28195) panicked at src/lib.rs:6:17:",
            "thread 'tests::adds' (<n>) panicked at src/lib.rs:<n>:<n>:",
        ),
        ("error[E0308]: mismatched types", "error[E<n>]: mismatched types"),
        # absolute and temporary paths; relative paths stay
        ("open '/home/dev/demo/empty/package.json'", "open '<path>'"),
        ("cat: /tmp/pytest-of-dev/pytest-3/a.txt: No such file", "cat: <tmp>: No such file"),
        ("see ~/.config/shop.toml and src/shop/money.py", "see <path> and src/shop/money.py"),
        (r"C:\Users\dev\AppData\Local\Temp\x\a.txt is locked", "<tmp> is locked"),
        # hex digests, UUIDs, IDs, times
        ("HEAD is at 0123abc9 fix", "HEAD is at <hex> fix"),
        ("session 913df1ad-bf35-4229-9a7f-7a3c08238481 lost", "session <id> lost"),
        ("token a3f9Kq2Zx81LmN0pQr expired", "token <id> expired"),
        ("failed at 2026-12-02T15:24:43.820Z after 1.05s", "failed at <time> after <n>s"),
        ("killed at 10:04:59", "killed at <time>"),
        # whitespace collapsed
        ("a   b\n\tc", "a b c"),
    ],
)
def test_what_varies_between_occurrences_becomes_a_placeholder(text: str, normalised: str) -> None:
    assert normalise_error(text) == normalised


def test_the_session_s_branch_name_becomes_a_placeholder() -> None:
    one = normalise_error(
        "fatal: The current branch spotter-a0y has no upstream branch.", ["spotter-a0y"]
    )
    other = normalise_error(
        "fatal: The current branch spotter-fum has no upstream branch.", ["spotter-fum"]
    )
    assert one == other == "fatal: The current branch <branch> has no upstream branch."


def _failure(error: str, family: str = "mix test") -> ToolFailure:
    return ToolFailure(tool="Bash", family=family, error=error)


def test_a_signature_is_the_first_line_that_says_more_than_a_test_name() -> None:
    first = _failure(
        "1) test renders the page (AppWeb.PageTest)\n"
        "** (RuntimeError) no :secret_key_base configuration found in AppWeb.Endpoint.\n"
        "2) test renders the menu (AppWeb.PageTest)"
    )
    second = _failure(
        "3) test shows the cart (AppWeb.CartTest)\n"
        "** (RuntimeError) no :secret_key_base configuration found in AppWeb.Endpoint."
    )
    assert (
        signature(first)
        == signature(second)
        == FailureSignature(
            "mix test",
            "** (RuntimeError) no :secret_key_base configuration found in AppWeb.Endpoint.",
        )
    )
    only_a_name = _failure("--- FAIL: TestTotal (0.00s)", "go test")
    assert signature(only_a_name).error == "--- FAIL: TestTotal (<n>s)"


def test_the_family_is_part_of_the_signature_and_the_digest_is_stable() -> None:
    a = signature(_failure("timed out", "make test"))
    b = signature(_failure("timed out", "mix test"))
    assert a != b
    assert a.digest == FailureSignature("make test", "timed out").digest
    assert len(a.digest) == 16 and a.digest != b.digest
