"""The runtime config a harness session's postmortem runs with.

A harness session has no zeroshot runtime plan. The worker builds one (docs/queue.md):

- `harness`: the worker's lane's (`LaneTarget.harness`: `claude -p` runs plans of harness
  claude, `codex exec` of codex, the API lane's provider decides); for file lanes
  (replay, exchange) `--config RUNTIME.json`'s `harness`, else the session's (claude or
  codex);
- `provider`: the API lane's; else the one the session used when the transcript says so
  and it fits the harness, else the harness's first-party provider (claude → anthropic,
  codex → openai);
- `size`: `standard`;
- `nodes.worker`: an agent on `LaneTarget.model` (`--model`, `[worker] model`), else
  `--config`'s `nodes.worker.model`, else the model the session used (the session-end
  payload's model as the fallback), when the session ran the plan's harness; declaring
  the provider's key and base-URL names, so the API lane reads them from the lane's
  environment. A session of another harness with no model named raises `NoModel`;
- `activeMemory` from the settings module (`active_memory/settings.py`): `--config
  RUNTIME.json`'s section, then the repository's `.active-memory.toml`, then the user's
  settings file, then SPEC §2's defaults; so a repository that opted out of a scope is
  not collected from;
- `globalAgents` (and any of the above) from `--config RUNTIME.json` when given, else
  the defaults.
"""

from __future__ import annotations

from typing import Any

from active_memory.config import (
    PROVIDERS_BY_HARNESS,
    RuntimeConfig,
    parse_runtime_settings,
    resolve_config,
)
from active_memory.errors import UsageError
from active_memory.runlog.record import RunRecord
from active_memory.worker.lanes import LaneTarget

DECLARED_ENV = {
    "anthropic": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"],
    "openai": ["OPENAI_API_KEY", "OPENAI_BASE_URL"],
    "openrouter": ["OPENROUTER_API_KEY"],
}
SESSION_NODE = "worker"


class NoModel(UsageError):
    """The plan needs a model and none is named for this session (`reason` says what to set)."""


PROBE_MODEL = "no-model-named"
"""The model of a plan built only to learn whether a postmortem would ask a model."""


def session_runtime(
    record: RunRecord,
    *,
    target: LaneTarget | None = None,
    fallback_model: str = "",
    overrides: dict[str, Any] | None = None,
    active_memory: dict[str, Any] | None = None,
) -> RuntimeConfig:
    """The runtime config for the postmortem of an imported harness session.

    Raises `NoModel` when no model is known, `UsageError` when the plan is not valid.
    """
    target = target or LaneTarget()
    recorded = record.runtime or {}
    session = str(recorded.get("harness") or "")
    node = (recorded.get("nodes") or {}).get(SESSION_NODE) or {}
    harness = target.harness or str((overrides or {}).get("harness") or "") or session
    if harness not in PROVIDERS_BY_HARNESS:
        raise NoModel(
            f"run {record.run_id}: a {session or '(unnamed)'} session has no postmortem lane "
            "of its own; set [worker] lane (claude, codex or api) and model in your "
            "settings file, or run the worker with --lane and --model"
        )
    providers = PROVIDERS_BY_HARNESS[harness]
    provider = target.provider or recorded.get("provider")
    if provider not in providers:
        provider = providers[0]
    own = (node.get("model") or fallback_model) if session == harness else ""
    chosen = target.model or _configured_model(overrides) or own
    if not chosen:
        raise NoModel(
            f"run {record.run_id}: the {harness} lane needs a model for a {session} session; "
            "set [worker] model in your settings file (or pass --model)"
        )
    plan: dict[str, Any] = {
        "harness": harness,
        "provider": provider,
        "size": "standard",
        "nodes": {SESSION_NODE: {"kind": "agent", "model": chosen, "env": DECLARED_ENV[provider]}},
    }
    for key, value in (overrides or {}).items():
        if key == "nodes" and isinstance(value, dict):
            plan["nodes"] = {**plan["nodes"], **value}
        elif key not in ("harness", "provider") or target.harness is None:
            plan[key] = value
    if active_memory is not None:  # already layered over the config file's section
        plan["activeMemory"] = active_memory
    if target.model:  # the command line and the settings win over a config file
        plan["nodes"][SESSION_NODE] = {**plan["nodes"][SESSION_NODE], "model": target.model}
    if record.graph is None or record.graph.ir is None:
        raise UsageError(f"run {record.run_id}: the imported record has no graph")
    return resolve_config(parse_runtime_settings(plan), record.graph.ir)


def _configured_model(overrides: dict[str, Any] | None) -> str:
    nodes = (overrides or {}).get("nodes")
    node = nodes.get(SESSION_NODE) if isinstance(nodes, dict) else None
    value = node.get("model") if isinstance(node, dict) else None
    return value if isinstance(value, str) else ""
