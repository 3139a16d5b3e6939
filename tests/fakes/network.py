"""A guard that makes any connection off this machine fail the test (like pydantic-ai's
ALLOW_MODEL_REQUESTS = False): loopback and Unix sockets only.

The SDKs turn a refused connection into their own connection error, which a session may
well report as a clean failure; so every attempt is also recorded, and `check()` (run by
the fixture at teardown) fails the test if there was one.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class StrayRequest(AssertionError):
    """A test tried to reach a host that is not this machine."""


class NetworkGuard:
    """Patches socket connect and name lookup; remembers every refused attempt."""

    def __init__(self) -> None:
        self.refused: list[str] = []

    def _refuse(self, what: str) -> StrayRequest:
        self.refused.append(what)
        return StrayRequest(f"a test tried to reach {what}; only loopback is allowed")

    def _check_host(self, host: object) -> None:
        if host is None or (isinstance(host, str | bytes) and _is_local(host)):
            return
        raise self._refuse(repr(host))

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_connect = socket.socket.connect
        real_connect_ex = socket.socket.connect_ex
        real_getaddrinfo = socket.getaddrinfo

        def connect(sock: socket.socket, address: Any) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                self._check_host(address[0])
            real_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                self._check_host(address[0])
            return real_connect_ex(sock, address)

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            self._check_host(host)
            return real_getaddrinfo(host, *args, **kwargs)

        monkeypatch.setattr(socket.socket, "connect", connect)
        monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    def check(self) -> None:
        """Fail if any stray request was attempted."""
        if self.refused:
            raise StrayRequest("stray requests were attempted: " + ", ".join(self.refused))


def _is_local(host: str | bytes) -> bool:
    name = host.decode() if isinstance(host, bytes) else host
    if name.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False
