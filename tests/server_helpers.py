"""Shared setup of the server tests: an app over a real bank with accounts."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx
from fastapi import FastAPI

from memorybank import MemoryBank
from memorybank.providers.embedders.base import Embedder
from memorybank.server.app import create_app
from memorybank.services.accounts import Accounts
from memorybank.settings import Settings
from memorybank.stores.sqlite import SQLiteStore

MASTER = "test-master-key-not-a-secret"


@dataclass
class World:
    """An app with users owner/admin/member/outsider, project apollo, and their keys."""

    app: FastAPI
    accounts: Accounts
    keys: dict[str, str] = field(default_factory=dict)

    def auth(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[user]}"}


def bank_url(bank: MemoryBank) -> str:
    """The database URL of a bank on SQLite or PostgreSQL."""
    from memorybank.stores.postgres import PostgresStore

    if isinstance(bank.store, PostgresStore):
        return bank.store.url
    return f"sqlite:///{bank.store.path}"  # type: ignore[attr-defined]


#: The Host header of Starlette's TestClient, allowed by name in the apps tests build (the
#: product answers only to loopback names and ``MEMORYBANK_ALLOWED_HOSTS``).
TEST_HOSTS = ["testserver"]

#: A TestClient peer on loopback, for ``/metrics`` (which answers only to this machine).
LOOPBACK_PEER = ("127.0.0.1", 50000)


def settings_for(bank: MemoryBank, **more: object) -> Settings:
    more = {"allowed_hosts": TEST_HOSTS, **more}
    return Settings(url=bank_url(bank), master_key=MASTER, **more)  # type: ignore[arg-type]


def stored_bytes(bank: MemoryBank) -> bytes:
    """Everything the database holds on disk that a leak could hide in: the SQLite file and
    its WAL, or every row of every PostgreSQL table as text."""
    from memorybank.stores.postgres import PostgresStore

    if isinstance(bank.store, PostgresStore):
        import psycopg

        with psycopg.connect(bank.store.url) as conn:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                ).fetchall()
            ]
            dump = [
                str(conn.execute(f"SELECT string_agg(t::text, '|') FROM {t} AS t").fetchone())
                for t in tables
            ]
        return "\n".join(dump).encode()
    path = Path(bank.store.path)  # type: ignore[attr-defined]
    wal = Path(f"{path}-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def make_world(bank: MemoryBank, *, users: bool = True, **more: object) -> World:
    settings = settings_for(bank, **more)
    accounts = Accounts.open(bank, settings)
    world = World(app=create_app(bank, accounts, settings), accounts=accounts)
    if users:
        for user in ("owner", "admin", "member", "outsider"):
            accounts.create_user(user, name=user.title())
            world.keys[user] = accounts.create_key(user)[1]
        accounts.create_project("apollo", owner="owner", name="Apollo")
        accounts.add_member("apollo", "admin", "admin")
        accounts.add_member("apollo", "member", "member")
    return world


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawn_server(
    db_url: str,
    port: int | None = None,
    *,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> tuple[subprocess.Popen[bytes], str]:
    """A real ``memorybank serve`` subprocess in local mode on ``db_url`` (write and read
    rate limits lifted; more ``args`` and ``env`` if given), once it answers ``/healthz``: the
    process and its base URL."""

    port = port or free_port()
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "memorybank"), "serve", "--port", str(port)]
        + ["--db", db_url, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={
            **os.environ,
            "MEMORYBANK_AI_WRITE_RATE_PER_MINUTE": "1000000",
            "MEMORYBANK_READ_RATE_PER_MINUTE": "1000000",
            **(env or {}),
        },
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"the server exited on its own ({proc.returncode})"
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the server did not come up")
        time.sleep(0.05)


#: Headers and the ``initialize`` request of an MCP client over streamable HTTP (``/mcp``).
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
MCP_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def apollo_team(db: Path, embedder: Embedder) -> dict[str, str]:
    """A database at ``db`` in auth mode: alice owns project apollo, bob is a member; their
    keys (master key :data:`MASTER`). The bank is closed again, for a server to open."""
    bank = MemoryBank(SQLiteStore(db, dimension=embedder.dimension), embedder)
    accounts = Accounts.open(bank, Settings(url=f"sqlite:///{db}", master_key=MASTER))
    keys = {}
    for user in ("alice", "bob"):
        accounts.create_user(user, name=user.title())
        keys[user] = accounts.create_key(user)[1]
    accounts.create_project("apollo", owner="alice", name="Apollo")
    accounts.add_member("apollo", "bob", "member")
    bank.store.close()
    return keys


@contextmanager
def serving_at(app: FastAPI) -> Iterator[str]:
    """``app`` under uvicorn on a loopback port (its lifespan running, the webhook worker
    too): a real server over real HTTP, in this process. Yields its base URL."""
    import socket
    import threading

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws="none"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@contextmanager
def serving(app: FastAPI) -> Iterator[httpx.Client]:
    """:func:`serving_at`, and an HTTP client for the server."""
    with serving_at(app) as base, httpx.Client(base_url=base, timeout=60) as client:
        yield client


class Poster(Protocol):
    def post(self, url: str, *, json: Any = ..., headers: Any = ...) -> Any: ...


class Mcp:
    """An MCP client over streamable HTTP: one session, ``tools/call`` as JSON-RPC posts."""

    def __init__(self, http: Poster, headers: dict[str, str] | None = None) -> None:
        self.http = http
        base = {**MCP_HEADERS, **(headers or {})}
        opened = http.post("/mcp", json=MCP_INIT, headers=base)
        assert opened.status_code == 200, opened.text
        self.headers = {**base, "mcp-session-id": opened.headers["mcp-session-id"]}
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post("/mcp", json=done, headers=self.headers).status_code == 202
        self.ids = itertools.count(10)

    def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC answer to one request: ``{"result": …}`` or ``{"error": …}``."""
        request = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        response = self.http.post("/mcp", json=request, headers=self.headers)
        assert response.status_code == 200, response.text
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        assert len(data) == 1, response.text[:300]
        answer: dict[str, Any] = json.loads(data[0])
        return answer

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """(``isError``, the tool's JSON answer)."""
        result = self.rpc("tools/call", {"name": name, "arguments": arguments})["result"]
        value: dict[str, Any] = json.loads(result["content"][0]["text"])
        assert result["isError"] == (value.get("success") is False), result
        return result["isError"], value
