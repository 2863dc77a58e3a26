"""The default profile in a project: ``remember`` offers ``scope`` only then (issue 18), so the
definitions without a project stay the cheapest; project saves obey issue 9's permissions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memorybank import MemoryBank
from memorybank.tools import (
    Caller,
    call,
    profile,
    to_anthropic,
    to_mcp,
    to_openai,
    token_cost,
    toolkit,
)
from memorybank.tools.profiles.default import IN_PROJECT, PROFILE
from server_helpers import LOOPBACK_PEER, World, make_world

DEFAULT = profile("default")
PRIVATE = Caller(user_id="uma")
IN_ATLAS = Caller(user_id="uma", project_id="atlas", role="member")


def run(bank: MemoryBank, caller: Caller, **args: Any) -> Any:
    return call(bank, DEFAULT, "remember", args, caller)


def remember_schema(caller: Caller) -> dict[str, Any]:
    schema: dict[str, Any] = to_anthropic(toolkit(DEFAULT, caller))[0]["input_schema"]
    return schema


def test_without_a_project_the_definitions_are_unchanged() -> None:
    assert toolkit(DEFAULT, PRIVATE) is PROFILE
    assert list(remember_schema(PRIVATE)["properties"]) == ["fact", "category", "id"]
    for fmt in ("openai", "anthropic", "mcp"):
        assert token_cost(toolkit(DEFAULT, PRIVATE), fmt) == token_cost(DEFAULT, fmt)


def test_with_a_project_remember_takes_a_scope() -> None:
    assert toolkit(DEFAULT, IN_ATLAS) is IN_PROJECT
    schema = remember_schema(IN_ATLAS)
    assert list(schema["properties"]) == ["fact", "category", "id", "scope"]
    assert schema["properties"]["scope"]["enum"] == ["user", "project"]
    assert schema["required"] == ["fact"]
    strict = to_openai(toolkit(DEFAULT, IN_ATLAS))[0]["function"]["parameters"]
    assert strict["required"] == ["fact", "category", "id", "scope"]
    assert token_cost(IN_PROJECT, "openai") > token_cost(DEFAULT, "openai")
    off = Caller(user_id="uma", project_id="atlas", memory_enabled=False)
    assert toolkit(DEFAULT, off).tools == ()


def test_a_project_save_lands_in_the_project_and_recall_finds_it(bank: MemoryBank) -> None:
    out = run(
        bank, IN_ATLAS, fact="Atlas deploys every Friday", category="project", scope="project"
    )
    assert out["success"] is True, out
    memory = bank.get(out["id"], "uma", project_id="atlas")
    assert memory.project_id == "atlas" and memory.source.value == "ai"
    assert bank.count("uma", scopes="user") == 0
    assert bank.count("uma", project_id="atlas", scopes="project") == 1
    # Another member of the project sees it; recall in the project finds it.
    assert bank.count("vic", project_id="atlas", scopes="project") == 1
    facts = call(bank, DEFAULT, "recall", {"query": "when does Atlas deploy"}, IN_ATLAS)["facts"]
    assert facts[0] == {"id": out["id"], "fact": "Atlas deploys every Friday"}


def test_user_scope_and_strict_nulls_stay_private(bank: MemoryBank) -> None:
    out = run(bank, IN_ATLAS, fact="User prefers tea", category=None, id=None, scope=None)
    assert out["success"] is True, out
    assert bank.get(out["id"], "uma").project_id is None
    assert run(bank, IN_ATLAS, fact="User likes jazz", scope="user")["success"] is True
    assert bank.count("uma", scopes="user") == 2


def test_scope_is_refused_without_a_project(bank: MemoryBank) -> None:
    out = run(bank, PRIVATE, fact="Atlas deploys every Friday", scope="project")
    assert out["success"] is False and "scope" in out["error"]
    assert bank.count("uma", scopes="user") == 0


@pytest.fixture
def world(bank: MemoryBank) -> World:
    return make_world(bank)


@pytest.fixture
def client(world: World) -> Iterator[TestClient]:
    with TestClient(world.app, client=LOOPBACK_PEER) as c:
        yield c


def test_rest_definitions_and_call_for_a_project_thread(client: TestClient, world: World) -> None:
    h = world.auth("member")
    plain = client.get("/api/tools/default", params={"format": "anthropic"}, headers=h).json()
    assert "scope" not in plain["tools"][0]["input_schema"]["properties"]
    thread = client.post("/api/threads", json={"project_id": "apollo"}, headers=h).json()
    params = {"format": "anthropic", "thread_id": thread["id"]}
    defs = client.get("/api/tools/default", params=params, headers=h).json()
    assert "scope" in defs["tools"][0]["input_schema"]["properties"]
    assert defs["token_cost"] > plain["token_cost"]
    r = client.post(
        "/api/tools/default/call",
        json={
            "name": "remember",
            "arguments": {"fact": "The team ships on Fridays", "scope": "project"},
            "thread_id": thread["id"],
        },
        headers=h,
    )
    assert r.status_code == 200 and r.json()["result"]["success"] is True, r.text
    listed = client.get("/api/memory/drive/apollo", headers=world.auth("owner")).json()
    assert [m["content"] for m in listed["memories"]] == ["The team ships on Fridays"]
    assert listed["memories"][0]["source"] == "ai"


@pytest.mark.slow
def test_mcp_in_a_project_lists_and_saves_with_scope(tmp_path: Path) -> None:
    from mcp_helpers import _json, _run, served

    listed: list[dict[str, Any]] = []
    saved: dict[str, Any] = {}

    async def main() -> None:
        async with served(tmp_path / "m.db", "alice", project="atlas") as client:
            result = await client.list_tools()
            listed.extend(t.model_dump(by_alias=True, exclude_none=True) for t in result.tools)
            args = {"fact": "Atlas deploys every Friday", "scope": "project"}
            saved.update(_json(await client.call_tool("remember", args)))

    _run(main)
    assert listed == to_mcp(IN_PROJECT)
    assert saved["success"] is True, saved
