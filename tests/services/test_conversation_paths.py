"""The same extraction wherever a chat comes in (issue 46): the ``remember`` tool (seed 003's,
as a model calls it and as MCP serves it), the REST tool endpoint, the LangGraph store and
mem0's ``add(messages)`` all hand the chat to ``services/conversations``, so each keeps the
facts ``remember_conversation`` keeps, and no raw assistant turn becomes a fact."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient

from mcp_helpers import served
from memorybank import MemoryBank, tools
from memorybank.compat.mem0 import Memory as Mem0Memory
from memorybank.integrations.langgraph import MemoryBankStore
from memorybank.model import Caller
from memorybank.services.conversations import remember_conversation
from memorybank.stores.sqlite import SQLiteStore
from newcomer_chat import CHAT
from server_helpers import LOOPBACK_PEER, make_world
from shared_embedder import SharedEmbedder


def _facts(bank: MemoryBank, user: str) -> set[str]:
    """The facts the user's chat left (not its turns)."""
    return {m.content for m in bank.list(user, limit=100, source=["user", "ai"])}


@pytest.fixture
def expected(tmp_path: Path, embedder: SharedEmbedder) -> set[str]:
    with MemoryBank(
        SQLiteStore(tmp_path / "direct.db", dimension=embedder.dimension), embedder
    ) as bank:
        remember_conversation(bank, Caller(user_id="ana"), CHAT)
        found = _facts(bank, "ana")
    assert found
    return found


def test_the_remember_tool(bank: MemoryBank, expected: set[str]) -> None:
    seed_003 = tools.profile("hyperspark")
    answer = tools.call(bank, seed_003, "remember", {"messages": CHAT}, Caller(user_id="ana"))
    assert str(answer).startswith(f"Stored {len(expected)} memories"), answer
    assert _facts(bank, "ana") == expected


def test_the_rest_tool_endpoint(bank: MemoryBank, expected: set[str]) -> None:
    world = make_world(bank)
    with TestClient(world.app, client=LOOPBACK_PEER) as client:
        r = client.post(
            "/api/tools/hyperspark/call",
            json={"name": "remember", "arguments": {"messages": CHAT}},
            headers=world.auth("member"),
        )
    assert r.status_code == 200, r.text
    assert _facts(bank, "member") == expected


def test_the_langgraph_store(bank: MemoryBank, expected: set[str]) -> None:
    store = MemoryBankStore(bank)
    store.put(("users", "ana", "chats"), "first", {"messages": CHAT})
    item = json.dumps({"messages": CHAT}, ensure_ascii=False, sort_keys=True)
    assert _facts(bank, "ana") - {item} == expected
    # The item stays whole for get, and out of the store's query searches: its JSON holds
    # the assistant's words too.
    assert store.get(("users", "ana", "chats"), "first").value == {"messages": CHAT}  # type: ignore[union-attr]
    found = store.search(("users", "ana"), query="where do we live?")
    assert all(item.key != "first" for item in found)


def test_mem0s_add(bank: MemoryBank, expected: set[str]) -> None:
    memory = Mem0Memory(bank)
    added = memory.add(CHAT, user_id="ana")
    assert {r["memory"] for r in added["results"] if r["event"] == "ADD"} >= expected
    assert _facts(bank, "ana") == expected
    said_by_assistant = {m["content"] for m in CHAT if m["role"] == "assistant"}
    assert not said_by_assistant & _facts(bank, "ana")


@pytest.mark.slow
def test_mcp(tmp_path: Path, embedder: SharedEmbedder, expected: set[str]) -> None:
    db = tmp_path / "mcp.db"

    async def main() -> None:
        async with served(db, "ana", profile="hyperspark") as client:
            await client.call_tool("remember", {"messages": CHAT})

    anyio.run(main)
    with MemoryBank(SQLiteStore(db, dimension=embedder.dimension), embedder) as bank:
        assert _facts(bank, "ana") == expected
