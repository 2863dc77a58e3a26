"""The minimal HTTP app, served for real by uvicorn on a loopback port and called with httpx."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from typer.testing import CliRunner

from memorybank import MemoryBank
from memorybank.cli import app as cli_app
from memorybank.server.app import create_app


@pytest.fixture
def base_url(bank: MemoryBank) -> Iterator[str]:
    """The app over ``bank``, served by uvicorn in a thread on a free 127.0.0.1 port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(bank), log_level="warning", ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=10) as c:
        yield c


def test_healthz(client: httpx.Client, bank: MemoryBank) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "memories": 0}
    bank.save("alice", "I prefer dark mode", "preference")
    assert client.get("/healthz").json() == {"status": "ok", "memories": 1}


def test_each_user_sees_only_their_own(client: httpx.Client, bank: MemoryBank) -> None:
    bank.save("alice", "I prefer dark mode", "preference")
    bank.save("alice", "User lives in Lisbon with two cats", "identity")
    bank.save("bob", "User prefers light mode in every editor", "preference")

    alice = client.get("/api/memories", params={"user_id": "alice"}).json()
    assert alice["count"] == 2
    assert {m["content"] for m in alice["memories"]} == {
        "User prefers dark mode",
        "User lives in Lisbon with two cats",
    }
    assert all(m["user_id"] == "alice" for m in alice["memories"])

    bob = client.get("/api/memories", params={"user_id": "bob"}).json()
    assert bob["count"] == 1
    assert [m["content"] for m in bob["memories"]] == ["User prefers light mode in every editor"]

    page = client.get("/api/memories", params={"user_id": "alice", "limit": 1, "offset": 1})
    assert page.status_code == 200
    assert len(page.json()["memories"]) == 1 and page.json()["count"] == 2

    nobody = client.get("/api/memories", params={"user_id": "carol"}).json()
    assert nobody == {"memories": [], "count": 0}


def test_project_scope(client: httpx.Client, bank: MemoryBank) -> None:
    bank.save("alice", "User prefers dark mode", "preference")
    bank.save("alice", "The project uses PostgreSQL 16", "project", project_id="p1")
    both = client.get("/api/memories", params={"user_id": "alice", "project_id": "p1"}).json()
    assert both["count"] == 2
    bob = client.get("/api/memories", params={"user_id": "bob", "project_id": "p1"}).json()
    assert [m["content"] for m in bob["memories"]] == ["The project uses PostgreSQL 16"]


def test_missing_user_id_is_422(client: httpx.Client) -> None:
    response = client.get("/api/memories")
    assert response.status_code == 422
    assert "user_id is required" in response.json()["error"]


def test_bad_paging_is_422(client: httpx.Client) -> None:
    too_big = client.get("/api/memories", params={"user_id": "alice", "limit": 0})
    assert too_big.status_code == 422 and "limit" in too_big.json()["error"]
    not_a_number = client.get("/api/memories", params={"user_id": "alice", "limit": "many"})
    assert not_a_number.status_code == 422 and "limit" in not_a_number.json()["error"]


def test_serve_refuses_non_loopback_hosts() -> None:
    result = CliRunner().invoke(cli_app, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "Error: " in result.stderr
    assert "authentication is not configured" in result.stderr
