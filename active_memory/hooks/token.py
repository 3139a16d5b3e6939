"""The recall server's shared secret: random, in a file only its owner can read."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

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
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    # Write under a private temporary name created 0600, then link it into place: no
    # moment where the token is readable by others, and two starters agree on one token.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            # Another process created it first: use theirs.
            existing = read_token(path)
            if existing is None:
                raise TokenFileError(path, "empty or unreadable; delete it") from None
            return existing
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
    return token
