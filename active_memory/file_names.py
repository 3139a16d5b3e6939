"""A file name for any key: what recall's state files and the settings cache are named by.

Imports only `zlib`, which the hook process loads anyway (recall files are named by it).
"""

from __future__ import annotations

import zlib

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
MAX_NAME = 120


def safe_name(key: str) -> str:
    """A file name for `key`: safe characters kept, others `%XX`-escaped, never `.`/`..`.

    Distinct keys give distinct names (the escaping is reversible); a very long key is
    cut and suffixed with two checksums of the whole.
    """
    out: list[str] = []
    for ch in key:
        if ch in _SAFE and ch != "%":
            out.append(ch)
        else:
            out.extend(f"%{byte:02X}" for byte in ch.encode("utf-8"))
    name = "".join(out)
    if name in ("", ".", ".."):
        name = "%" + name.replace(".", "%2E")
    if len(name) > MAX_NAME:
        data = key.encode("utf-8")
        name = f"{name[:90]}~{zlib.crc32(data):08x}{zlib.adler32(data):08x}"
    return name
