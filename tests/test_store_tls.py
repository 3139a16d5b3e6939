"""A PostgreSQL store over TLS (issue 29 item 8; docs/store.md, "TLS"): the URL's
`sslmode=verify-full&sslrootcert=CA` reaches the driver, the connection is encrypted
and the server's certificate (self-signed CA, made by `.ci/run`) is verified, and a
certificate from another CA is refused in one line, the password never shown.

`ACTIVE_MEMORY_TEST_POSTGRES_TLS` is that URL (`.ci/run` turns `ssl=on` on its cluster
with a certificate it generates with openssl); without it the tests start a cluster of
their own with `ssl=on` and a CA made the same way (tests/pg_cluster.py), and skip only
without PostgreSQL's binaries (failing with `CI=true`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import pytest
from conftest import _admin, with_database
from pg_cluster import Cluster

from active_memory.errors import StoreUnavailable
from active_memory.store import SessionEnd, open_store

pytestmark = pytest.mark.postgres

TLS_ENV = "ACTIVE_MEMORY_TEST_POSTGRES_TLS"
CLI = Path(sys.executable).with_name("active-memory")


def _openssl(*argv: str) -> None:
    subprocess.run(["openssl", *argv], check=True, capture_output=True, timeout=60)


def _certificates(folder: Path) -> None:
    """A CA of its own and a server certificate it signed for localhost and 127.0.0.1."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
             "/CN=active-memory test CA", "-keyout", str(folder / "ca.key"),
             "-out", str(folder / "ca.crt"))  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
             "-keyout", str(folder / "server.key"), "-out", str(folder / "server.csr"))  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", str(folder / "server.csr"), "-CA", str(folder / "ca.crt"),
             "-CAkey", str(folder / "ca.key"), "-CAcreateserial", "-days", "1",
             "-extfile", str(folder / "san.ext"), "-out", str(folder / "server.crt"))  # fmt: skip
    (folder / "server.key").chmod(0o600)


@contextlib.contextmanager
def own_tls_server() -> Iterator[str]:
    """A cluster of the test's own with `ssl=on`: its verify-full URL."""
    cluster = Cluster()
    _certificates(cluster.root)
    if cluster.user:  # PostgreSQL reads its key as the cluster's user, and only 0600
        for name in ("server.key", "server.crt"):
            shutil.chown(cluster.root / name, cluster.user)
    cluster.options = ("-c", "ssl=on", "-c", f"ssl_cert_file={cluster.root / 'server.crt'}",
                       "-c", f"ssl_key_file={cluster.root / 'server.key'}")  # fmt: skip
    with cluster:
        yield with_query(cluster.url, sslmode="verify-full",
                         sslrootcert=str(cluster.root / "ca.crt"))  # fmt: skip


@pytest.fixture
def tls_url() -> Iterator[str]:
    server = os.environ.get(TLS_ENV, "")
    if not server:
        with own_tls_server() as url:
            yield url  # the database `postgres` of a cluster no other test uses
        return
    name = f"am_tls_{uuid.uuid4().hex[:12]}"
    anyio.run(_admin, server, f'CREATE DATABASE "{name}"', backend="asyncio")
    try:
        yield with_database(server, name)
    finally:
        anyio.run(_admin, server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
                  backend="asyncio")  # fmt: skip


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query)) | changes
    return urlunsplit(parts._replace(query=urlencode(query)))


def test_the_store_connects_over_verified_tls(tls_url: str) -> None:
    import asyncpg

    query = dict(parse_qsl(urlsplit(tls_url).query))
    assert query["sslmode"] == "verify-full" and Path(query["sslrootcert"]).is_file()

    async def use() -> tuple[list[str], bool]:
        async with open_store(tls_url) as store:
            await store.queue.enqueue(SessionEnd("claude", "tls-1", "", "/w", "SessionEnd"))
            listed = [e.session_id for e in await store.queue.entries()]
        conn = await asyncpg.connect(tls_url)
        try:
            encrypted = await conn.fetchval(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
            )
        finally:
            await conn.close()
        return listed, bool(encrypted)

    listed, encrypted = anyio.run(use, backend="asyncio")
    assert listed == ["tls-1"] and encrypted


def test_a_certificate_of_another_ca_is_refused_in_one_line(tls_url: str, tmp_path: Path) -> None:
    other = tmp_path / "other-ca.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=not the server's CA", "-keyout", str(tmp_path / "other.key"),
         "-out", str(other)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    wrong = with_query(tls_url, sslrootcert=str(other))

    async def use() -> None:
        async with open_store(wrong):
            pass

    with pytest.raises(StoreUnavailable, match="certificate verify failed"):
        anyio.run(use, backend="asyncio")
    done = subprocess.run([str(CLI), "lessons", "list", "--store", wrong], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    password = urlsplit(tls_url).password or "(none)"
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "certificate verify failed" in done.stderr and password not in done.stderr
