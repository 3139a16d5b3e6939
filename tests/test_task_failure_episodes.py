"""Tasks that show the cost (issue 25, item 3): repository discovery cites repeated tool
failures (SPEC §4 item 4) and sees each qualifying episode whole; graph discovery never
sees them."""

from __future__ import annotations

from typing import Any

from active_memory.runlog.record import RunRecord, parse_run_record
from active_memory.specialists.tasks import build_discovery

NAMESPACE = "repo:github.com/acme/shop"
IGNORED = "The following paths are ignored by one of your .gitignore files: priv/static/assets"


def failure(
    minute: int, family: str, error: str, command: str = "", **fields: Any
) -> dict[str, Any]:
    return {
        "node": "worker",
        "execution": "ex-1",
        "tool": "Bash",
        "at": f"2026-12-01T10:{minute:02d}:00Z",
        "family": family,
        "command": command or family,
        "error": error,
        **fields,
    }


def record(failures: list[dict[str, Any]], **extra: Any) -> RunRecord:
    return parse_run_record(
        {
            "schema": "active-memory/run@1",
            "run_id": "run-episodes",
            "outcome": "succeeded",
            "source": {"branch": "feature-7"},
            "repository": {"namespace": NAMESPACE},
            "tool_failures": failures,
            **extra,
        }
    )


def test_repository_discovery_cites_repeated_tool_failures_and_graph_discovery_does_not() -> None:
    run = record(
        [
            failure(1, "git add", IGNORED, "git add priv/static/assets/app.css"),
            failure(4, "git add", IGNORED, "git add priv/static/assets/app.css lib/a.ex"),
        ]
    )
    task = build_discovery("repository_discovery", run)
    (item,) = task.evidence
    assert item.kind == "tool_failures" and item.id.startswith("ev-tf-")
    assert item.family == "git add"
    assert build_discovery("graph_discovery", run).evidence == ()
