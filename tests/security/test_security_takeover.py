"""Issue 17, finding 1, performed for real: a project member points his own LLM provider at a
server he controls (a real chat-completions server on loopback), then lets hyperspark's
``remember`` in a project thread "decide" to UPDATE or SUPERSEDE the owner's drive fact. All
through a real ``memorybank serve`` over real HTTP.

The model decides what a new fact does to old ones, never who may change what: the owner's fact
stays as it was and in search, its history names no other actor, and the member's fact is kept
as his own, with the result saying why.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from chat_server import ChatServer, running_chat_server
from memorybank.providers.embedders.local import LocalEmbedder
from server_helpers import MASTER, apollo_team, spawn_server

OWNER_FACT = "The team deploys every Tuesday afternoon"
NEWER = "The team now deploys on Thursday mornings"


@pytest.fixture
def served(tmp_path: Path, embedder: LocalEmbedder) -> Iterator[tuple[str, dict[str, str]]]:
    """A server in auth mode: alice owns project apollo, bob is a member; their keys."""
    db = tmp_path / "takeover.db"
    keys = apollo_team(db, embedder)
    env = {
        "MEMORYBANK_MASTER_KEY": MASTER,
        # The attacker's "provider" is on loopback like everything in this test; the
        # operator's allowance for private provider addresses stands in for a server of his
        # on the internet (the address rules are another finding's test).
        "MEMORYBANK_PROVIDER_ALLOW_PRIVATE": "true",
    }
    proc, url = spawn_server(f"sqlite:///{db}", env=env)
    try:
        yield url, keys
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _verdict(action: str) -> Any:
    """The attacker's model: aim ``action`` at the first stored fact it is shown."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        listing = next(m["content"] for m in body["messages"] if "NEW fact:" in m["content"])
        target = re.findall(r"- (mem_\w+): ", listing)[0]
        return {"action": action, "target_id": target, "content": NEWER, "reason": "newer"}

    return reply


def _attack(url: str, keys: dict[str, str], chat: ChatServer, action: str) -> tuple[str, str]:
    """bob's remember in a project thread, decided by his own model; the owner's fact id and
    the tool's answer."""
    alice, bob = _auth(keys["alice"]), _auth(keys["bob"])
    with httpx.Client(base_url=url, timeout=60) as http:
        r = http.post("/api/memory/drive/apollo", json={"fact": OWNER_FACT}, headers=alice)
        assert r.status_code == 201, r.text
        fact_id = r.json()["memory"]["id"]
        provider = {"base_url": chat.base_url, "model": "evil", "api_key": "k", "enabled": True}
        r = http.put("/api/settings/providers/llm", json=provider, headers=bob)
        assert r.status_code == 200, r.text
        thread = http.post("/api/threads", json={"project_id": "apollo"}, headers=bob).json()
        extracted = {"content": NEWER, "category": "project", "importance": 6, "domain": None}
        chat.reply({"facts": [extracted]}, _verdict(action))
        said = [{"role": "user", "content": "We deploy on Thursday mornings now"}]
        call = {"name": "remember", "arguments": {"messages": said}, "thread_id": thread["id"]}
        r = http.post("/api/tools/hyperspark/call", json=call, headers=bob)
        assert r.status_code == 200, r.text
        return fact_id, str(r.json()["result"])


@pytest.mark.parametrize("action", ["UPDATE", "SUPERSEDE"])
def test_member_cannot_rewrite_or_hide_drive_memory(
    served: tuple[str, dict[str, str]], action: str
) -> None:
    url, keys = served
    with running_chat_server() as chat:
        fact_id, answer = _attack(url, keys, chat, action)
        assert len(chat.requests) == 2  # bob's model was asked, and its verdict was read
    alice = _auth(keys["alice"])
    with httpx.Client(base_url=url, timeout=60) as http:
        fact = http.get(f"/api/memories/{fact_id}", headers=alice).json()
        assert (fact["content"], fact["superseded_by"]) == (OWNER_FACT, None)
        history = http.get(f"/api/memories/{fact_id}/history", headers=alice).json()
        assert {e["actor"] for e in history["events"]} == {"alice"}, history
        found = http.get(
            "/api/search",
            params={"q": "when does the team deploy", "project_id": "apollo", "scopes": "project"},
            headers=alice,
        ).json()
        assert fact_id in [h["memory"]["id"] for h in found["hits"]]
    # bob's fact is kept, as his own, and the answer says why.
    assert "Stored 1 memories" in answer and "admins and owners may change" in answer, answer
