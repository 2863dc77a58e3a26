"""The server for real: uvicorn on a loopback port, MCP over streamable HTTP, BYOK at rest,
and the `serve` / `admin` commands."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from memorybank import MemoryBank
from memorybank.cli import app as cli_app
from server_helpers import (
    MCP_HEADERS,
    MCP_INIT,
    World,
    make_world,
    serving_at,
    spawn_server,
    stored_bytes,
)

PROVIDER_KEY = "sk-byok-PLAINTEXT-0123456789abcd"


@pytest.fixture
def world(any_bank: MemoryBank) -> World:
    # The BYOK test's provider is on 127.0.0.1: users' providers may use it only when allowed.
    return make_world(any_bank, provider_allow_private=True)


@pytest.fixture
def base_url(world: World) -> Iterator[str]:
    with serving_at(world.app) as base:
        yield base


def test_real_server_round_trip(base_url: str, world: World) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        assert client.get("/healthz").json()["status"] == "ok"
        assert client.get("/api/memory/user").status_code == 401
        h = world.auth("owner")
        saved = client.post("/api/memory/user", json={"fact": "I prefer dark mode"}, headers=h)
        assert saved.status_code == 201
        listed = client.get("/api/memory/user", headers=h).json()
        assert listed["count"] == 1
        assert client.get("/api/memory/user", headers=world.auth("outsider")).json()["count"] == 0


def test_mcp_needs_the_same_auth(base_url: str, world: World) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        refused = client.post("/mcp", json=MCP_INIT, headers=MCP_HEADERS)
        assert refused.status_code == 401 and "error" in refused.json()
        ok = client.post("/mcp", json=MCP_INIT, headers={**MCP_HEADERS, **world.auth("owner")})
        assert ok.status_code == 200, ok.text
        assert "memorybank" in ok.text


def test_byok_key_encrypted_never_returned_never_logged(
    world: World, any_bank: MemoryBank, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    h = world.auth("owner")
    with TestClient(world.app) as client:
        check = client.post("/api/providers/llm/check", headers=h).json()
        assert check["success"] is False and "no LLM provider" in check["error"]
        put = client.put(
            "/api/settings/providers/llm",
            json={"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": PROVIDER_KEY},
            headers=h,
        )
        assert put.status_code == 200
        assert put.json() == {
            "kind": "llm",
            "base_url": "http://127.0.0.1:9/v1",
            "model": "m",
            "enabled": True,
            "key_set": True,
            "key_hint": "…abcd",
        }
        listed = client.get("/api/settings/providers", headers=h)
        assert PROVIDER_KEY not in listed.text and listed.json()[0]["key_set"] is True
        assert client.get("/api/settings/providers", headers=world.auth("admin")).json() == []
        # the key is used (decrypted) for the call, and the failure does not echo it
        failing = client.post("/api/providers/llm/check", headers=h)
        assert failing.json()["success"] is False and PROVIDER_KEY not in failing.text
        # disable without resending the key, then rotate
        off = client.put(
            "/api/settings/providers/llm",
            json={"base_url": "http://127.0.0.1:9/v1", "model": "m", "enabled": False},
            headers=h,
        )
        assert off.json()["enabled"] is False and off.json()["key_set"] is True
        assert client.post("/api/providers/llm/check", headers=h).json()["success"] is False
        bad = client.put(
            "/api/settings/providers/llm", json={"base_url": "ftp://x", "model": "m"}, headers=h
        )
        assert bad.status_code == 422
        assert (
            client.put(
                "/api/settings/providers/other",
                json={"base_url": "http://x", "model": "m"},
                headers=h,
            ).status_code
            == 404
        )
        stored = world.accounts.provider("owner", "llm")
        assert stored is not None and world.accounts.provider_secret(stored) == PROVIDER_KEY
        raw = stored_bytes(any_bank)
        cipher = stored.key_ciphertext
        assert cipher is not None and (cipher in raw or cipher.hex().encode() in raw)
        assert PROVIDER_KEY.encode() not in raw
        assert client.delete("/api/settings/providers/llm", headers=h).status_code == 204
        assert client.delete("/api/settings/providers/llm", headers=h).status_code == 404
    assert PROVIDER_KEY not in caplog.text


def test_master_key_file_created_private(bank: MemoryBank, tmp_path: Path) -> None:
    from memorybank.services.accounts import load_master_key
    from memorybank.settings import Settings

    key_file = tmp_path / "home" / "master.key"
    key = load_master_key(Settings(home=tmp_path / "home"))
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert load_master_key(Settings(home=tmp_path / "home")) == key


# -- the commands -----------------------------------------------------------------------------


def test_serve_refuses_non_loopback_without_users(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli_app,
        ["serve", "--host", "0.0.0.0", "--db", f"sqlite:///{tmp_path / 'x.db'}"],
        env={"MEMORYBANK_HOME": str(tmp_path)},
    )
    assert result.exit_code == 2
    assert "local mode" in result.output and "create-user" in result.output


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_admin_commands(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    if backend == "postgres":
        db = request.getfixturevalue("postgres_db_url")
    else:
        db = f"sqlite:///{tmp_path / 'x.db'}"
    env = {"MEMORYBANK_HOME": str(tmp_path)}
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(cli_app, ["admin", *args, "--db", db], env=env)
        assert result.exit_code == 0, result.output
        return result.output

    run("create-user", "alice", "--name", "Alice", "--org", "acme", "--org-role", "admin")
    run("create-user", "bob")
    run("create-project", "apollo", "--owner", "alice", "--name", "Apollo")
    run("add-member", "apollo", "bob", "--role", "member")
    out = run("create-key", "bob", "--label", "laptop", "--json")
    assert '"key": "mb_' in out
    key_id = out.split('"key_id": "')[1].split('"')[0]
    run("revoke-key", key_id)
    again = runner.invoke(cli_app, ["admin", "revoke-key", key_id, "--db", db], env=env)
    assert again.exit_code == 3
    dup = runner.invoke(cli_app, ["admin", "create-user", "bob", "--db", db], env=env)
    assert dup.exit_code == 2 and "exists" in dup.output


@pytest.mark.slow
def test_serve_with_two_workers(tmp_path: Path) -> None:
    """`serve --workers 2`: two processes answer on one port over one database, and each
    worker reads what the other wrote."""
    proc, base = spawn_server(
        f"sqlite:///{tmp_path / 'w.db'}",
        args=["--workers", "2"],
        env={"MEMORYBANK_HOME": str(tmp_path)},
        timeout=90,
    )
    try:
        workers = psutil.Process(proc.pid).children(recursive=True)
        assert len([w for w in workers if "python" in w.name().lower()]) >= 2
        facts = [
            "User keeps a bonsai tree on the balcony",
            "User waters the bonsai every Sunday morning",
            "User bought a new bonsai pot made of clay",
            "User's bonsai is a Japanese maple",
            "User wants to learn bonsai wiring techniques",
            "User repotted the bonsai in April",
        ]
        ids = []
        for fact in facts:  # fresh connections: the kernel spreads them over both workers
            response = httpx.post(base + "/api/memory/user", json={"fact": fact})
            assert response.status_code == 201, response.text
            ids.append(response.json()["memory"]["id"])
        for memory_id in ids:
            assert httpx.get(f"{base}/api/memories/{memory_id}").status_code == 200
        hits = httpx.get(base + "/api/search", params={"q": "bonsai", "limit": 10}).json()
        assert {h["memory"]["id"] for h in hits["hits"]} == set(ids)
    finally:
        proc.terminate()
        proc.wait(30)
    assert proc.returncode == 0
