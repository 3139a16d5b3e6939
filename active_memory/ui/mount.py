"""The web view inside `active-memory serve`, under `/ui/`.

The recall server is a raw ASGI app tuned for hook calls; it hands every request under
`UI_PREFIX` to this mount and nothing else. The mount imports Starlette and Jinja2 and
opens the store only at its first request, so a server that only answers hooks never
pays for them (time or memory). The Starlette app sees the prefix as its ASGI
`root_path`: its links, forms, redirects and cookie path all start with it.

Login is the web view's own (docs/ui.md): the `Gate` is made by `serve` at start, so the
one-time link `serve` prints works before the app exists.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from active_memory.ui.auth import Gate, loopback_host_header

UI_PREFIX = "/ui"
"""Where `serve` mounts the web view."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

log = logging.getLogger("active_memory.server")


def under_prefix(path: str) -> bool:
    """True for `/ui` and every path below it."""
    return path == UI_PREFIX or path.startswith(UI_PREFIX + "/")


class WebMount:
    """An ASGI app that builds the web view (and opens its store) at its first request."""

    def __init__(self, location: str, gate: Gate, checkouts: Sequence[Path] = ()) -> None:
        self.location = location
        self.gate = gate
        self.checkouts = tuple(checkouts)
        self._app: Any = None
        self._lock: anyio.Lock | None = None
        self._stack: contextlib.AsyncExitStack | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request under the prefix (`/ui` itself redirects to `/ui/`)."""
        if not loopback_host_header(scope["headers"]):
            await _plain(send, 400, b"Invalid host header\n")
            return
        if scope["path"] == UI_PREFIX:
            await _plain(send, 308, b"", [(b"location", f"{UI_PREFIX}/".encode())])
            return
        try:
            app = await self._started()
        except Exception as exc:  # the libraries missing, the store missing or broken
            message = " ".join(str(exc).split()) or type(exc).__name__
            log.warning("web view unavailable: %s", message)
            await _plain(send, 503, f"web view unavailable: {message}\n".encode())
            return
        inner = dict(scope)
        inner["root_path"] = str(scope.get("root_path", "")) + UI_PREFIX
        await app(inner, receive, send)

    async def _started(self) -> Any:
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._app is None:
                try:
                    from active_memory.ui.app import create_app
                except ImportError:
                    from active_memory.install_source import extra_command

                    raise RuntimeError(
                        f"its libraries are missing: {extra_command('server')}"
                    ) from None
                app = create_app(self.location, self.gate, checkouts=self.checkouts)
                stack = contextlib.AsyncExitStack()
                # The app's lifespan (the store, open for the server's lifetime) is
                # entered here, at first use, and left by `aclose` at shutdown.
                await stack.enter_async_context(app.router.lifespan_context(app))
                self._stack, self._app = stack, app
        return self._app

    async def aclose(self) -> None:
        """Close the store if the view was ever used."""
        stack, self._stack, self._app = self._stack, None, None
        if stack is not None:
            await stack.aclose()


async def _plain(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
