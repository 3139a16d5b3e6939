"""What one `postmortem` command runs on, assembled from its options: the run record with
the authored graph of `--graph`, the runtime config (`--config`, else the record's own)
with the settings files applied, the checkout, and the store (a dry run never creates
one). The command only parses its arguments and renders; each step's bad input is a
`UsageError` or `ConfigError` (exit 2) naming what is wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from active_memory.checkout import Checkout
    from active_memory.config import RuntimeConfig
    from active_memory.runlog.record import RunRecord


def with_graph(record: RunRecord, graph_path: Path | None) -> RunRecord:
    """The record with the authored graph of `--graph` as its IR, if given; a graph whose
    hash is not the run's is refused."""
    if graph_path is None:
        return record
    from active_memory.config import parse_graph, read_json_file
    from active_memory.errors import UsageError
    from active_memory.runlog.canonical import graph_hash
    from active_memory.runlog.record import GraphRef

    document = read_json_file(graph_path, "graph")
    graph = parse_graph(document, str(graph_path))
    digest = graph_hash(graph.to_json())
    recorded = record.graph.hash if record.graph else None
    if recorded is not None and recorded != digest:
        raise UsageError(
            f"{graph_path}: its graph hash {digest[:12]}… is not the run's graph.hash "
            f"{recorded[:12]}…; pass the graph this run executed"
        )
    name = record.graph.name if record.graph else None
    return record.model_copy(update={"graph": GraphRef(name=name, hash=digest, ir=graph)})


def config_for(record: RunRecord, config_path: Path | None) -> RuntimeConfig:
    """`--config` resolved against the run's graph, else the record's own `runtime`."""
    from active_memory.errors import ConfigError
    from active_memory.orchestrator.records import config_from_record

    if record.graph is None or record.graph.ir is None:
        raise ConfigError(
            "graph.ir",
            "the run record has no graph IR to resolve the source node against; "
            "pass the authored graph with --graph GRAPH.json",
        )
    if config_path is None:
        return config_from_record(record)
    from active_memory.config import parse_runtime_settings, read_json_file, resolve_config

    settings = parse_runtime_settings(read_json_file(config_path, "runtime JSON"))
    return resolve_config(settings, record.graph.ir)


def with_settings_files(config: RuntimeConfig, checkout: Checkout | None) -> RuntimeConfig:
    """`config` with the settings files applied (docs/settings.md): when the run's runtime
    JSON has no `activeMemory` section, the checkout's `.active-memory.toml` and the
    user's file decide the scopes (`enabled`, `repository`, `graph`). `budgetBytes` is
    recall's, not the postmortem's: it is left as the run had it. An invalid settings
    file is a usage error."""
    if "active_memory" in config.settings.model_fields_set:
        return config  # the run decided; its section wins over every file
    import os

    from active_memory.errors import UsageError
    from active_memory.settings import SettingsError, effective_settings

    root = str(checkout.root) if checkout is not None else None
    try:
        settings = effective_settings(root, os.environ, use_env=False)
    except SettingsError as exc:
        raise UsageError(f"{exc}; fix the file or move it away") from None
    section = config.settings.active_memory.model_copy(
        update={"repository": settings.repository, "graph": settings.graph}
    )
    runtime = config.settings.model_copy(update={"active_memory": section})
    return config.model_copy(update={"settings": runtime})


def checkout_for(record: RunRecord, directory: Path | None) -> Checkout | None:
    """`--checkout DIR`, else the checkout the record names when it is here."""
    from active_memory.orchestrator.records import open_checkout

    if directory is None:
        return open_checkout(record)
    from active_memory.checkout import Checkout, NotACheckout
    from active_memory.errors import UsageError

    try:
        return Checkout(directory)
    except NotACheckout as exc:
        raise UsageError(f"--checkout {directory}: not a git checkout ({exc})") from None


def store_for(option: str | None, *, dry_run: bool) -> Any:
    """An async context manager of the store; a dry run never creates one (a missing
    store reads as empty: an empty store in memory stands in for it)."""
    from collections.abc import AsyncIterator
    from contextlib import asynccontextmanager

    from active_memory.store import LessonStore, open_store, resolve_store_location
    from active_memory.store.location import is_postgres_url

    location = resolve_store_location(option)
    missing = not is_postgres_url(location) and not Path(location).exists()

    @asynccontextmanager
    async def opened() -> AsyncIterator[LessonStore]:
        if dry_run and missing:
            from active_memory.store.sqlite import SqliteStore

            async with await SqliteStore.in_memory(location) as empty:
                yield empty
            return
        async with open_store(location, create=not dry_run) as store:
            yield store

    return opened()
