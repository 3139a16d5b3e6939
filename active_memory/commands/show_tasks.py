"""`postmortem --show-tasks DIR`'s output: the files written, the specialists not asked,
and whether a model can answer in the time `timeoutMs` gives (orchestrator/time_estimate.py).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from active_memory.commands.common import print_json

if TYPE_CHECKING:
    from active_memory.config import RuntimeConfig
    from active_memory.orchestrator import PostmortemReport
    from active_memory.orchestrator.preview import CaptureSessions
    from active_memory.orchestrator.time_estimate import SpecialistTime


def shown(
    args: argparse.Namespace,
    report: PostmortemReport,
    capture: CaptureSessions,
    config: RuntimeConfig,
) -> int:
    """Write the captured questions and say where they are, and how long they take."""
    from active_memory.orchestrator import PostmortemLimits
    from active_memory.orchestrator.preview import write_tasks
    from active_memory.orchestrator.time_estimate import Asked, estimate, rates

    written = write_tasks(args.show_tasks, capture.captured)
    asked = {c.specialist for c in capture.captured}
    not_asked = {
        name: entry.reason or entry.status
        for name, entry in report.specialists.items()
        if name not in asked
    }
    timeout = config.settings.timeout_seconds
    effort = config.lane.effort if config.lane is not None else None
    times = estimate(
        [Asked(c.specialist, len(c.prompt) + len(c.system), c.input) for c in capture.captured],
        effort=effort,
        timeout_seconds=timeout,
        concurrency=PostmortemLimits().batch_concurrency,
    )
    if args.json:
        print_json(
            {
                "run_id": report.run_id,
                "directory": str(args.show_tasks),
                "written": [str(p) for p in written],
                "not_asked": not_asked,
                "estimate": {
                    **rates(),
                    "effort": effort,
                    "timeout_ms": round(timeout * 1000),
                    "fits": all(t.fits for t in times),
                    "specialists": {t.specialist: t.to_json() for t in times},
                },
            }
        )
        return 0
    print(f"{len(written)} file(s) written to {args.show_tasks} (no model was called):")
    for path in written:
        print(f"  {path.name}  {path.stat().st_size} bytes")
    for name, why in not_asked.items():
        print(f"  {name}: not asked ({why})")
    _print_estimate(times, effort, timeout)
    return 0


def _print_estimate(times: list[SpecialistTime], effort: str | None, timeout: float) -> None:
    from active_memory.orchestrator.time_estimate import (
        READ_TOKENS_PER_SECOND,
        WRITE_TOKENS_PER_SECOND,
    )

    print(
        f"Time a model needs (effort {effort or 'default'}; prompts read at "
        f"{READ_TOKENS_PER_SECOND} tokens/s, reasoning and answers written at "
        f"{WRITE_TOKENS_PER_SECOND} tokens/s; each ask with its one repair turn), "
        f"against timeoutMs {round(timeout * 1000)} ({timeout:g} s):"
    )
    for t in times:
        verdict = "fits" if t.fits else "DOES NOT FIT"
        print(
            f"  {t.specialist}: {t.asks} ask(s), {t.prompt_tokens} prompt tokens, "
            f"{t.answer_tokens} answer and {t.reasoning_tokens} reasoning tokens, "
            f"{t.repair_turns} repair turn(s): about {t.seconds:.0f} s, {verdict}"
        )
    short = [t for t in times if not t.fits]
    if short:
        need = max(t.seconds for t in short)
        print(
            f"warning: {', '.join(t.specialist for t in short)} may not finish within "
            f"timeoutMs {round(timeout * 1000)}; set globalAgents.postmortem.timeoutMs to "
            f"{min(600_000, 1000 * int(need + 1))} or more (at most 600000), or lower the "
            "source node's effort"
        )
