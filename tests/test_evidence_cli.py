"""`active-memory evidence RUN.json [--json]`, run in-process through `cli.main`."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_builder import FIXTURES

from active_memory.cli import main

RECORDED = FIXTURES / "runs/software-change-two-rejections.json"


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_json_output_is_the_spec_document() -> None:
    code, out, err = run_cli("evidence", str(RECORDED), "--json")
    assert code == 0 and err == ""
    document = json.loads(out)
    assert set(document) == {"evidence", "skipped"}
    kinds = [item["kind"] for item in document["evidence"]]
    assert kinds == ["rejected_rounds", "exploration"]
    rounds = document["evidence"][0]
    assert rounds["nodes"] == ["worker", "review_repair"] and rounds["count"] == 2
    assert rounds["loop"] == "review_loop" and rounds["map_item"] == []
    assert "loop" not in document["evidence"][1] and document["skipped"] == []


def test_the_table_names_each_item_and_its_rounds() -> None:
    code, out, _ = run_cli("evidence", str(RECORDED))
    assert code == 0
    assert "rejected_rounds" in out and "review_loop" in out and "ev-rr-" in out
    assert "round 2" in out and "review_repair" in out


def test_skips_are_listed_with_their_reasons(tmp_path: Path) -> None:
    data = json.loads(RECORDED.read_text())
    data["seeded"] = True
    path = tmp_path / "seeded.json"
    path.write_text(json.dumps(data))
    code, out, _ = run_cli("evidence", str(path))
    assert code == 0 and "1 skip" in out and "loop review_loop" in out and "seeded" in out
    code, out, _ = run_cli("evidence", str(path), "--json")
    assert json.loads(out)["skipped"] == [
        {
            "loop": "review_loop",
            "reason": "the run was replayed from checkpoint seeds (seeded: true)",
        }
    ]


def test_a_bad_file_exits_2_with_the_path_and_no_traceback(tmp_path: Path) -> None:
    data = json.loads(RECORDED.read_text())
    data["events"][2]["event"]["completion"]["outcome"]["status"] = "approved"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    code, out, err = run_cli("evidence", str(path), "--json")
    assert code == 2 and out == ""
    assert err == (
        f"active-memory: {path}: events[2].event.completion.outcome.status: "
        "expected one of verified, verifier, error\n"
    )


def test_a_missing_file_exits_2(tmp_path: Path) -> None:
    code, _, err = run_cli("evidence", str(tmp_path / "nope.json"))
    assert code == 2 and "no such run record" in err


# --- fuzzing: malformed files always give a clear error ---------------------------

VALID = json.loads(RECORDED.read_text())
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found.extend(_paths(inner, (*prefix, key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found.extend(_paths(inner, (*prefix, index)))
    return found


ALL_PATHS = _paths(VALID)[1:]


def _mutate(data: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    data = copy.deepcopy(data)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if action == "delete":
        del parent[last]
    else:
        parent[last] = value
    return data


def _check_cli_on(text: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.json"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        code, out, err = run_cli("evidence", str(path), "--json")
    assert "Traceback" not in err
    if code == 0:
        assert set(json.loads(out)) == {"evidence", "skipped"}
    else:
        assert code == 2 and out == ""
        assert err.startswith(f"active-memory: {path}") and err.count("\n") == 1


FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(
    st.lists(
        st.tuples(st.sampled_from(ALL_PATHS), st.sampled_from(["set", "delete"]), json_values),
        min_size=1,
        max_size=3,
    )
)
def test_structurally_fuzzed_records_give_a_clear_error_or_a_scan(
    mutations: list[tuple[tuple[Any, ...], str, Any]],
) -> None:
    data: Any = VALID
    for path, action, value in mutations:
        try:
            data = _mutate(data, path, action, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed that path
    _check_cli_on(json.dumps(data))


@FUZZ
@given(st.integers(0, len(json.dumps(VALID))), st.binary(max_size=6))
def test_textually_fuzzed_files_give_a_clear_error_or_a_scan(cut: int, noise: bytes) -> None:
    text = json.dumps(VALID, indent=1).encode()
    _check_cli_on(text[:cut] + noise + text[cut + len(noise) :])


@pytest.mark.parametrize(
    "text",
    ["", "null", "[]", '"run"', "{}", "[" * 5000, '{"schema": "active-memory/run@1"}'],
)
def test_degenerate_files_give_a_clear_error(text: str) -> None:
    _check_cli_on(text)
