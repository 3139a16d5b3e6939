"""What a run record gives the postmortem besides itself: its runtime config and checkout."""

from __future__ import annotations

import logging

from active_memory.checkout import Checkout, NotACheckout
from active_memory.config import RuntimeConfig, parse_runtime_settings, resolve_config
from active_memory.errors import ConfigError
from active_memory.runlog.record import RunRecord

log = logging.getLogger("active_memory.orchestrator")


def config_from_record(record: RunRecord) -> RuntimeConfig:
    """The runtime config the run carried (`runtime`), resolved against its graph IR.

    Raises `ConfigError` (exit 2) naming what is missing or wrong.
    """
    if record.runtime is None:
        raise ConfigError("runtime", "the run record has no runtime plan; give the runtime JSON")
    if record.graph is None or record.graph.ir is None:
        raise ConfigError("graph.ir", "the run record has no graph IR to resolve the source node")
    return resolve_config(parse_runtime_settings(record.runtime), record.graph.ir)


def open_checkout(record: RunRecord) -> Checkout | None:
    """The run's checkout, or None (logged) when it has none or it is not a git work tree."""
    path = record.repository.checkout if record.repository else None
    if not path:
        return None
    try:
        return Checkout(path)
    except NotACheckout as exc:
        log.warning("run %s: checkout %s is not usable: %s", record.run_id, path, exc)
        return None
