"""The recall server's shared secret: random, in a file only its owner can read."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from active_memory.atomic_files import write_atomically
from active_memory.errors import UsageError

_TOKEN_BYTES = 32


class TokenFileError(UsageError):
    """The token file exists but cannot be used (unreadable, empty, or readable by others)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def read_token(path: Path) -> str | None:
    """The token in `path`, or None when the file is missing, unreadable or empty."""
    from active_memory.reader import read_file_bytes

    try:
        text = (read_file_bytes(path, 4096) or b"").decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def load_or_create_token(path: Path) -> str:
    """The token in `path`; a new random one (written 0600, atomically) if there is none.

    An existing file that group or others may read is refused: a token anyone on the
    machine can read protects nothing.
    """
    if path.exists():
        if os.name == "posix" and path.stat().st_mode & 0o077:
            raise TokenFileError(
                path, "readable by other users; run `chmod 600` on it or delete it"
            )
        token = read_token(path)
        if token is None:
            raise TokenFileError(path, "empty or unreadable; delete it to get a new token")
        return token
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    # Written 0600 from the start, then linked into place: no moment where the token is
    # readable by others, and two starters agree on one token.
    try:
        write_atomically(path, token + "\n", mode=0o600, replace=False)
    except FileExistsError:
        # Another process created it first: use theirs.
        existing = read_token(path)
        if existing is None:
            raise TokenFileError(path, "empty or unreadable; delete it") from None
        return existing
    return token
