"""Who may use the web view: the server's token, a one-time login link, a session cookie.

- `active-memory ui` prints a login link holding a one-time code (random, valid once, for
  `LOGIN_CODE_SECONDS`). Opening it starts a session: a random ID in an HttpOnly,
  SameSite=Strict cookie, kept in memory only (a restart logs everyone out).
- `POST /login` with the server's token (`hooks/token.py`'s file) also starts a session,
  for when the link was already used.
- Scripts call `/api/...` with `Authorization: Bearer <server token>`; no cookie.
- Every write is a form POST carrying the session's CSRF token (a hidden field), compared
  in constant time; a cookie alone never writes.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass, field

COOKIE = "am_ui_session"
LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]", "::1"]
"""Host headers accepted: a page reached under any other name (DNS rebinding) is refused."""
LOGIN_CODE_SECONDS = 600
SESSION_SECONDS = 12 * 3600


@dataclass
class Session:
    """One logged-in browser."""

    csrf: str
    expires: float


@dataclass
class Gate:
    """The token, the pending login codes and the live sessions of one web view."""

    token: str
    codes: dict[str, float] = field(default_factory=dict)
    sessions: dict[str, Session] = field(default_factory=dict)

    def new_login_code(self) -> str:
        """A code for one login link, valid once for `LOGIN_CODE_SECONDS`."""
        code = secrets.token_urlsafe(24)
        self.codes[code] = time.monotonic() + LOGIN_CODE_SECONDS
        return code

    def redeem_code(self, code: str) -> bool:
        """True (and the code is spent) when `code` is a live login code."""
        now = time.monotonic()
        for known, expires in list(self.codes.items()):
            if expires < now:
                del self.codes[known]
            elif hmac.compare_digest(known.encode(), code.encode()):
                del self.codes[known]
                return True
        return False

    def token_matches(self, candidate: str) -> bool:
        """True when `candidate` is the server's token."""
        return hmac.compare_digest(self.token.encode(), candidate.strip().encode())

    def open_session(self) -> str:
        """A new session's ID (for the cookie)."""
        sid = secrets.token_urlsafe(32)
        self.sessions[sid] = Session(
            csrf=secrets.token_urlsafe(32), expires=time.monotonic() + SESSION_SECONDS
        )
        return sid

    def session(self, sid: str | None) -> Session | None:
        """The live session with this cookie value, or None."""
        if not sid:
            return None
        found = self.sessions.get(sid)
        if found is None:
            return None
        if found.expires < time.monotonic():
            del self.sessions[sid]
            return None
        return found

    def close_session(self, sid: str | None) -> None:
        """Log a browser out."""
        if sid:
            self.sessions.pop(sid, None)

    def bearer_ok(self, header: str | None) -> bool:
        """True for `Authorization: Bearer <the server's token>`."""
        if not header or not header.startswith("Bearer "):
            return False
        return self.token_matches(header[len("Bearer ") :])


def loopback_host_header(headers: list[tuple[bytes, bytes]]) -> bool:
    """True when the request's Host header names this machine by a loopback name (its
    port aside): what a page reached under another name (DNS rebinding) never sends."""
    hosts = [value for name, value in headers if name == b"host"]
    if len(hosts) != 1:
        return False
    host = hosts[0].decode("latin-1")
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name in LOOPBACK_NAMES


def csrf_ok(session: Session, submitted: object) -> bool:
    """True when the form's CSRF field is this session's token."""
    if not isinstance(submitted, str) or not submitted:
        return False
    return hmac.compare_digest(session.csrf.encode(), submitted.encode())
