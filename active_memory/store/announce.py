"""Who hears that a store changed: a small registry of listeners.

The store knows nothing of what is built from it (recall's index generations, for one):
whoever wants those kept up to date subscribes (`on_store_change`; the command line
subscribes recall's refresh), and `open_store` calls every listener once a session that
committed a change to the lessons ends. A listener runs on a worker thread; a failure is
logged, never raised: what it keeps catches up later (recall at its next pin).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

Listener = Callable[[str], object]
"""Called with the store's location (a SQLite path or the unmasked URL)."""

_listeners: list[Listener] = []


def on_store_change(listener: Listener) -> Callable[[], None]:
    """Call `listener(location)` after each committed change from now on; returns the
    function that unsubscribes it. A listener subscribed already stays subscribed once,
    and only its first subscription's function unsubscribes it."""
    if listener in _listeners:
        return lambda: None
    _listeners.append(listener)

    def unsubscribe() -> None:
        with contextlib.suppress(ValueError):
            _listeners.remove(listener)

    return unsubscribe


async def announce(location: str) -> None:
    """Tell every listener that the store at `location` changed."""
    import anyio

    for listener in list(_listeners):
        try:
            await anyio.to_thread.run_sync(listener, location)
        except Exception as exc:
            import logging

            logging.getLogger(__name__).warning("after a store change, %r failed: %s",
                                                listener, exc)  # fmt: skip
