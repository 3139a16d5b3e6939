"""The checks keep firing on the postmortem's fast path (issue 14 item 4).

At 10,000 adapted lessons the postmortem screens only what an answer changed, skips
texts too short to hold a secret, caches the screen of short texts, gates rules by the
text they must contain, stops the generic-advice rule at the first anchor, and freezes
each batch's results out of the cycle collector's reach. None of that may let a card
through that the plain checks refuse.
"""

from __future__ import annotations

import gc
import json
import re
from pathlib import Path
from typing import Any

import pytest
from orchestrator_support import FakeSessions, config, repo_lessons, run_record, seed, supplied

from active_memory import credentials as secrets
from active_memory.lessons import Lesson
from active_memory.orchestrator import run_postmortem
from active_memory.specialists.providers.base import Request
from active_memory.store.sqlite import SqliteStore

CORPUS = json.loads(
    (Path(__file__).parent / "fixtures" / "secrets" / "corpus.json").read_text(encoding="utf-8")
)
SECRETS: list[str] = [entry["text"] for entry in CORPUS["secrets"]]
LOOKALIKES: list[str] = CORPUS["lookalikes"]

TOKEN = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
GENERIC = "Be careful and make sure to test everything."


def card(lesson_id: str, recommendation: str | None = None) -> dict[str, Any]:
    return {
        "title": f"Regenerate the api client after schema edits ({lesson_id})",
        "recommendation": recommendation
        or f"After editing `api/schema.json` run `make api-client` ({lesson_id}).",
        "associations": {"folders": ["api"]},
    }


@pytest.mark.asyncio
async def test_a_credential_and_generic_advice_among_10000_adaptations_are_refused(
    tmp_path: Path,
) -> None:
    count = 10_000
    store = await SqliteStore.open(tmp_path / "lessons.sqlite3")
    try:
        await seed(store, repo_lessons(count))
        record = run_record(tmp_path, [f"L-{n}" for n in range(1, count + 1)])
        failures: list[list[str]] = []

        async def answer(request: Request) -> Any:
            assert isinstance(request.input, dict)
            if "failures" in request.input:
                failures.append([str(x) for x in request.input["failures"]])  # type: ignore[union-attr]
            lessons = supplied(request)
            ids = [x["id"] for x in lessons]
            bad = ids.index("L-4321") if "L-4321" in ids else None
            generic = None if bad is None else (bad + 1 if bad + 1 < len(ids) else bad - 1)
            found = []
            for position, x in enumerate(lessons):
                text = None
                if position == bad:
                    text = f"Export GITHUB_TOKEN={TOKEN} before `make api-client`."
                elif position == generic:
                    text = GENERIC
                found.append(
                    {
                        "id": x["id"],
                        "revision": x["revision"],
                        "action": "adapt",
                        "lesson": card(x["id"], text),
                    }
                )
            return {"decisions": found}

        assert gc.get_freeze_count() == 0
        sessions = FakeSessions({"repository_maintenance": answer})
        report = await run_postmortem(
            record, config(timeout_ms=600_000), store, sessions=sessions, journal_dir=tmp_path
        )
        assert gc.get_freeze_count() == 0  # everything frozen during it was thawed
        entry = report.specialists["repository_maintenance"]
        assert entry.status == "failed"
        assert "(after one repair turn)" in (entry.reason or "")
        # The batch holding L-4321 was asked once more, with exactly its two failures.
        assert len(failures) == 1 and len(failures[0]) == 2, failures
        credential, advice = sorted(failures[0], key=lambda f: "generic advice" in f)
        assert "contains a credential (github-token)" in credential
        assert "[REDACTED:" in credential and TOKEN not in credential
        assert ".lesson.recommendation: generic-advice" in advice
        # The token reaches no report.
        assert TOKEN not in str(report.to_json())
        # Nothing of the specialist is published: every lesson keeps revision 1.
        assert report.published.adapted == 0
        for lesson_id in ("L-1", "L-4321", "L-9999"):
            stored = await store.get(lesson_id)
            assert isinstance(stored, Lesson) and stored.revision == 1
    finally:
        await store.aclose()


# --- the screen's shortcuts never change a finding --------------------------------------


def _reference(text: str, monkeypatch: pytest.MonkeyPatch) -> list[secrets.Match]:
    """`find_secrets` with every shortcut off: every rule scanned, no cache, no gate."""
    with monkeypatch.context() as patched:
        patched.setattr(
            secrets, "_PREFIXED", tuple((k, p, g, (), None) for k, p, g, _, _ in secrets._PREFIXED)
        )
        patched.setattr(secrets, "_ASSIGNMENT_KEY", re.compile(""))
        return secrets._scan(text)


AROUND = [
    "{}",
    "Set it with `export TOKEN={}` before `make deploy`.",
    "password: {} (do not commit)",
    "url https://deploy:{}@example.com/x then run `make`",
    "x" * 1500 + " {}",  # longer than the cached texts
]


# Letters a case-insensitive rule folds that `str.lower` does not (the long s, U+017F).
FOLDED = [
    "AW\u017f_SECRET_KEY = 'abcdefghijABCDEFGHIJ0123456789abcdefghij'",
    "aws key: 'abcdefghijABCDEFGHIJ0123456789abcdefghij'",
    "XOX" + "b-1234-5678-abcdef",
]


@pytest.mark.parametrize("text", SECRETS + LOOKALIKES + FOLDED)
def test_the_gates_and_the_cache_find_what_a_full_scan_finds(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for frame in AROUND:
        framed = frame.format(text)
        expected = _reference(framed, monkeypatch)
        assert secrets.find_secrets(framed) == expected
        assert secrets.find_secrets(framed) == expected  # again: from the cache


def test_a_text_shorter_than_every_rule_is_not_scanned_and_nothing_shorter_matches() -> None:
    assert secrets.SHORTEST_SECRET_CHARS >= 1
    shortest = min(len(text) for text in SECRETS)
    assert shortest >= secrets.SHORTEST_SECRET_CHARS
    assert secrets.find_secrets("pwd=") == []


def test_only_clean_texts_are_remembered_and_a_secret_is_found_every_time() -> None:
    text = f"token {TOKEN}"
    first = secrets.find_secrets(text)
    first.clear()
    assert secrets.find_secrets(text) != []
    assert text not in secrets._CLEAN  # no secret outlives the screen in the cache
    clean = "Run `make api-client` after editing the schema (cache test)."
    assert secrets.find_secrets(clean) == []
    assert clean in secrets._CLEAN
    assert secrets.find_secrets(clean) == []


def test_the_clean_cache_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_CLEAN", {})
    for n in range(secrets._CLEAN_MAX + 50):
        assert secrets.find_secrets(f"plain words number {n}") == []
    assert len(secrets._CLEAN) == secrets._CLEAN_MAX
    assert "plain words number 0" not in secrets._CLEAN  # the oldest went first


@pytest.mark.parametrize(
    ("pattern", "prefixes"),
    [
        (r"\bglpat-[A-Za-z0-9]{20,}", ("glpat-",)),
        (r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", ("AKIA", "ASIA")),
        (r"(ghp|gho)_[A-Za-z0-9_]{36}", ("ghp", "gho")),
        (r"(?:ab|cd)?x", ()),  # the group may be absent
        (r"(?:ab|cd)*x", ()),
        (r"(?:ab|cd)x|zz", ()),  # a match may start with zz
        (r"(?:a\.b|c)x", ()),  # not plain literals
        (r"(?:ab|)x", ()),  # an empty alternative
        (r"(?=ab)x", ()),
        (r"[MNO][a-z]{23}", ()),
    ],
)
def test_a_rule_is_gated_only_by_text_every_match_starts_with(
    pattern: str, prefixes: tuple[str, ...]
) -> None:
    assert secrets.literal_prefixes(re.compile(pattern)) == prefixes
