"""The runtime config a harness session's postmortem runs with.

A harness session has no zeroshot runtime plan. The worker builds one (docs/queue.md):

- `harness`: the session's (`claude` or `codex`), as the importer recorded it; a Pi,
  Gemini CLI or Copilot CLI session takes the lane its `--config RUNTIME.json` names
  (`harness` claude or codex), with `--model` or that file's `nodes.worker.model`;
- `provider`: the one the session used when the transcript says so and it fits the
  harness, else the harness's first-party provider (claude → anthropic, codex → openai);
- `size`: `standard`;
- `nodes.worker`: an agent on the model the session used (`--model` overrides; the
  session-end payload's model is the fallback), declaring the provider's key and base-URL
  names, so the API lane reads them from the worker's environment;
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

DECLARED_ENV = {
    "anthropic": ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"],
    "openai": ["OPENAI_API_KEY", "OPENAI_BASE_URL"],
    "openrouter": ["OPENROUTER_API_KEY"],
}
SESSION_NODE = "worker"


def session_runtime(
    record: RunRecord,
    *,
    model: str | None = None,
    fallback_model: str = "",
    overrides: dict[str, Any] | None = None,
    active_memory: dict[str, Any] | None = None,
) -> RuntimeConfig:
    """The runtime config for the postmortem of an imported harness session.

    Raises `UsageError` when no model is known or the result is not a valid plan.
    """
    recorded = record.runtime or {}
    harness = str(recorded.get("harness") or "")
    node = (recorded.get("nodes") or {}).get(SESSION_NODE) or {}
    session_model = node.get("model") or fallback_model
    if harness not in PROVIDERS_BY_HARNESS:
        # Pi, Gemini CLI and Copilot CLI sessions have no postmortem lane of their own:
        # the worker's config names the lane (docs/harnesses.md, "Session end"), and the
        # session's own model (another vendor's) is no model for it.
        lane = str((overrides or {}).get("harness") or "")
        if lane not in PROVIDERS_BY_HARNESS:
            raise UsageError(
                f"run {record.run_id}: a {harness or '(unnamed)'} session has no postmortem "
                "lane of its own; run the worker with --config RUNTIME.json whose `harness` "
                "is claude or codex (and --model, or that file's nodes.worker.model)"
            )
        harness, session_model = lane, ""
    providers = PROVIDERS_BY_HARNESS[harness]
    provider = recorded.get("provider")
    if provider not in providers:
        provider = providers[0]
    chosen = model or session_model or _configured_model(overrides)
    if not chosen:
        raise UsageError(
            f"run {record.run_id}: the session names no model; pass --model to the worker"
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
        else:
            plan[key] = value
    if active_memory is not None:  # already layered over the config file's section
        plan["activeMemory"] = active_memory
    if model:  # the command line wins over a config file
        plan["nodes"][SESSION_NODE] = {**plan["nodes"][SESSION_NODE], "model": model}
    if record.graph is None or record.graph.ir is None:
        raise UsageError(f"run {record.run_id}: the imported record has no graph")
    return resolve_config(parse_runtime_settings(plan), record.graph.ir)


def _configured_model(overrides: dict[str, Any] | None) -> str:
    nodes = (overrides or {}).get("nodes")
    node = nodes.get(SESSION_NODE) if isinstance(nodes, dict) else None
    value = node.get("model") if isinstance(node, dict) else None
    return value if isinstance(value, str) else ""
