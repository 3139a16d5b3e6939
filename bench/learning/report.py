"""The bench's figures: one row per sequence and variant, then every recurrence."""

from __future__ import annotations

from collections import Counter
from typing import Any

from learning.run import VariantResult

VERDICTS = ("prevented", "shortened", "missed")


def summary(result: VariantResult) -> dict[str, Any]:
    """The figures of one sequence under one variant."""
    verdicts: Counter[str] = Counter(r.verdict for s in result.sessions for r in s.recurrences)
    deliveries = [d for s in result.sessions for d in s.replayed.deliveries]
    created = sum(
        ((s.postmortem or {}).get("published") or {}).get("created", 0) for s in result.sessions
    )
    return {
        "sequence": result.sequence,
        "tool_failures": result.with_failures,
        "sessions": len(result.sessions),
        "recurring": sum(verdicts.values()),
        **{verdict: verdicts.get(verdict, 0) for verdict in VERDICTS},
        "not_learnable": sum(len(s.not_learnable) for s in result.sessions),
        "lessons_created": created,
        "cards": len(deliveries),
        "card_bytes": sum(d.size for d in deliveries),
        "bytes_for_nothing": sum(s.nothing_bytes for s in result.sessions),
        "refunded": sum(s.replayed.refunds for s in result.sessions),
        "per_prompt": sum(len(s.per_prompt) for s in result.sessions),
    }


def details(result: VariantResult) -> list[dict[str, Any]]:
    """Every recurrence of one sequence under one variant."""
    rows = []
    for session in result.sessions:
        for recurrence in session.recurrences:
            lesson = recurrence.lesson
            rows.append(
                {
                    "sequence": result.sequence,
                    "tool_failures": result.with_failures,
                    "session": recurrence.session,
                    "family": recurrence.family,
                    "failures": recurrence.failures,
                    "first_failure": recurrence.first_failure,
                    "bound": recurrence.bound,
                    "card": f"{lesson[0]} r{lesson[1]}" if lesson else None,
                    "delivered_at": recurrence.delivered_at,
                    "verdict": recurrence.verdict,
                }
            )
    return rows


def to_json(results: list[VariantResult]) -> dict[str, Any]:
    """Everything, as one document (`--json`)."""
    return {
        "summary": [summary(r) for r in results],
        "recurrences": [row for r in results for row in details(r)],
        "deliveries": [
            {
                "sequence": r.sequence,
                "tool_failures": r.with_failures,
                "session": s.session.key,
                "call": d.call,
                "card": f"{d.lesson} r{d.revision}",
                "match": d.match,
                "bytes": d.size,
                "for_nothing": (d.lesson, d.revision) in s.nothing_cards,
                "agent": d.agent,
                "epoch": d.epoch,
            }
            for r in results
            for s in r.sessions
            for d in s.replayed.deliveries
        ],
        "problems": [p for r in results for p in r.problems],
    }


def _variant(with_failures: bool) -> str:
    return "with" if with_failures else "without"


def render(results: list[VariantResult], *, verbose: bool = False) -> str:
    """The figures as plain text (fixed columns, so they paste into a README)."""
    header = (
        f"{'sequence':15} {'tool_failures':13} {'sessions':>8} {'recurring':>9} "
        f"{'prevented':>9} {'shortened':>9} {'missed':>6} {'not yet':>7} {'lessons':>7} "
        f"{'cards':>5} {'card B':>7} {'for nothing B':>13} {'refunded':>8} {'per prompt':>10}"
    )
    lines = [header]
    totals: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
    for result in results:
        row = summary(result)
        totals[result.with_failures].update(
            {k: v for k, v in row.items() if isinstance(v, int) and not isinstance(v, bool)}
        )
        lines.append(_row(row["sequence"], result.with_failures, row))
    for with_failures in (True, False):
        total = totals[with_failures]
        if total:
            lines.append(_row("all", with_failures, dict(total)))
    lines.append("")
    for result in results:
        for row in details(result):
            card = f"{row['card']} at call {row['delivered_at']}" if row["card"] else "no card"
            lines.append(
                f"{row['sequence']:15} {_variant(row['tool_failures']):7} {row['session']:11} "
                f"{row['family']:18} failed {row['failures']}x from call {row['first_failure']}"
                f" (next/resolved at {row['bound']}): {card} -> {row['verdict']}"
            )
        for session in result.sessions:
            for family in session.per_prompt:
                lines.append(
                    f"{result.sequence:15} {_variant(result.with_failures):7} "
                    f"{session.session.key:11} {family:18} a snapshot per typed prompt could "
                    "reach it (an earlier session that failed on it ended before a prompt "
                    "typed before its first failure here)"
                )
    if verbose:
        lines.append("")
        for result in results:
            for session in result.sessions:
                for d in session.replayed.deliveries:
                    nothing = " (concerns nothing done after)" if (
                        d.lesson, d.revision) in session.nothing_cards else ""  # fmt: skip
                    lines.append(
                        f"{result.sequence:15} {_variant(result.with_failures):7} "
                        f"{session.session.key:11} call {d.call:>4}: {d.lesson} r{d.revision} "
                        f"({d.match}, {d.size} B){nothing}"
                    )
    problems = [p for r in results for p in r.problems]
    if problems:
        lines.append("")
        lines.extend(f"note: {p}" for p in problems)
    return "\n".join(lines)


def _row(name: str, with_failures: bool, row: dict[str, Any]) -> str:
    return (
        f"{name:15} {_variant(with_failures):13} {row.get('sessions', 0):>8} "
        f"{row.get('recurring', 0):>9} {row.get('prevented', 0):>9} "
        f"{row.get('shortened', 0):>9} {row.get('missed', 0):>6} {row.get('not_learnable', 0):>7} "
        f"{row.get('lessons_created', 0):>7} {row.get('cards', 0):>5} "
        f"{row.get('card_bytes', 0):>7} {row.get('bytes_for_nothing', 0):>13} "
        f"{row.get('refunded', 0):>8} {row.get('per_prompt', 0):>10}"
    )
