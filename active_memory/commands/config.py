"""`active-memory config check CONFIG.json --graph GRAPH.json [--json]`.

Validates a runtime JSON (SPEC §2) against its authored graph and shows what it resolves
to: the scopes that recall and collect, the postmortem's source node and the lane the four
specialists inherit. Invalid input exits 2 with the JSON path of every violation.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from active_memory.commands.common import add_json_option, print_json

if TYPE_CHECKING:
    from active_memory.config import RuntimeConfig


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `config` command family."""
    parser = subcommands.add_parser("config", help="check a runtime JSON (docs/config.md)")
    actions = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="validate a runtime JSON against its graph and show the resolved settings",
        description="Validate a runtime JSON against its authored graph; print the resolved "
        "settings, the postmortem's source node and the specialists' lane.",
    )
    check.add_argument("config", metavar="CONFIG.json", type=Path, help="the runtime JSON")
    check.add_argument(
        "--graph",
        metavar="GRAPH.json",
        type=Path,
        required=True,
        help="the authored zeroshot graph the plan binds (a bare graph, or one under `graph`)",
    )
    add_json_option(check)
    check.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    """Validate and report; exceptions become exit 2 through the dispatcher."""
    from active_memory.config import load_runtime_config

    config = load_runtime_config(args.config, args.graph)
    report = check_report(config, str(args.config), str(args.graph))
    if args.json:
        print_json(report)
    else:
        print(render_text(report))
    return 0


def check_report(config: RuntimeConfig, config_file: str, graph_file: str) -> dict[str, Any]:
    """The `--json` document: the resolved settings, defaults filled in."""
    settings = config.settings
    return {
        "config": config_file,
        "graph": graph_file,
        "valid": True,
        "harness": settings.harness,
        "provider": settings.provider,
        "size": settings.size,
        "activeMemory": settings.active_memory.model_dump(
            mode="json", by_alias=True, exclude_none=True
        ),
        "globalAgents": settings.global_agents.model_dump(mode="json", by_alias=True),
        "enabled": settings.enabled,
        "postmortem_enabled": settings.postmortem_enabled,
        "scopes": {
            scope: {"recall": settings.recalls(scope), "collect": settings.collects(scope)}
            for scope in ("repository", "graph")
        },
        "lane": None if config.lane is None else config.lane.model_dump(mode="json"),
        "unknown_keys": settings.unknown_keys(),
    }


def _on(flag: object) -> str:
    return "on" if flag else "off"


def render_text(report: dict[str, Any]) -> str:
    """The human view of `check_report`."""
    memory, postmortem = report["activeMemory"], report["globalAgents"]["postmortem"]
    scopes = report["scopes"]
    lines = [
        f"{report['config']}: valid against {report['graph']}",
        f"  lane          harness {report['harness']}, provider {report['provider']}, "
        f"size {report['size']}",
        f"  activeMemory  {_on(report['enabled'])}; budgetBytes {memory['budgetBytes']}",
    ]
    for scope in ("repository", "graph"):
        lines.append(
            f"    {scope:<11} recall {_on(scopes[scope]['recall'])}, "
            f"collect {_on(scopes[scope]['collect'])}"
        )
    lines.append(
        f"  postmortem    {_on(report['postmortem_enabled'])}; timeoutMs {postmortem['timeoutMs']}"
    )
    lane = report["lane"]
    if lane is None:
        lines.append("  source node   none (the postmortem collects nothing)")
    else:
        how = {"named": "named by sourceNode", "first_step": "first agent-bound step"}.get(
            lane["chosen_by"], "first agent-bound verifier (no step has an agent binding)"
        )
        connections = ", ".join(
            f"{key}: {' '.join(names)}" for key, names in lane["connections"].items()
        )
        lines += [
            f"  source node   {lane['source_node']} ({lane['source_kind']}, {how})",
            f"  specialists   model {lane['model']}, "
            f"effort {lane['effort'] or 'provider default'}, {lane['harness']}/{lane['provider']}",
            f"                connections {connections or 'none'}; "
            f"env {' '.join(lane['env']) or 'none'}",
        ]
    if report["unknown_keys"]:
        lines.append("  kept unknown keys (check for typos): " + ", ".join(report["unknown_keys"]))
    return "\n".join(lines)
