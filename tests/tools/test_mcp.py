"""The MCP server, driven by the MCP SDK's own client.

Most tests spawn ``python -m memorybank.cli mcp`` over stdio exactly as an MCP host would, on a
temporary SQLite database; one serves :func:`memorybank.mcp.mcp_http_app` with uvicorn on
127.0.0.1 and connects over streamable HTTP.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client
from starlette.requests import Request

from mcp_helpers import TIMEOUT_S, _json, _run, _text, _url, served
from memorybank import MemoryBank, tools
from memorybank.mcp import mcp_http_app, to_content
from memorybank.tools import Caller

# -- stdio ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_each_profile_lists_exactly_its_tools(tmp_path: Path) -> None:
    listed: dict[str, list[dict[str, Any]]] = {}
    instructions: dict[str, str | None] = {}

    async def list_one(name: str) -> None:
        async with served(tmp_path / f"{name}.db", "alice", profile=name) as client:
            result = await client.list_tools()
            listed[name] = [
                tool.model_dump(by_alias=True, exclude_none=True) for tool in result.tools
            ]
            instructions[name] = client.instructions

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for name in tools.PROFILE_NAMES:
                tg.start_soon(list_one, name)

    _run(main)
    assert set(listed) == set(tools.PROFILE_NAMES)
    for name in tools.PROFILE_NAMES:
        profile = tools.profile(name)
        assert [t["name"] for t in listed[name]] == [t.name for t in profile.tools], name
        # Our schemas, not ones the SDK inferred.
        assert listed[name] == tools.to_mcp(profile), name
        assert instructions[name] == (profile.guidance or None), name


@pytest.mark.slow
def test_default_profile_save_search_delete_round_trip(tmp_path: Path) -> None:
    db = tmp_path / "memories.db"

    async def main() -> None:
        async with served(db, "alice") as client:
            saved = await client.call_tool(
                "remember", {"fact": "User prefers Neovim", "category": "preference"}
            )
            assert not saved.is_error
            body = _json(saved)
            assert body["success"] is True
            memory_id = body["id"]

            found = _json(await client.call_tool("recall", {"query": "which editor?"}))
            assert found["success"] is True
            assert [f["id"] for f in found["facts"]] == [memory_id]
            assert found["facts"][0]["fact"] == "User prefers Neovim"

            forgot = await client.call_tool("forget", {"id": memory_id})
            assert not forgot.is_error
            assert _json(forgot) == {"success": True, "id": memory_id}

            after = _json(await client.call_tool("recall", {"query": "which editor?"}))
            assert after == {"success": True, "facts": []}

    _run(main)


@pytest.mark.slow
def test_bad_calls_are_error_results_not_crashes(tmp_path: Path) -> None:
    async def main() -> None:
        async with served(tmp_path / "memories.db", "alice") as client:
            missing = await client.call_tool("recall", {})
            assert missing.is_error
            body = _json(missing)
            assert body["success"] is False
            assert "query" in body["error"]

            unknown = await client.call_tool("recal", {"query": "x"})
            assert unknown.is_error
            assert "remember, recall, forget" in _json(unknown)["error"]

            gone = await client.call_tool("forget", {"id": "mem_does_not_exist"})
            assert gone.is_error
            assert _json(gone)["success"] is False

            # The server is still serving after the errors.
            ok = await client.call_tool("recall", {"query": "anything"})
            assert not ok.is_error

    _run(main)


@pytest.mark.slow
def test_two_users_on_one_database_cannot_see_each_other(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"

    async def main() -> None:
        async with served(db, "alice") as alice, served(db, "bob") as bob:
            saved = _json(
                await alice.call_tool(
                    "remember", {"fact": "User's cat is named Miso", "category": "relationship"}
                )
            )
            alice_id = saved["id"]

            seen_by_bob = _json(await bob.call_tool("recall", {"query": "cat name Miso"}))
            assert seen_by_bob == {"success": True, "facts": []}

            stolen = await bob.call_tool("forget", {"id": alice_id})
            assert stolen.is_error

            bob_fact = _json(await bob.call_tool("remember", {"fact": "User's cat is Tom"}))
            seen_by_alice = _json(await alice.call_tool("recall", {"query": "cat"}))
            assert [f["id"] for f in seen_by_alice["facts"]] == [alice_id]
            assert bob_fact["id"] not in json.dumps(seen_by_alice)

    _run(main)


@pytest.mark.slow
def test_env_vars_and_legacy_handshake(tmp_path: Path) -> None:
    """Configured through MEMORYBANK_MCP_* only, and reached by a pre-2026 (initialize) client;
    hyperspark's text results come back as they are."""
    env = {"MEMORYBANK_MCP_PROFILE": "hyperspark", "MEMORYBANK_MCP_PROJECT": "apollo"}
    db = tmp_path / "memories.db"

    async def main() -> None:
        async with served(db, "carol", mode="legacy", env=env) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names == [t.name for t in tools.profile("hyperspark").tools]
            result = await client.call_tool("recall", {"query": "anything at all"})
            assert not result.is_error
            assert not _text(result).lstrip().startswith("{")

    _run(main)


@pytest.mark.slow
def test_stdout_carries_nothing_but_the_protocol(tmp_path: Path) -> None:
    """A client that connects and leaves at once gets not a single byte on stdout."""
    command = [sys.executable, "-m", "memorybank.cli", "mcp", "--user", "a"]
    done = subprocess.run(
        [*command, "--db", _url(tmp_path / "m.db")],
        input="",
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


@pytest.mark.slow
def test_unknown_profile_fails_on_stderr_only(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memorybank.cli", "mcp", "--user", "a", "--profile", "nope"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={"MEMORYBANK_URL": _url(tmp_path / "m.db"), "PATH": ""},
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "unknown tool profile 'nope'" in done.stderr


# -- in-process -------------------------------------------------------------------------------


def test_to_content_shapes() -> None:
    ok = to_content({"success": True, "facts": []})
    assert not ok.is_error
    assert json.loads(_text(ok)) == {"success": True, "facts": []}
    failed = to_content({"success": False, "error": "nope"})
    assert failed.is_error
    text = to_content("[mem_1] [fact] likes tea")
    assert _text(text) == "[mem_1] [fact] likes tea"
    assert not text.is_error


# -- streamable HTTP --------------------------------------------------------------------------


@contextmanager
def uvicorn_in_thread(app: Any) -> Iterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def test_streamable_http_app_uses_the_request_for_context(bank: MemoryBank) -> None:
    def ctx_of(request: Request | None) -> Caller:
        assert request is not None
        return Caller(user_id=request.headers["x-test-user"])

    app = mcp_http_app(bank, "oxydra", ctx_of)

    async def main(url: str) -> None:
        async with httpx2.AsyncClient(headers={"x-test-user": "dora"}) as http:
            transport = _streamable_http(url, http)
            async with Client(transport, read_timeout_seconds=TIMEOUT_S) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                assert names == [t.name for t in tools.profile("oxydra").tools]
                saved = await client.call_tool("memory_save", {"content": "User lives in Lisbon"})
                assert not saved.is_error, _text(saved)
                missing = await client.call_tool("memory_search", {})
                assert missing.is_error

    with uvicorn_in_thread(app) as url:
        _run(main, url)
    # Saved for the user the request named, through the same bank.
    assert [m.content for m in bank.list("dora")] == ["User lives in Lisbon"]
    assert bank.list("alice") == []


def _streamable_http(url: str, http: httpx2.AsyncClient) -> Any:
    from mcp.client.streamable_http import streamable_http_client

    return streamable_http_client(url, http_client=http)
