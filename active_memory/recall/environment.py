"""Where a tool call happens: run and session identity, budget, checkout root, namespace.

The orchestrator describes a run to its agents' hooks through environment variables
(docs/recall.md, "Identity"); a bare harness session falls back to the hook payload's
session and working directory. Reading the namespace never runs `git`: a hook process
reads `.git/config` itself, because a subprocess would cost more than the whole hook.
"""

from __future__ import annotations

import os

from active_memory.reader import open_regular, read_file_bytes
from active_memory.recall.types import ALL_SCOPES, RecallContext, ToolCall
from active_memory.session_budget import BUDGET_ENV
from active_memory.settings import effective_settings
from active_memory.store.location import state_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

GIT_CONFIG_MAX_BYTES = 1024 * 1024
"""A checkout's `.git/config` past this is not read (the remote stays unknown)."""

RUN_ID_ENV = "ACTIVE_MEMORY_RUN_ID"
SESSION_ENV = "ACTIVE_MEMORY_SESSION_ID"
GRAPH_HASH_ENV = "ACTIVE_MEMORY_GRAPH_HASH"
NODE_ENV = "ACTIVE_MEMORY_NODE"
REPOSITORY_ENV = "ACTIVE_MEMORY_REPOSITORY"
WORKSPACE_ENV = "ACTIVE_MEMORY_WORKSPACE"
SCOPES_ENV = "ACTIVE_MEMORY_SCOPES"
STORE_ENV = "ACTIVE_MEMORY_STORE"

ENVIRONMENT_VARIABLES: tuple[str, ...] = (
    RUN_ID_ENV,
    SESSION_ENV,
    GRAPH_HASH_ENV,
    NODE_ENV,
    BUDGET_ENV,
    REPOSITORY_ENV,
    WORKSPACE_ENV,
    SCOPES_ENV,
    STORE_ENV,
    "ZEROSHOT_STATE_DIR",
    "XDG_STATE_HOME",
    "LOCALAPPDATA",
    "HOME",
)
"""Every variable recall reads: what a thin client forwards to the recall server."""

_HEX = frozenset("0123456789abcdef")


def find_checkout_root(start: str) -> str | None:
    """The nearest folder at or above `start` holding `.git` (a folder or a worktree file)."""
    current = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _git_dir(root: str) -> str | None:
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    try:
        with open_regular(dot_git) as handle:
            first = handle.readline(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    # A linked worktree: `.git` is a file `gitdir: <path>`; the config lives in the
    # common dir named by `<gitdir>/commondir`.
    if not first.startswith("gitdir:"):
        return None
    git_dir = first[len("gitdir:") :].strip()
    if not os.path.isabs(git_dir):
        git_dir = os.path.normpath(os.path.join(root, git_dir))
    try:
        with open_regular(os.path.join(git_dir, "commondir")) as handle:
            common = handle.readline(4096).decode("utf-8", "replace").strip()
        git_dir = os.path.normpath(os.path.join(git_dir, common))
    except OSError:
        pass
    return git_dir


def _remote_name(line: str) -> str | None:
    """`[remote "origin"]` → `origin`; None for any other line."""
    text = line.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    inner = text[1:-1].strip()
    if not inner.startswith("remote") or '"' not in inner:
        return None
    if inner[len("remote") :].strip()[:1] != '"':
        return None
    name = inner[inner.index('"') + 1 :]
    return name[:-1] if name.endswith('"') else None


def read_remote_url(root: str) -> str | None:
    """The URL of remote `origin` (else of the first remote) from the checkout's config."""
    git_dir = _git_dir(root)
    if git_dir is None:
        return None
    # A FIFO or device planted as `.git/config` must not hang the hook or the server:
    # only a regular file is read, and only its first MiB.
    try:
        data = read_file_bytes(os.path.join(git_dir, "config"), GIT_CONFIG_MAX_BYTES)
    except OSError:
        return None
    if data is None:
        return None
    lines = data.decode("utf-8", "replace").split("\n")
    remotes: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        text = line.strip()
        if text.startswith("["):
            current = _remote_name(text)
            continue
        if current is None or current in remotes or "=" not in text:
            continue
        key, _, value = text.partition("=")
        if key.strip().lower() == "url":
            remotes[current] = value.strip().strip('"')
    if "origin" in remotes:
        return remotes["origin"]
    return next(iter(remotes.values()), None)


def namespace_from_remote(remote: str) -> str | None:
    """`git@github.com:acme/api.git` / `https://github.com/acme/api` → `repo:github.com/acme/api`.

    The host is lowercased; user, port and a trailing `.git` or `/` are dropped. None for
    a local path, a `file://` URL, or anything else that names no host.
    """
    text = remote.strip()
    if "://" in text:
        scheme, _, rest = text.partition("://")
        if scheme.lower() == "file" or not scheme:
            return None
        authority, _, path = rest.partition("/")
        host = authority.rpartition("@")[2]
        # `[::1]:22` keeps its brackets; `host:22` loses its port.
        host = host[: host.find("]") + 1] if host.startswith("[") else host.partition(":")[0]
    else:
        # scp-like `user@host:path`; a Windows drive (`C:\x`) or a path is not one.
        before, colon, path = text.partition(":")
        if not colon or "/" in before or "\\" in before or len(before) <= 1:
            return None
        host = before.rpartition("@")[2]
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")].rstrip("/")
    host = host.lower()
    if not host or not path:
        return None
    return f"repo:{host}/{path}"


def repository_namespace(root: str | None) -> str | None:
    """The namespace of the checkout at `root`: the one rule every part uses.

    From its remote when it has one that names a host; else `repo:local/<main worktree
    path>`, found from the git common directory, so every worktree of one repository
    shares it (docs/recall.md, "Namespaces"). Read from files only, never by running
    `git`. None when `root` is None or holds no git directory.
    """
    if root is None:
        return None
    remote = read_remote_url(root)
    namespace = namespace_from_remote(remote) if remote else None
    if namespace is not None:
        return namespace
    common = _git_dir(root)
    if common is None:
        return None
    common = os.path.abspath(common)
    main = os.path.dirname(common) if os.path.basename(common) == ".git" else common
    return "repo:local/" + main.replace(os.sep, "/").lstrip("/")


def context_session(session: str, agent: str | None) -> str:
    """The ledger key of a call's context: the session, or `<session>/agent-<id>` for a
    sub-agent's call (its own provider session, recall/contexts.py)."""
    return f"{session}/agent-{agent}" if agent else session


def parse_scopes(value: str | None) -> frozenset[str]:
    """`ACTIVE_MEMORY_SCOPES`: comma-separated `repository`, `graph`; unset means both."""
    if value is None:
        return ALL_SCOPES
    return frozenset(part.strip() for part in value.split(",")) & ALL_SCOPES


def resolve_context(
    call: ToolCall,
    env: Mapping[str, str] | None = None,
    *,
    repository: str | None = None,
    dry_run: bool = False,
) -> RecallContext:
    """The `RecallContext` of `call`, from `env` (the hook's environment) and the call.

    Budget and scopes are the effective settings (`active_memory.settings`); raises
    `SettingsError` when a settings file is invalid.

    `repository` overrides the namespace (the `recall --repository` option). Precedence
    for each part is written in docs/recall.md ("Identity").
    """
    env = os.environ if env is None else env
    session = call.session or env.get(SESSION_ENV) or ""
    run_id = env.get(RUN_ID_ENV) or ""
    if run_id:
        run_key = f"run:{run_id}"
    elif session:
        run_key = f"session:{session}"
    else:
        run_key = "anonymous"
    cwd = call.cwd or os.getcwd()
    root = env.get(WORKSPACE_ENV) or find_checkout_root(cwd)
    namespace = repository or env.get(REPOSITORY_ENV) or repository_namespace(root)
    # The run's ACTIVE_MEMORY_* variables, then .active-memory.toml at the root, then the
    # user's settings file (settings.py); an invalid file raises, so the hook answers
    # nothing and logs it.
    settings = effective_settings(root, env)
    graph_hash = env.get(GRAPH_HASH_ENV) or None
    if graph_hash is not None and (len(graph_hash) != 64 or not set(graph_hash) <= _HEX):
        graph_hash = None
    return RecallContext(
        state_dir=state_dir(env),
        run_key=run_key,
        session=context_session(session or run_key, call.agent),
        repository=namespace,
        workspace_root=os.path.abspath(root) if root else os.path.abspath(cwd),
        graph_hash=graph_hash,
        node=env.get(NODE_ENV) or None,
        budget_bytes=settings.budget_bytes,
        store=env.get(STORE_ENV) or None,
        scopes=settings.scopes,
        dry_run=dry_run,
        exclude=settings.exclude,
    )
