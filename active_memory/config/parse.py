"""A parsed runtime JSON validated into `RuntimeSettings`, every violation at once in one
`ConfigError` that names each JSON path, in our words rather than pydantic's
(`nodes.build.kind: "tool" is not allowed; allowed agent, git_delivery`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from active_memory.config.fields import show
from active_memory.config.models import RuntimeSettings
from active_memory.errors import ConfigError
from active_memory.validation import json_path

_REQUIRED_HINT = {
    "harness": "claude or codex",
    "provider": "claude: anthropic, openrouter; codex: openai, openrouter",
    "size": "tiny, small, standard, medium or large",
    "nodes": "an object binding each executable node",
    "model": "a model ID",
}


def _problem(error: Mapping[str, Any]) -> tuple[str, str]:
    """One pydantic error as (JSON path, message in our words)."""
    loc = list(error["loc"])
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    # A tagged union puts the tag between the node name and the field; JSON has no such level.
    if len(loc) > 3 and loc[0] == "nodes" and loc[2] in ("agent", "git_delivery"):
        del loc[2]
    if loc and loc[-1] == "[key]":  # a bad dict key: the path ends at the key itself
        del loc[-1]
    if kind == "union_tag_invalid":
        return json_path([*loc, "kind"]), (
            f"{show(ctx.get('tag'))} is not allowed; allowed agent, git_delivery"
        )
    if kind == "union_tag_not_found":
        return json_path([*loc, "kind"]), "missing; allowed agent, git_delivery"
    if kind == "missing":
        hint = _REQUIRED_HINT.get(str(loc[-1]))
        return json_path(loc), "missing; this field is required" + (f" ({hint})" if hint else "")
    if kind == "extra_forbidden" and loc[:1] == ["globalAgents"]:
        return json_path(loc), "not a built-in global agent; allowed postmortem"
    if kind == "literal_error":
        allowed = ", ".join(re.findall(r"'([^']*)'", str(ctx["expected"])))
        return json_path(loc), f"{show(value)} is not allowed; allowed {allowed}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return json_path(loc), f"{show(value)} is not a JSON object"
    if kind == "list_type":
        return json_path(loc), f"{show(value)} is not a JSON array"
    return json_path(loc), str(error["msg"])


def parse_runtime_settings(document: object) -> RuntimeSettings:
    """Validate a parsed runtime JSON; every violation at once, in one `ConfigError`."""
    if not isinstance(document, dict):
        raise ConfigError("$", f"{show(document)} is not a JSON object; the runtime JSON is one")
    try:
        return RuntimeSettings.model_validate(document)
    except ValidationError as exc:
        problems = [_problem(error) for error in exc.errors(include_url=False)]
    first_path, first_message = problems[0]
    rest = "".join(f"\n  {path}: {message}" for path, message in problems[1:])
    raise ConfigError(first_path, first_message + rest)
