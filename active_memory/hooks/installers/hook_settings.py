"""Merge our hooks into a `{"hooks": {"PreToolUse": [...], "SessionEnd": [...]}}` file.

Claude Code's `settings.json` and Codex's `hooks.json` share this shape: event name →
list of matcher groups → list of hook handlers. We touch only handlers that are ours
(`is_ours`, per event); everything else, including key order, the position of the
user's other groups and handlers, stays. A new group of ours goes at the end of its
event's list, so no other handler moves (Codex keys its hook trust by position).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class HookEntry:
    """One hook of ours: its event, handler, matcher (None: none) and how to know it."""

    event: str
    handler: dict[str, Any]
    matcher: str | None
    is_ours: IsOurs


def plan_settings(
    path: Path, install: bool, handler: dict[str, Any], matcher: str | None, is_ours: IsOurs
) -> FileChange:
    """The change that installs `handler` as our PreToolUse hook (or removes ours)."""
    return plan_entries(path, install, [HookEntry(EVENT, handler, matcher, is_ours)])


def plan_entries(path: Path, install: bool, entries: Sequence[HookEntry]) -> FileChange:
    """The change that installs every entry into (or removes each from) the file at `path`.

    Nothing to do leaves the text exactly as it is (no rewrite, no reformatting). A file
    that uninstalling empties entirely (`{}`: it held nothing but our hooks) is removed.
    """
    before = read_text(path)
    settings = parse_json_object(path, before)
    updated = settings
    for entry in entries:
        if install:
            updated = install_hook(
                updated, entry.handler, entry.matcher, entry.is_ours, path, entry.event
            )
        else:
            updated = uninstall_hook(updated, entry.is_ours, path, entry.event)
    if updated == settings and (before is not None or not install):
        return FileChange(path, before, before)
    if not install and not updated:
        return FileChange(path, before, None)
    return FileChange(path, before, dump_json(updated, json_indent(before)))


def _groups(
    settings: dict[str, Any], path: Path, create: bool, event: str = EVENT
) -> list[Any] | None:
    """The PreToolUse group list (checked), created empty when `create`; None if absent."""
    hooks = settings.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = settings["hooks"] = {}
    if not isinstance(hooks, dict):
        raise InvalidRecord(str(path), "`hooks` must be a JSON object; nothing was changed")
    groups = hooks.get(event)
    if groups is None:
        if not create:
            return None
        groups = hooks[event] = []
    if not isinstance(groups, list):
        raise InvalidRecord(
            str(path), f"`hooks.{event}` must be a list of matcher groups; nothing was changed"
        )
    for index, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
            raise InvalidRecord(
                str(path),
                f"`hooks.{event}[{index}]` must be an object whose `hooks` is a list; "
                "nothing was changed",
            )
    return groups


def install_hook(
    settings: dict[str, Any],
    handler: dict[str, Any],
    matcher: str | None,
    is_ours: IsOurs,
    path: Path,
    event: str = EVENT,
) -> dict[str, Any]:
    """`settings` with exactly one handler of ours for `event`, equal to `handler`.

    An existing handler of ours is updated where it stands (duplicates are dropped); a
    group holding only our handler gets `matcher`. With none of ours, a new group
    `{"matcher", "hooks": [handler]}` goes at the end of the list.
    """
    result = copy.deepcopy(settings)
    groups = _groups(result, path, create=True, event=event)
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


def uninstall_hook(
    settings: dict[str, Any], is_ours: IsOurs, path: Path, event: str = EVENT
) -> dict[str, Any]:
    """`settings` without our handlers of `event`; groups, the event list and `hooks`
    that only held ours go too. Everything else is left as it was."""
    result = copy.deepcopy(settings)
    groups = _groups(result, path, create=False, event=event)
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
        hooks[event] = remaining
    else:
        del hooks[event]
        if not hooks:
            del result["hooks"]
    return result
