"""IDs in natural order (natural_order.py): `L-2` before `L-10`."""

from __future__ import annotations

from active_memory.natural_order import natural_key


def test_numbers_in_ids_sort_by_value_not_by_text() -> None:
    ids = ["L-10", "L-2", "L-1", "L-101", "L-9", "L-19", "L-100"]
    assert sorted(ids, key=natural_key) == ["L-1", "L-2", "L-9", "L-10", "L-19", "L-100",
                                            "L-101"]  # fmt: skip


def test_other_ids_keep_a_total_order() -> None:
    ids = ["X", "L-02", "graph:1", "L-", "12", "a1b10", "a1b2", "L-2", "imported.7"]
    assert sorted(ids, key=natural_key) == ["12", "L-", "L-02", "L-2", "X", "a1b2", "a1b10",
                                            "graph:1", "imported.7"]  # fmt: skip
    assert natural_key("L-02") != natural_key("L-2")  # distinct IDs never tie
