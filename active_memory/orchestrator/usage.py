"""What a postmortem has spent so far, known while it runs.

Every session the postmortem opens is registered here. A session that can be listened to
(`BaseSession.on_usage`, which every adapter is) wakes the meter at each request's usage,
so the journal can record the running total while specialists still work (`changes`).
The total is the closed sessions' usage plus what each open session has been charged;
it never waits for a session to close, so a cancel, a failure or a crash loses nothing
that was already known.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio

from active_memory.specialists.providers import ProviderSession, Usage


class UsageMeter:
    """The postmortem's running usage, per specialist and in total."""

    def __init__(self) -> None:
        self._closed: dict[str, Usage] = {}
        self._open: dict[int, tuple[str, ProviderSession]] = {}
        self._changed = anyio.Event()

    def opened(self, specialist: str, session: ProviderSession) -> None:
        """Count `session` from now on, and listen to its requests when it can be."""
        self._open[id(session)] = (specialist, session)
        listen = getattr(session, "on_usage", None)
        if callable(listen):
            listen(self._heard)
        self._changed.set()

    def closed(self, specialist: str, session: ProviderSession) -> None:
        """`session` ended: keep its final usage."""
        if self._open.pop(id(session), None) is None:
            return
        self._closed[specialist] = self._closed.get(specialist, Usage()).plus(session.usage)
        self._changed.set()

    def _heard(self, usage: Usage) -> None:
        self._changed.set()

    def by_specialist(self) -> dict[str, Usage]:
        """Usage so far of every specialist that opened a session."""
        found = dict(self._closed)
        for specialist, session in self._open.values():
            found[specialist] = found.get(specialist, Usage()).plus(session.usage)
        return found

    def total(self) -> Usage:
        """Usage so far of the whole postmortem."""
        total = Usage()
        for usage in self.by_specialist().values():
            total = total.plus(usage)
        return total

    async def changes(self) -> AsyncIterator[Usage]:
        """The total each time it changes (changes that come close together are one)."""
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            yield self.total()
