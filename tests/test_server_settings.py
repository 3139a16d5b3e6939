"""`active-memory serve` honours the settings files on every call (docs/settings.md):
`enabled`, `repository`, `budgetBytes` and `exclude`, read per call from the checkout's
`.active-memory.toml` (a change applies to the next call, no restart)."""

from __future__ import annotations

from test_server import Running, read_call, running

from active_memory.recall.records import read_receipts

__all__ = ["running"]  # the fixture


def _receipts(running: Running, session: str) -> list[dict[str, object]]:
    recall = running.env["ZEROSHOT_STATE_DIR"] + "/active-memory/recall"
    return read_receipts(recall, f"session:{session}")


def test_the_control_call_gets_its_card(running: Running) -> None:
    status, answer = running.post(read_call(running.checkout, "s-0"))
    assert status == 200 and "hookSpecificOutput" in answer
    assert [r["paths"] for r in _receipts(running, "s-0")] == [["api/schema.json"]]


def test_enabled_false_gives_nothing_and_records_nothing(running: Running) -> None:
    (running.checkout / ".active-memory.toml").write_text("enabled = false\n")
    assert running.post(read_call(running.checkout, "s-1")) == (200, {})
    assert _receipts(running, "s-1") == []


def test_repository_false_gives_nothing(running: Running) -> None:
    (running.checkout / ".active-memory.toml").write_text("repository = false\n")
    assert running.post(read_call(running.checkout, "s-2")) == (200, {})


def test_a_budget_too_small_for_any_card_gives_nothing_but_keeps_the_receipt(
    running: Running,
) -> None:
    (running.checkout / ".active-memory.toml").write_text("budgetBytes = 1\n")
    assert running.post(read_call(running.checkout, "s-3")) == (200, {})
    assert [r["paths"] for r in _receipts(running, "s-3")] == [["api/schema.json"]]


def test_an_excluded_path_gives_no_card_and_no_receipt(running: Running) -> None:
    (running.checkout / ".active-memory.toml").write_text('exclude = ["api/"]\n')
    assert running.post(read_call(running.checkout, "s-4")) == (200, {})
    assert _receipts(running, "s-4") == []
