"""SPEC §2 `budgetBytes`: the bytes of cards, framing included, that one provider session
may receive. The one definition of its bounds, its default, its parsing and what is left.

Every reader goes through here: the runtime JSON (`config`), the settings files and the
orchestrator's `ACTIVE_MEMORY_BUDGET_BYTES` (`settings`), `recall --budget-bytes` and
`instructions --budget-bytes`. Recall, the hook's quick answer and `instructions` compute
what is left with `budget_left`. Standard library only, nothing imported: it is on the
hook's per-call path.
"""

from __future__ import annotations

MIN_BUDGET_BYTES = 1
MAX_BUDGET_BYTES = 16384
DEFAULT_BUDGET_BYTES = 2048
ALLOWED = f"an integer {MIN_BUDGET_BYTES}..{MAX_BUDGET_BYTES}"
"""What a budget may be, as an error message says it."""

BUDGET_ENV = "ACTIVE_MEMORY_BUDGET_BYTES"
"""How an orchestrator hands a run's budget to its agents' hooks (docs/settings.md)."""


def budget_problem(value: object) -> str | None:
    """None when `value` is a budget; else what is wrong with it, ending in what is
    allowed. Strict: `true`, `2048.5` and `"2048"` are refused, never coerced."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{_shown(value)} is not an integer; allowed {MIN_BUDGET_BYTES}..{MAX_BUDGET_BYTES}"
    if not MIN_BUDGET_BYTES <= value <= MAX_BUDGET_BYTES:
        return f"{value} is out of range; allowed {MIN_BUDGET_BYTES}..{MAX_BUDGET_BYTES}"
    return None


def budget_from_text(text: str | None) -> int | None:
    """A budget written as text (an environment variable, a command-line value): the
    number, or None when it is absent or not a budget (the caller decides what that
    means: the settings ignore a bad variable, a command refuses a bad option)."""
    if not text:
        return None
    try:
        number = int(text.strip(), 10)
    except ValueError:
        return None
    return number if budget_problem(number) is None else None


def budget_left(budget: int, spent: int) -> int:
    """What a session may still receive: its budget less the bytes already delivered,
    never below zero (a budget lowered mid-session leaves nothing, not a debt)."""
    return max(0, budget - spent)


def _shown(value: object) -> str:
    """The value as the user wrote it in JSON or TOML, shortened for a one-line error."""
    import json  # only on the error path: a valid budget never needs it

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
