"""The one rule of where a cited text is now (`cited_text`), and how a changed one is
compared with the lines that best match it (`checkout/regions.py`): pure functions."""

from __future__ import annotations

import hashlib

import pytest

from active_memory.checkout.regions import best_region, recorded_diff, split_lines
from active_memory.cited_text import (
    CHANGED,
    GONE,
    MOVED,
    NO_TEXT,
    SAME,
    SEARCH_BYTES,
    SEVERAL,
    latest,
    locate,
    places,
)
from active_memory.lessons import Citation, Evidence

FILE = b"".join(f"line {n}\n".encode() for n in range(1, 11))


def _sha(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


def test_a_text_at_its_place_is_the_same_and_a_moved_one_is_found_by_its_fingerprint() -> None:
    cited = _sha(b"line 4\nline 5\n")
    assert locate(FILE, 4, 5, cited) == (SAME, 4, 5)
    moved = b"new\nnew 2\n" + FILE
    assert locate(moved, 4, 5, cited) == (MOVED, 6, 7)
    shorter = FILE.replace(b"line 1\nline 2\nline 3\n", b"")
    assert locate(shorter, 4, 5, cited) == (MOVED, 1, 2)
    # Line endings are part of the text: a CRLF conversion is a change.
    assert locate(FILE.replace(b"\n", b"\r\n"), 4, 5, cited)[0] == CHANGED


def test_a_text_in_several_places_is_not_repinned_unless_its_old_place_is_one() -> None:
    cited = _sha(b"line 4\n")
    twice = FILE.replace(b"line 4\n", b"line four\n") + b"line 4\nx\nline 4\n"
    assert locate(twice, 4, 4, cited) == (SEVERAL, 4, 4)
    assert places(twice, 4, 4, cited) == [11, 13]  # nearest to the old place first
    assert locate(FILE + b"line 4\n", 4, 4, cited) == (SAME, 4, 4)  # the nearest: itself


def test_a_changed_or_gone_text_and_a_whole_file() -> None:
    cited = _sha(b"line 9\nline 10\n")
    assert locate(FILE.replace(b"line 9\n", b"line nine\n"), 9, 10, cited) == (CHANGED, 9, 10)
    assert locate(FILE[: FILE.index(b"line 9")], 9, 10, cited) == (GONE, 9, 10)
    assert locate(FILE, 0, 0, _sha(FILE)) == (SAME, 0, 0)
    assert locate(FILE + b"\n", 0, 0, _sha(FILE)) == (CHANGED, 0, 0)


def test_the_search_is_bounded_past_which_only_the_recorded_place_counts() -> None:
    rule = b"".join(f"rule {n}\n".encode() for n in range(17))
    filler = b"x" * 1023 + b"\n"
    text = filler * 2048 + rule  # 2 MiB, then the 17 cited lines
    first, last = 2049, 2065
    cited = _sha(rule)
    assert locate(text, first, last, cited) == (SAME, first, last)
    moved = b"pad\n" + text
    assert 17 * len(moved) > SEARCH_BYTES  # too much to hash: not searched
    assert locate(moved, first, last, cited)[0] == CHANGED
    assert locate(b"pad\n" + filler * 16 + rule, 17, 33, cited) == (MOVED, 18, 34)


def test_latest_counts_each_range_by_its_latest_fingerprint_and_drops_no_text() -> None:
    a, b = _sha(b"a\n"), _sha(b"b\n")
    cited = [("x.py", 1, 1, a), ("x.py", 3, 4, b), ("x.py", 1, 1, NO_TEXT), ("x.py", 7, 7, a)]
    assert latest(cited) == [("x.py", 3, 4, b), ("x.py", 7, 7, a)]
    assert latest([("x.py", 1, 1, a), ("x.py", 1, 1, b)]) == [("x.py", 1, 1, b)]
    # The same rule for a lesson's citations (`Evidence.counted_citations`), where a
    # re-citation without a fingerprint replaces nothing.
    evidence = Evidence(
        citations=[
            Citation(path="x.py", lines=(1, 1), sha256=a),
            Citation(path="x.py", lines=(1, 1)),
            Citation(path="x.py", lines=(3, 4), sha256=b),
            Citation(path="x.py", lines=(3, 4), sha256=NO_TEXT),
            Citation(path="y.py"),
        ]
    )
    assert [(c.path, c.lines, c.sha256) for c in evidence.counted_citations()] == [
        ("x.py", (1, 1), a), ("y.py", None, None)
    ]  # fmt: skip


RULE = ["def allowed(calls, limit):", "    if calls > limit:", "        return False",
        "    return True"]  # fmt: skip


def test_the_best_region_is_found_by_content_and_widened_to_edited_lines() -> None:
    above = [f"import m{n}" for n in range(6)]
    edited = [RULE[0], "    if calls >= limit:", RULE[2], RULE[3]]
    assert best_region(RULE, [*above, *edited, "", "x = 1"], near=1) == (7, 10)
    # A first line edited: the region still starts there.
    first = ["def allowed(calls, limit, burst):", *RULE[1:]]
    assert best_region(RULE, [*above, *first], near=1) == (7, 10)
    # A line inserted inside the rule stays inside the region.
    inner = [RULE[0], "    log(calls)", *RULE[1:]]
    assert best_region(RULE, [*above, *inner], near=1) == (7, 11)


def test_a_removed_text_has_no_region_and_common_lines_do_not_place_it() -> None:
    now = ["def window():", "    return 60", *(["    return True"] * 40), "x = 1"]
    assert best_region(RULE, now, near=1) is None
    # Half the words of a line, near its old place: an edit in place.
    assert best_region(["timeout = 30"], ["# settings", "timeout = 5"], near=2) == (2, 2)
    # A close line far from the recorded place says nothing (a truncated file).
    assert best_region(["line 7"], ["line 1", "line 2"], near=7) is None


@pytest.mark.parametrize(
    ("now", "first", "hunk"),
    [(["a", "B", "c"], 12, "@@ -10,3 +12,3 @@"), ([], 0, "@@ -10,3 +0,0 @@")],
)
def test_a_diff_is_numbered_as_the_file_numbers_its_lines(
    now: list[str], first: int, hunk: str
) -> None:
    diff, cut = recorded_diff(["a", "b", "c"], now, 10, first)
    assert diff[:3] == ["--- recorded", "+++ now", hunk] and not cut


def test_lines_split_as_the_fingerprint_splits_bytes() -> None:
    text = "a\r\nb\rc\x0cd\n"
    assert split_lines(text) == [line.decode() for line in text.encode().splitlines()]
