"""Merge our PreToolUse hook into a `{"hooks": {"PreToolUse": [...]}}` settings file.

Claude Code's `settings.json` and Codex's `hooks.json` share this shape: event name →
list of matcher groups → list of hook handlers. We touch only handlers that are ours
(`is_ours`); everything else, including key order and the user's other groups, stays.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from active_memory.errors import InvalidRecord
from active_memory.hooks.installers.files import (
    FileChange,
    dump_json,
    json_indent,
    parse_json_object,
    read_text,
)

EVENT = "PreToolUse"

IsOurs = Callable[[Any], bool]


def plan_settings(
    path: Path, install: bool, handler: dict[str, Any], matcher: str | None, is_ours: IsOurs
) -> FileChange:
    """The change that installs `handler` into (or removes ours from) the file at `path`.

    Nothing to do leaves the text exactly as it is (no rewrite, no reformatting). A file
    that uninstalling empties entirely (`{}`: it held nothing but our hook) is removed.
    """
    before = read_text(path)
    settings = parse_json_object(path, before)
    if install:
        updated = install_hook(settings, handler, matcher, is_ours, path)
    else:
        updated = uninstall_hook(settings, is_ours, path)
    if updated == settings and (before is not None or not install):
        return FileChange(path, before, before)
    if not install and not updated:
        return FileChange(path, before, None)
    return FileChange(path, before, dump_json(updated, json_indent(before)))


def _groups(settings: dict[str, Any], path: Path, create: bool) -> list[Any] | None:
    """The PreToolUse group list (checked), created empty when `create`; None if absent."""
    hooks = settings.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = settings["hooks"] = {}
    if not isinstance(hooks, dict):
        raise InvalidRecord(str(path), "`hooks` must be a JSON object; nothing was changed")
    groups = hooks.get(EVENT)
    if groups is None:
        if not create:
            return None
        groups = hooks[EVENT] = []
    if not isinstance(groups, list):
        raise InvalidRecord(
            str(path), f"`hooks.{EVENT}` must be a list of matcher groups; nothing was changed"
        )
    for index, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
            raise InvalidRecord(
                str(path),
                f"`hooks.{EVENT}[{index}]` must be an object whose `hooks` is a list; "
                "nothing was changed",
            )
    return groups


def install_hook(
    settings: dict[str, Any],
    handler: dict[str, Any],
    matcher: str | None,
    is_ours: IsOurs,
    path: Path,
) -> dict[str, Any]:
    """`settings` with exactly one handler of ours, equal to `handler`.

    An existing handler of ours is updated where it stands (duplicates are dropped); a
    group holding only our handler gets `matcher`. With none of ours, a new group
    `{"matcher", "hooks": [handler]}` goes at the end of the list.
    """
    result = copy.deepcopy(settings)
    groups = _groups(result, path, create=True)
    assert groups is not None
    placed = False
    kept_groups: list[Any] = []
    for group in groups:
        handlers: list[Any] = group.get("hooks", [])
        if not any(is_ours(item) for item in handlers):
            kept_groups.append(group)
            continue
        placed_here = False
        kept: list[Any] = []
        for item in handlers:
            if not is_ours(item):
                kept.append(item)
            elif not placed:
                kept.append(copy.deepcopy(handler))
                placed = placed_here = True
        if not kept:
            continue  # held only a duplicate of ours
        group["hooks"] = kept
        if placed_here and len(kept) == 1:
            _set_matcher(group, matcher)
        kept_groups.append(group)
    groups[:] = kept_groups
    if not placed:
        new_group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        new_group["hooks"] = [copy.deepcopy(handler)]
        groups.append(new_group)
    return result


def _set_matcher(group: dict[str, Any], matcher: str | None) -> None:
    if matcher is None:
        group.pop("matcher", None)
    else:
        group["matcher"] = matcher


def uninstall_hook(settings: dict[str, Any], is_ours: IsOurs, path: Path) -> dict[str, Any]:
    """`settings` without our handlers; groups, the event list and `hooks` that only
    held ours go too. Everything else is left as it was."""
    result = copy.deepcopy(settings)
    groups = _groups(result, path, create=False)
    if groups is None:
        return result
    remaining: list[Any] = []
    removed = False
    for group in groups:
        handlers = group.get("hooks", [])
        kept = [item for item in handlers if not is_ours(item)]
        if len(kept) == len(handlers):
            remaining.append(group)
            continue
        removed = True
        if kept:
            group["hooks"] = kept
            remaining.append(group)
    if not removed:
        return result
    hooks: dict[str, Any] = result["hooks"]
    if remaining:
        hooks[EVENT] = remaining
    else:
        del hooks[EVENT]
        if not hooks:
            del result["hooks"]
    return result
