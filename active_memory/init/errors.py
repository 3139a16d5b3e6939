"""The two ways `init` says no: bad input or usage (exit 2), a stop before publishing (1)."""

from __future__ import annotations

from active_memory.errors import ActiveMemoryError, UsageError


class InitRefused(UsageError):
    """The call cannot proceed as asked (a bad folder, a conflicting resume, a busy
    session, a stale or malformed answer); `reason` says what to do instead."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class InitStopped(ActiveMemoryError):
    """Publication stopped because a selected checkout changed or vanished; nothing
    was published."""

    def __init__(self, checkout: str, reason: str) -> None:
        super().__init__(f"{checkout}: {reason}; nothing was published")
        self.checkout = checkout
        self.reason = reason
