"""Codex hook trust: the `[hooks.state]` entries that let Codex run a hook, kept true.

Codex (0.171) runs a user or project hook only when `$CODEX_HOME/config.toml` holds
`[hooks.state."<hooks.json path>:<event label>:<group>:<handler>"]` with a `trusted_hash`
equal to the hook's current hash; an untrusted or modified hook is skipped without a word
(`codex exec` prints nothing). Facts read from Codex's sources
(`codex-rs/hooks/src/engine/discovery.rs`, `codex-rs/config/src/fingerprint.rs`) and
checked against the 0.171 binary (its app-server `hooks/list` reports the same hashes,
and tests/test_real_harness_hooks.py runs the hook through a real `codex exec`):

- the key is the absolute path of the hooks file, the event's snake_case label, and the
  group's and handler's positions in that event's list;
- the hash is `sha256:` + hex SHA-256 of the compact, key-sorted JSON of the hook's
  normalized identity: `{"event_name": label, "matcher"?: …, "hooks": [{"type":
  "command", "command", "timeout", "async", "statusMessage"?}]}`, where `timeout` is
  always present (default 600, at least 1; SessionEnd: default 1, clamped to 1..3), the
  matcher is dropped for UserPromptSubmit and Stop, and unset optional fields are left out;
- a project's `.codex/` is read at all only when the project is trusted
  (`[projects."<root>"] trust_level = "trusted"`).

Because the key holds positions, removing or adding a handler can move other handlers;
`plan_trust` carries every moved handler's state entry to its new key, so installing or
uninstalling ours never turns the user's other hooks untrusted.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from active_memory.errors import InvalidRecord
from active_memory.hooks.installers.files import FileChange, read_text

LABELS: dict[str, str] = {
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "UserPromptSubmit": "user_prompt_submit",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "Stop": "stop",
}
_NO_MATCHER = frozenset({"UserPromptSubmit", "Stop"})

IsOursAt = Callable[[str, Any], bool]
"""(event, handler) → True for a handler of ours."""

Position = tuple[str, int, int, Any]
"""(event, group index, handler index, handler)."""


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """`$CODEX_HOME/config.toml` (default `~/.codex/config.toml`): where trust lives."""
    environment = os.environ if env is None else env
    if environment.get("CODEX_HOME"):
        return Path(environment["CODEX_HOME"]) / "config.toml"
    home = environment.get("HOME") or str(Path.home())
    return Path(home) / ".codex" / "config.toml"


def hook_key(source: Path | str, event: str, group: int, handler: int) -> str:
    """The `[hooks.state]` key of one handler of the hooks file `source` (its absolute
    path; for a plugin's hooks, `<plugin>@<marketplace>:<path in the plugin>`)."""
    return f"{source}:{LABELS[event]}:{group}:{handler}"


def hook_hash(event: str, matcher: str | None, handler: Mapping[str, Any]) -> str:
    """The `trusted_hash` Codex expects for a command handler (module docstring)."""
    timeout = handler.get("timeout")
    given = timeout if isinstance(timeout, int) and not isinstance(timeout, bool) else None
    if event == "SessionEnd":
        seconds = min(max(given if given is not None else 1, 1), 3)
    else:
        seconds = max(given if given is not None else 600, 1)
    normalized: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": seconds,
        "async": handler.get("async") is True,
    }
    if isinstance(handler.get("statusMessage"), str):
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": LABELS[event], "hooks": [normalized]}
    if matcher is not None and event not in _NO_MATCHER:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def positions(document: Mapping[str, Any]) -> Iterator[Position]:
    """Every command handler of a hooks document, with its event and positions."""
    hooks = document.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event, groups in hooks.items():
        if event not in LABELS or not isinstance(groups, list):
            continue
        for group_index, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for handler_index, handler in enumerate(handlers or ()):
                if isinstance(handler, dict) and handler.get("type") == "command":
                    yield event, group_index, handler_index, handler


def _matcher(document: Mapping[str, Any], event: str, group: int) -> str | None:
    value = document["hooks"][event][group].get("matcher")
    return value if isinstance(value, str) else None


def read_config(path: Path) -> tuple[str | None, tomlkit.TOMLDocument]:
    """The config's text (None: no file) and its parsed document (empty when missing)."""
    text = read_text(path)
    try:
        return text, tomlkit.parse(text or "")
    except tomlkit.exceptions.TOMLKitError as exc:
        raise InvalidRecord(
            str(path), f"not valid TOML ({exc}); fix it, nothing was changed"
        ) from None


def _state(document: Mapping[str, Any]) -> Mapping[str, Any]:
    hooks = document.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    return state if isinstance(state, dict) else {}


def plan_trust(
    config: Path,
    source: Path,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    is_ours: IsOursAt,
    *,
    trust_project: Path | None = None,
) -> FileChange:
    """The config change that trusts our handlers in `after` (the hooks file `source`'s
    new document) and carries the user's trust entries along when their handlers move.

    `before` is the hooks document as it was. Entries of other hooks files are never
    touched; an entry of `source` whose handler is gone is removed. `trust_project`
    also writes `[projects."<root>"] trust_level = "trusted"`.
    """
    text, document = read_config(config)
    state = _state(document)
    prefix = f"{source}:"
    wanted: dict[str, dict[str, Any]] = {}
    for old, new in _moves(source, before, after, is_ours):
        carried = _plain(state.get(old))
        if carried is not None:
            wanted[new] = carried
    for event, group, index, handler in positions(after):
        if is_ours(event, handler):
            entry = {"trusted_hash": hook_hash(event, _matcher(after, event, group), handler)}
            wanted[hook_key(source, event, group, index)] = entry
    stale = [key for key in state if key.startswith(prefix) and key not in wanted]
    changed = [key for key, entry in wanted.items() if _plain(state.get(key)) != entry]
    needs_project = trust_project is not None and not project_trusted(document, trust_project)
    if not stale and not changed and not needs_project:
        return FileChange(config, text, text)
    table = _ensure_state(document)
    for key in stale:
        del table[key]
    for key in changed:
        entry_table = tomlkit.table()
        for name, value in wanted[key].items():
            entry_table[name] = value
        table[key] = entry_table
    if not table:
        _drop_empty_state(document)
    if needs_project and trust_project is not None:
        _trust_project(document, trust_project)
    return FileChange(config, text, tomlkit.dumps(document))


def _moves(
    source: Path, before: Mapping[str, Any], after: Mapping[str, Any], is_ours: IsOursAt
) -> Iterator[tuple[str, str]]:
    # Installing and uninstalling never reorder the user's handlers within an event, so
    # the k-th handler not ours before is the k-th handler not ours after.
    def theirs(document: Mapping[str, Any]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for event, group, index, handler in positions(document):
            if not is_ours(event, handler):
                found.setdefault(event, []).append(hook_key(source, event, group, index))
        return found

    old, new = theirs(before), theirs(after)
    for event, keys in new.items():
        yield from zip(old.get(event, []), keys, strict=False)


def _plain(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    return {str(k): copy.deepcopy(getattr(v, "value", v)) for k, v in value.items()}


def _ensure_state(document: tomlkit.TOMLDocument) -> MutableMapping[str, Any]:
    # A table split across the file (`[hooks.state."a"]` … `[projects…]` …
    # `[hooks.state."b"]`) comes back as tomlkit's proxy, not a `Table`: both are edited
    # in place, so the user's layout is kept.
    hooks = document.get("hooks")
    if not isinstance(hooks, MutableMapping):
        hooks = tomlkit.table(is_super_table=True)
        document["hooks"] = hooks
    state = hooks.get("state")
    if not isinstance(state, MutableMapping):
        state = tomlkit.table(is_super_table=True)
        hooks["state"] = state
    return state


def _drop_empty_state(document: tomlkit.TOMLDocument) -> None:
    hooks = document.get("hooks")
    if isinstance(hooks, MutableMapping) and "state" in hooks:
        del hooks["state"]
        if not hooks:
            del document["hooks"]


def handler_hashes(document: Mapping[str, Any], source: Path | str) -> dict[str, str]:
    """{state key: trusted hash} for every command handler of the hooks `document` of
    `source` (what `hook_key` takes)."""
    return {
        hook_key(source, event, group, index): hook_hash(event, _matcher(document, event, group), h)
        for event, group, index, h in positions(document)
    }


def set_trusted(
    document: tomlkit.TOMLDocument, trusted: Mapping[str, str], forget: Iterable[str] = ()
) -> bool:
    """Write each `trusted_hash` of `trusted` (by state key) into the config `document`,
    keeping an entry's other fields; an entry the user disabled (`enabled = false`) is
    left as it is. The `forget` entries are removed. Whether anything changed."""
    state = _state(document)
    changed = False
    table: MutableMapping[str, Any] | None = None
    for key, value in trusted.items():
        entry = _plain(state.get(key)) or {}
        if entry.get("enabled") is False or entry.get("trusted_hash") == value:
            continue
        table = table if table is not None else _ensure_state(document)
        entry_table = tomlkit.table()
        for name, field_value in {**entry, "trusted_hash": value}.items():
            entry_table[name] = field_value
        table[key] = entry_table
        changed = True
    for key in forget:
        if key in state and key not in trusted:
            table = table if table is not None else _ensure_state(document)
            del table[key]
            changed = True
    if table is not None and not table:
        _drop_empty_state(document)
    return changed


def project_trusted(document: Mapping[str, Any], root: Path) -> bool:
    """True when the config trusts the project at `root` (`trust_level = "trusted"`)."""
    projects = document.get("projects")
    entry = projects.get(str(root)) if isinstance(projects, dict) else None
    return isinstance(entry, dict) and entry.get("trust_level") == "trusted"


def _trust_project(document: tomlkit.TOMLDocument, root: Path) -> None:
    projects = document.get("projects")
    if not isinstance(projects, MutableMapping):
        projects = tomlkit.table(is_super_table=True)
        document["projects"] = projects
    entry = projects.get(str(root))
    if not isinstance(entry, MutableMapping):
        entry = tomlkit.table()
        projects[str(root)] = entry
    entry["trust_level"] = "trusted"


def trust_status(
    document: Mapping[str, Any], source: Path, hooks: Mapping[str, Any], is_ours: IsOursAt
) -> list[tuple[str, str, str]]:
    """(event, key, status) for each handler of ours in `hooks`: `trusted`, `modified`
    (an entry with another hash) or `untrusted` (no entry), as Codex would judge it."""
    state = _state(document)
    found: list[tuple[str, str, str]] = []
    for event, group, index, handler in positions(hooks):
        if not is_ours(event, handler):
            continue
        key = hook_key(source, event, group, index)
        entry = _plain(state.get(key)) or {}
        expected = hook_hash(event, _matcher(hooks, event, group), handler)
        if entry.get("enabled") is False:
            status = "disabled"
        elif entry.get("trusted_hash") == expected:
            status = "trusted"
        else:
            status = "modified" if entry.get("trusted_hash") else "untrusted"
        found.append((event, key, status))
    return found


def trust_entry_text(key: str, trusted_hash: str) -> str:
    """The TOML a person would add by hand for one hook."""
    return f'[hooks.state."{key}"]\ntrusted_hash = "{trusted_hash}"\n'


def project_entry_text(root: Path) -> str:
    """The TOML that trusts a project."""
    return f'[projects."{root}"]\ntrust_level = "trusted"\n'


def codex_home_display(env: Mapping[str, str] | None = None) -> str:
    """Where Codex keeps its config, as the user would write it."""
    return str(config_path(env).parent)
