"""Which folder on this machine holds each repository namespace's checkout.

A store holds lessons of many repositories; to judge a lesson's cited code (staleness,
cited lines) a reader needs *that* repository's checkout, not the one it was started in.
This machine learns them as it works and keeps them in the state folder
(`<state dir>/checkouts.json`), never in a store: a PostgreSQL store is shared by many
machines, and another machine's paths mean nothing here.

Learnt from (`remember`, `source` says which): a queued session the worker imported
(`session`), a session import (`import`), `init`'s selected checkouts (`init`), and the
web view's `--checkout` folders (`ui`). Each namespace keeps its `MAX_PER_NAMESPACE`
most recently seen folders, newest first; `MAX_NAMESPACES` namespaces at most, the
least recently seen dropped first.

Reading (`KnownCheckouts`) trusts nothing it read: a folder is used only while it
exists and still holds the namespace by the one rule (`repository_namespace`, files
only, no `git`), so a deleted or re-cloned folder is skipped, never judged against.
A damaged file reads as empty and is set aside (`checkouts.json.damaged`) at the next
write, so what it held can be looked at; nothing else is lost.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from active_memory.store.location import state_dir

log = logging.getLogger(__name__)

REGISTRY_FILE = "checkouts.json"
REGISTRY_SCHEMA = "active-memory/checkouts@1"
MAX_PER_NAMESPACE = 8
"""Folders kept per namespace (worktrees, clones), newest first."""
MAX_NAMESPACES = 2000
"""Namespaces kept; past that the least recently seen is forgotten."""
MAX_FILE_BYTES = 4 * 1024 * 1024
"""A larger registry file is damaged, not read."""

Source = Literal["session", "import", "init", "ui"]


class SeenCheckout(BaseModel):
    """One folder that held a namespace's checkout, and when and how it was last seen."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    path: str = Field(min_length=1)
    seen_at: str
    source: str


class _Registry(BaseModel):
    model_config = ConfigDict(extra="ignore")

    schema_: Literal["active-memory/checkouts@1"] = Field(
        "active-memory/checkouts@1", alias="schema"
    )
    repositories: dict[str, list[SeenCheckout]] = {}


def registry_path(env: Mapping[str, str] | None = None) -> Path:
    """`<state dir>/checkouts.json`."""
    return Path(state_dir(env)) / REGISTRY_FILE


def _read(path: Path) -> _Registry | None:
    """The registry at `path`; an empty one when there is none; None when damaged."""
    from active_memory.errors import UsageError
    from active_memory.reader import NotReadable, parse_json, read_file_bytes

    try:
        data = read_file_bytes(path, MAX_FILE_BYTES)
    except NotReadable as exc:
        if exc.missing:
            return _Registry()
        log.warning("%s: not read (%s); no checkout known from it", path, exc.reason)
        return None
    except OSError as exc:
        log.warning("%s: not read (%s); no checkout known from it", path, exc)
        return None
    if data is None:
        log.warning("%s: larger than %d bytes; no checkout known from it", path, MAX_FILE_BYTES)
        return None
    try:
        return _Registry.model_validate(parse_json(data.decode("utf-8"), str(path)))
    except (UsageError, UnicodeDecodeError, ValidationError) as exc:
        log.warning("%s: damaged (%s); no checkout known from it", path, str(exc)[:200])
        return None


def _namespace_of(root: str) -> str | None:
    from active_memory.recall.environment import repository_namespace

    return repository_namespace(root)


def _top(folder: str | os.PathLike[str]) -> str | None:
    """The top of the checkout holding `folder` (a subfolder counts), or None."""
    from active_memory.recall.environment import find_checkout_root

    path = os.path.abspath(os.fspath(folder))
    return find_checkout_root(path) if os.path.isdir(path) else None


def remember(
    namespace: str, root: str | os.PathLike[str], source: Source,
    env: Mapping[str, str] | None = None,
) -> bool:  # fmt: skip
    """Record that the checkout holding `root` (its top; a subfolder counts) is
    `namespace`'s on this machine (newest first).

    Nothing is written (False) when `root` is in no checkout that holds `namespace` by
    the one namespace rule; a registry that cannot be written is logged, never raised: what a
    caller was doing (a postmortem, an import) does not fail for it."""
    folder = _top(root)
    if not namespace or folder is None or _namespace_of(folder) != namespace:
        return False
    return _update(registry_path(env), {namespace: folder}, source)


def remember_folder(
    root: str | os.PathLike[str], source: Source, env: Mapping[str, str] | None = None
) -> str | None:
    """Record the checkout at `root` under its own namespace; that namespace (None when
    `root` holds no git checkout)."""
    folder = _top(root)
    namespace = _namespace_of(folder) if folder is not None else None
    if folder is None or namespace is None:
        return None
    _update(registry_path(env), {namespace: folder}, source)
    return namespace


def remember_all(
    pairs: Iterable[tuple[str, str | os.PathLike[str]]],
    source: Source,
    env: Mapping[str, str] | None = None,
) -> int:
    """`remember` for many (namespace, folder) pairs in one write; how many were kept."""
    found: dict[str, str] = {}
    for namespace, root in pairs:
        folder = _top(root)
        if namespace and folder is not None and _namespace_of(folder) == namespace:
            found[namespace] = folder
    if found:
        _update(registry_path(env), found, source)
    return len(found)


def _update(path: Path, seen: Mapping[str, str], source: str) -> bool:
    from active_memory.atomic_files import write_atomically
    from active_memory.file_lock import FileLock

    now = datetime.now(UTC).isoformat()
    try:
        with FileLock(path.with_name(REGISTRY_FILE + ".lock")):
            registry = _read(path)
            if registry is None:  # damaged: set aside, start again
                os.replace(path, path.with_name(REGISTRY_FILE + ".damaged"))
                registry = _Registry()
            for namespace, folder in seen.items():
                kept = [c for c in registry.repositories.pop(namespace, []) if c.path != folder]
                entry = SeenCheckout(path=folder, seen_at=now, source=source)
                registry.repositories[namespace] = [entry, *kept][:MAX_PER_NAMESPACE]
            if len(registry.repositories) > MAX_NAMESPACES:
                newest = sorted(registry.repositories.items(), key=lambda item: item[1][0].seen_at)[
                    -MAX_NAMESPACES:
                ]
                registry.repositories = dict(newest)
            data = registry.model_dump_json(by_alias=True, indent=1)
            write_atomically(path, data, mode=0o600)
    except (OSError, TimeoutError) as exc:
        log.warning("%s: checkouts not recorded: %s", path, exc)
        return False
    return True


class KnownCheckouts:
    """The checkout of each namespace on this machine: the folders given (`given`, e.g.
    `ui --checkout`) first, then the registry's, newest first; each used only while it
    exists and still holds the namespace. Answers are cached for the object's life (a
    page's worth of lessons asks once per namespace)."""

    def __init__(
        self,
        given: Iterable[str | os.PathLike[str]] = (),
        env: Mapping[str, str] | None = None,
        *,
        registry: bool = True,
    ) -> None:
        self._given: dict[str, Path] = {}
        for root in given:
            folder = os.path.abspath(os.fspath(root))
            namespace = _namespace_of(folder)
            if namespace is not None:
                self._given.setdefault(namespace, Path(folder))
        self._env = env
        self._registry = registry
        self._seen: dict[str, list[SeenCheckout]] | None = None
        self._cache: dict[str, Path | None] = {}

    @property
    def given(self) -> dict[str, Path]:
        """The given folders by their namespace."""
        return dict(self._given)

    def recorded(self) -> dict[str, list[SeenCheckout]]:
        """What the registry holds (read once), by namespace."""
        if self._seen is None:
            found = _read(registry_path(self._env)) if self._registry else None
            self._seen = found.repositories if found is not None else {}
        return self._seen

    def root(self, namespace: str | None) -> Path | None:
        """The folder holding `namespace`'s checkout here, or None (none known)."""
        if not namespace:
            return None
        if namespace not in self._cache:
            self._cache[namespace] = self._find(namespace)
        return self._cache[namespace]

    def _find(self, namespace: str) -> Path | None:
        if namespace in self._given:
            return self._given[namespace]
        for seen in self.recorded().get(namespace, []):
            if os.path.isdir(seen.path) and _namespace_of(seen.path) == namespace:
                return Path(seen.path)
        return None

    def namespaces(self) -> list[str]:
        """Every namespace with a folder given or recorded (not checked), sorted."""
        return sorted({*self._given, *self.recorded()})
