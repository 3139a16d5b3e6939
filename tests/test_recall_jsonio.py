"""The hook's JSON reader and writer agree with the `json` package."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from active_memory.recall import jsonio

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(values)
def test_dumps_reads_back_with_json_and_loads_reads_json(value: Any) -> None:
    assert json.loads(jsonio.dumps(value)) == value
    assert jsonio.loads(json.dumps(value)) == value
    assert jsonio.loads(json.dumps(value, indent=2, ensure_ascii=False)) == value


def test_floats_are_read() -> None:
    assert jsonio.loads('{"x": 1.5e3}') == {"x": 1500.0}


@pytest.mark.parametrize("text", ["", "{", "{} x", "NaN", "[1,]", "'a'", '"\\ud800'])
def test_malformed_json_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        jsonio.loads(text)
