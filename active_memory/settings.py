"""The settings that govern recall outside a run (SPEC §2, "Settings outside a run").

One module answers "what are `enabled`, `repository`, `graph`, `budgetBytes` and `exclude`
here, and
where did each come from?" for the hooks, the recall server, the worker and the commands.
Each key is taken from the first layer that sets it:

1. the run's settings: its runtime JSON's `activeMemory` section when there is one; for
   a hook, the orchestrator's `ACTIVE_MEMORY_SCOPES` / `ACTIVE_MEMORY_BUDGET_BYTES`
   variables (they are how a run hands its runtime settings to its agents' hooks);
2. the repository's committed file, `.active-memory.toml` at the checkout root;
3. the user's file, `<zeroshot state dir>/active-memory/settings.toml`;
4. the defaults (SPEC §2).

A run layer that speaks about scopes decides all three scope keys (`enabled` is then
"either scope on"). In the files, `enabled = false` turns both scopes off; the effective
scopes are `enabled and repository`, `enabled and graph`.

An invalid file is a `SettingsError` naming the file, the key and what is allowed.
Commands turn it into exit 2; a hook lets it propagate, so the call is answered with no
context and one line in the hook log: a broken settings file disables recall (and
receipts) until it is fixed, because the file may have been written to opt out, and a
typo must never turn an opt-out into injection.

This module is on the hook's per-call path: standard library only, no `tomllib` import
unless a settings file exists (two `stat`s otherwise), and a parsed file is cached as a
marshal file under the recall state dir, keyed by the file's size and modification time,
so a warm hook never parses TOML. `exclude` (issue 20) adds up across layers.
"""

from __future__ import annotations

import os

from active_memory import session_budget as budget

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

REPOSITORY_FILE = ".active-memory.toml"
"""The repository's committed settings file, at the checkout root."""
USER_FILE = "settings.toml"
"""The user's settings file, in `<zeroshot state dir>/active-memory/`."""


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_budget(value: Any) -> bool:
    return budget.budget_problem(value) is None


def _is_exclude(value: Any) -> bool:
    from active_memory.exclusion import MAX_PATTERNS, pattern_problem

    return (
        isinstance(value, list)
        and len(value) <= MAX_PATTERNS
        and all(pattern_problem(item) is None for item in value)
    )


_BOOLEAN = "a boolean (true or false)"
_EXCLUDE = (
    "a list of at most 256 root-relative path globs (no !, no .., no backslashes; docs/settings.md)"
)
REVIEW_MODES = ("manual", "automatic")
"""`review`: "manual" keeps a postmortem's creations and adaptations as proposals until a
person approves them (docs/review.md); "automatic" publishes them."""

KEYS: dict[str, tuple[str, Any, Callable[[Any], bool]]] = {
    "enabled": (_BOOLEAN, True, _is_bool),
    "repository": (_BOOLEAN, True, _is_bool),
    "graph": (_BOOLEAN, True, _is_bool),
    "budgetBytes": (budget.ALLOWED, budget.DEFAULT_BUDGET_BYTES, _is_budget),
    "exclude": (_EXCLUDE, [], _is_exclude),
    "review": ('"manual" or "automatic"', "automatic", lambda v: v in REVIEW_MODES),
}
"""Every key the settings files may hold: what is allowed (for the error), the default,
and the check. A new setting (issue 20: `review`) is one more entry here.

`exclude` is the one key that is not "first layer wins": the patterns of every layer
add up (ACCUMULATED), so a user's file can add exclusions to a team's but never lift one."""

ACCUMULATED = frozenset({"exclude"})

TABLES = ("worker",)
"""Tables the user's file may hold besides `KEYS`: `[worker]` (the automatic worker's
lane, model, credentials and spending: `worker_settings.py`). A repository's file may not:
a checkout never chooses what runs on its reader's machine or what it spends."""

DEFAULT_SOURCE = "default"
SCOPES_ENV = "ACTIVE_MEMORY_SCOPES"


class SettingsError(ValueError):
    """A settings file is invalid: `path`, `key` (None: the whole file) and the problem."""

    def __init__(self, path: str, key: str | None, problem: str) -> None:
        where = f"{path}: {key}" if key else path
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.key = key
        self.problem = problem


class Setting:
    """One effective value and where it came from (a file path, `runtime`, `default`)."""

    __slots__ = ("source", "value")

    def __init__(self, value: Any, source: str) -> None:
        self.value = value
        self.source = source

    def __repr__(self) -> str:
        return f"Setting({self.value!r}, {self.source!r})"


class Settings:
    """The effective settings: one `Setting` per key of `KEYS`."""

    __slots__ = ("files", "values")

    def __init__(self, values: dict[str, Setting], files: tuple[str, ...] = ()) -> None:
        self.values = values
        self.files = files  # the settings files that exist, in the order they were read

    @property
    def enabled(self) -> bool:
        """Active Memory is on at all."""
        return bool(self.values["enabled"].value)

    @property
    def repository(self) -> bool:
        """Repository lessons are recalled and collected."""
        return self.enabled and bool(self.values["repository"].value)

    @property
    def graph(self) -> bool:
        """Graph lessons are recalled and collected."""
        return self.enabled and bool(self.values["graph"].value)

    @property
    def budget_bytes(self) -> int:
        """The cumulative bytes of cards one provider session may receive."""
        return int(self.values["budgetBytes"].value)

    @property
    def exclude(self) -> tuple[str, ...]:
        """The `exclude` path globs of every layer, in order, without repeats."""
        return tuple(dict.fromkeys(self.values["exclude"].value))

    @property
    def scopes(self) -> frozenset[str]:
        """The scopes that are on (`repository`, `graph`)."""
        return frozenset(
            name for name, on in (("repository", self.repository), ("graph", self.graph)) if on
        )

    def to_json(self) -> dict[str, Any]:
        """`{"settings": {key: {"value", "source"}}, "scopes", "files"}` for `--json`."""
        return {
            "settings": {
                name: {"value": item.value, "source": item.source}
                for name, item in self.values.items()
            },
            "scopes": sorted(self.scopes),
            "files": list(self.files),
        }


def user_settings_path(env: Mapping[str, str] | None = None) -> str:
    """`<zeroshot state dir>/active-memory/settings.toml`."""
    from active_memory.store.location import state_dir

    return os.path.join(state_dir(env), USER_FILE)


def repository_settings_path(root: str) -> str:
    """`<checkout root>/.active-memory.toml`."""
    return os.path.join(root, REPOSITORY_FILE)


def effective_settings(
    root: str | None,
    env: Mapping[str, str] | None = None,
    *,
    runtime: Mapping[str, Any] | None = None,
    use_env: bool = True,
) -> Settings:
    """The effective settings for the checkout at `root` (None: no checkout).

    `runtime` is the run's runtime JSON (its `activeMemory` section is what counts);
    `use_env` reads the orchestrator's variables as the run's settings (hooks, the
    server; the worker passes False). Raises `SettingsError` for an invalid file.
    """
    environment = os.environ if env is None else env
    layers: list[tuple[str, dict[str, Any]]] = []
    if runtime is not None:
        layers.append(("runtime", runtime_layer(runtime)))
    if use_env:
        layers.append(("runtime (ACTIVE_MEMORY_*)", env_layer(environment)))
    files: list[str] = []
    state = _state_dir(environment)
    for path in (
        repository_settings_path(root) if root else None,
        os.path.join(state, USER_FILE),
    ):
        if path is None:
            continue
        values = read_settings_file(path, cache_dir=os.path.join(state, "recall", "settings"))
        if values is not None and root and path == repository_settings_path(root):
            _refuse_tables(path, values, os.path.join(state, USER_FILE))
        if values is not None:
            files.append(path)
            layers.append((path, values))
    chosen: dict[str, Setting] = {}
    for name, (_, default, _check) in KEYS.items():
        if name in ACCUMULATED:
            chosen[name] = _accumulated(name, default, layers)
            continue
        chosen[name] = next(
            (Setting(values[name], source) for source, values in layers if name in values),
            Setting(default, DEFAULT_SOURCE),
        )
    return Settings(chosen, tuple(files))


def _refuse_tables(path: str, values: dict[str, Any], user_file: str) -> None:
    for name in TABLES:
        if name in values:
            raise SettingsError(
                path,
                f"[{name}]",
                f"belongs in your own settings file ({user_file}): a "
                "repository does not choose your worker's lane, model, credentials or spending",
            )


def _accumulated(name: str, default: Any, layers: list[tuple[str, dict[str, Any]]]) -> Setting:
    # Every layer's list, joined; the source names each layer that added something.
    values: list[Any] = []
    sources: list[str] = []
    for source, layer in layers:
        if layer.get(name):
            values.extend(item for item in layer[name] if item not in values)
            sources.append(source)
    if not sources:
        return Setting(list(default), DEFAULT_SOURCE)
    return Setting(values, " + ".join(sources))


def runtime_layer(plan: Mapping[str, Any]) -> dict[str, Any]:
    """The keys a runtime JSON decides: its `activeMemory` section, SPEC §2 defaults
    filled in, with `enabled` meaning "either scope on". Nothing without the section."""
    section = plan.get("activeMemory")
    if not isinstance(section, dict):
        return {}
    repository = section.get("repository", True) is not False
    graph = section.get("graph", True) is not False
    values: dict[str, Any] = {"repository": repository, "graph": graph}
    values["enabled"] = repository or graph
    # The runtime JSON was checked by `config` (the same rule); absent is the default.
    chosen = section.get("budgetBytes", budget.DEFAULT_BUDGET_BYTES)
    if _is_budget(chosen):
        values["budgetBytes"] = chosen
    # Only when the run says: otherwise the repository's or the user's file decides.
    if section.get("review") in REVIEW_MODES:
        values["review"] = section["review"]
    return values


def env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    """The run settings an orchestrator hands its agents' hooks (docs/settings.md).

    `ACTIVE_MEMORY_SCOPES` (`repository,graph`; empty: none) decides the scope keys;
    `ACTIVE_MEMORY_BUDGET_BYTES` (1..16384) the budget. An invalid value is ignored.
    """
    values: dict[str, Any] = {}
    scopes = env.get(SCOPES_ENV)
    if scopes is not None:
        names = {part.strip() for part in scopes.split(",")}
        values["repository"] = "repository" in names
        values["graph"] = "graph" in names
        values["enabled"] = values["repository"] or values["graph"]
    number = budget.budget_from_text(env.get(budget.BUDGET_ENV))
    if number is not None:
        values["budgetBytes"] = number
    return values


def read_settings_file(path: str, cache_dir: str | None = None) -> dict[str, Any] | None:
    """The checked keys of the settings file at `path`, or None when it does not exist.

    With `cache_dir`, a parsed file is kept as marshal keyed by its size and mtime, so
    the next reader skips TOML entirely. Raises `SettingsError` for an invalid file.
    """
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SettingsError(path, None, f"cannot read ({exc.strerror})") from None
    stamp = (status.st_size, status.st_mtime_ns, status.st_ino)
    cache = _cache_path(cache_dir, path) if cache_dir else None
    if cache is not None:
        cached = _read_cache(cache, stamp)
        if cached is not None:
            return cached
    values = _parse(path)
    if cache is not None:
        _write_cache(cache, stamp, values)
    return values


SETTINGS_MAX_BYTES = 1024 * 1024
"""A settings file past this is refused (a few lines in practice)."""


def _parse(path: str) -> dict[str, Any]:
    import tomllib

    from active_memory.reader import NotReadable, read_file_bytes

    # The bounded reader: a regular file only (a FIFO never blocks a hook), at most 1 MiB.
    try:
        data = read_file_bytes(path, SETTINGS_MAX_BYTES)
    except NotReadable as exc:
        raise SettingsError(path, None, f"cannot read ({exc.reason})") from None
    if data is None:
        raise SettingsError(path, None, f"larger than {SETTINGS_MAX_BYTES} bytes")
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SettingsError(path, None, f"not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(path, None, f"not valid TOML ({exc})") from None
    except RecursionError:
        raise SettingsError(path, None, "not valid TOML (nested too deeply)") from None
    values: dict[str, Any] = {}
    for key, value in document.items():
        if key in TABLES:
            # Kept as read; its own module checks it (worker_settings.py).
            if not isinstance(value, dict):
                raise SettingsError(path, key, f"must be a table ([{key}]), found {value!r}")
            values[key] = value
            continue
        if key not in KEYS:
            allowed = ", ".join([*KEYS, *(f"[{name}]" for name in TABLES)])
            raise SettingsError(path, key, f"unknown setting; allowed: {allowed}")
        expected, _, check = KEYS[key]
        if not check(value):
            raise SettingsError(path, key, f"must be {expected}, found {value!r}")
        values[key] = value
    return values


def _state_dir(env: Mapping[str, str]) -> str:
    from active_memory.store.location import state_dir

    return state_dir(env)


def _cache_path(cache_dir: str, path: str) -> str:
    from active_memory.file_names import safe_name

    return os.path.join(cache_dir, safe_name(os.path.abspath(path)) + ".marshal")


def _read_cache(cache: str, stamp: tuple[int, int, int]) -> dict[str, Any] | None:
    import marshal

    try:
        with open(cache, "rb") as handle:
            value = marshal.loads(handle.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(value, dict) or tuple(value.get("stamp") or ()) != stamp:
        return None
    values = value.get("values")
    return values if isinstance(values, dict) else None


def _write_cache(cache: str, stamp: tuple[int, int, int], values: dict[str, Any]) -> None:
    import marshal

    from active_memory.atomic_files import write_atomically

    try:  # noqa: SIM105 - contextlib would cost the hook process an import
        write_atomically(cache, marshal.dumps({"stamp": list(stamp), "values": values}), sync=False)
    except (OSError, ValueError):  # ValueError: a TOML date in a table marshal cannot hold
        pass  # a cache that cannot be written only costs the next reader a parse
