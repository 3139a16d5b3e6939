"""`serve`'s watch on its store: every `background.POLL_SECONDS`, one question to the store.

A hook never reads a PostgreSQL store (SPEC §8: no network on a tool call's path), and
a machine's SQLite generations are refreshed by the writers on that machine. So a
lesson another machine publishes to a shared PostgreSQL store reaches this machine's
hooks through this watch (or, without `serve`, through the hooks' own rate-limited
start of the builder, recall/builder.py): it asks the store for its change version and
starts the background builder of every scope this machine recalls whose generation was
checked at an older one (recall/building.py `watch_store`). A SQLite store is watched
the same way, which costs one indexed read per period.

It runs on a thread of its own, so the server's event loop never waits for the store;
a failure (the database unreachable) is logged once per period and tried again next
period.
"""

from __future__ import annotations

import logging
import os
import threading

from active_memory.credential_gate import mask
from active_memory.recall.background import POLL_SECONDS

LOG = logging.getLogger(__name__)


class StoreWatch:
    """Polls the store at `location` every `period` seconds until `stop`."""

    def __init__(self, recall_dir: str, location: str, period: float = POLL_SECONDS) -> None:
        self.recall_dir = recall_dir
        self.location = location
        self.period = period
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start watching (a daemon thread: it never keeps the server from exiting)."""
        self._thread = threading.Thread(target=self._run, name="active-memory-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; returns once the thread is done (at most one check in flight)."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def check(self) -> int:
        """One look at the store; how many scopes' builders it started."""
        from active_memory.recall.building import watch_store

        return len(watch_store(self.recall_dir, self.location))

    def _run(self) -> None:
        while not self._stopped.wait(self.period):
            try:
                started = self.check()
            except Exception as exc:  # the store is down for a while: try next period
                # An error may quote the store's URL (a PostgreSQL password): masked.
                said = mask(" ".join(str(exc).split()))
                LOG.warning("watching the lesson store failed: %s", said)
                continue
            if started:
                LOG.info("the lesson store changed: building %d scope(s) in the background",
                         started)  # fmt: skip


def watch(location: str, state_dir: str) -> StoreWatch:
    """A started watch of `location` for the recall folder of `state_dir`."""
    watcher = StoreWatch(os.path.join(state_dir, "recall"), location)
    watcher.start()
    return watcher
