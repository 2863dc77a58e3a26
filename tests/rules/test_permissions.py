"""Seed 002's permission table (``memorybank.rules.permissions.PROJECT_ROLES``), row by row, through
every adapter that can reach project memory: the library, the tools, the REST API; and MCP,
which reaches the caller's private memory only.

Each row says which roles may do an action in a project; every test derives what it expects
from the table itself, so the table is the one statement of the rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from chat_server import running_chat_server
from memorybank import MemoryBank, PermissionDenied
from memorybank.model import Caller, Memory, Role, Source
from memorybank.providers.llm.client import ChatClient
from memorybank.rules.permissions import PROJECT_ROLES, Action, adding, allowed, require
from memorybank.services import transfer
from memorybank.services.conversations import remember_conversation
from memorybank.services.forget import forget_confirm, forget_preview
from memorybank.tools import call, profile
from server_helpers import MCP_HEADERS, MCP_INIT, World, make_world

ROLES: tuple[Role, ...] = ("owner", "admin", "member")
PROJECT = "apollo"


def may(role: Role, action: Action) -> bool:
    return role in PROJECT_ROLES[action]


def test_the_table_is_seed_002s() -> None:
    """Members see and their AI adds; only admins and owners add by hand or change."""
    assert {a: sorted(r) for a, r in PROJECT_ROLES.items()} == {
        Action.VIEW: ["admin", "member", "owner"],
        Action.ADD_AI: ["admin", "member", "owner"],
        Action.ADD_MANUAL: ["admin", "owner"],
        Action.CHANGE: ["admin", "owner"],
    }
    assert allowed(None, Action.CHANGE)  # the host application itself
    require("member", Action.CHANGE, None)  # private memory is always the caller's own
    assert adding(Source.USER) == adding(Source.IMPORT) == Action.ADD_MANUAL
    assert adding(Source.AI) == adding(Source.CONVERSATION) == Action.ADD_AI


# -- the library ------------------------------------------------------------------------------


def _project_fact(bank: MemoryBank, text: str = "The team deploys every Tuesday") -> Memory:
    saved = bank.save("owner", text, "project", project_id=PROJECT, source=Source.USER)
    assert saved.memory is not None
    return saved.memory


def _outcome(action: Callable[[], object]) -> bool:
    """Whether ``action`` was allowed (it ran) or refused with PermissionDenied."""
    try:
        action()
    except PermissionDenied:
        return False
    return True


@pytest.mark.parametrize("role", ROLES)
def test_library_add(bank: MemoryBank, role: Role) -> None:
    ai = bank.save("u", "The team uses Python 3.12", "project", project_id=PROJECT, role=role)
    assert ai.success is may(role, Action.ADD_AI)
    by_hand = _outcome(
        lambda: bank.save(
            "u",
            "The team ships on Fridays",
            "project",
            project_id=PROJECT,
            role=role,
            source=Source.USER,
        )
    )
    assert by_hand is may(role, Action.ADD_MANUAL)
    exported = transfer.export(bank, "owner", project_id=PROJECT)
    imported = _outcome(
        lambda: transfer.import_(bank, "other", exported, project_id="zeus", role=role)
    )
    assert imported is may(role, Action.ADD_MANUAL)


@pytest.mark.parametrize("role", ROLES)
def test_library_change(bank: MemoryBank, role: Role) -> None:
    fact = _project_fact(bank)
    newer = _project_fact(bank, "The team deploys every Thursday now")
    expected = may(role, Action.CHANGE)
    in_project: dict[str, Any] = {"project_id": PROJECT, "role": role}
    attempts: list[Callable[[], object]] = [
        lambda: bank.update(fact.id, role, content="The team deploys on Mondays", **in_project),
        lambda: bank.supersede(fact.id, newer.id, role, **in_project),
        lambda: bank.delete_many([newer.id], role, **in_project),
        lambda: bank.delete(fact.id, role, **in_project),
        lambda: bank.clear(role, PROJECT, role=role),
    ]
    assert [_outcome(a) for a in attempts] == [expected] * len(attempts)
    left = bank.count("owner", project_id=PROJECT, scopes="project")
    assert left == (0 if expected else 2)


@pytest.mark.parametrize("role", ROLES)
def test_library_view(bank: MemoryBank, role: Role) -> None:
    fact = _project_fact(bank)
    assert may(role, Action.VIEW)
    assert bank.get(fact.id, role, project_id=PROJECT).id == fact.id
    assert [h.memory.id for h in bank.search(role, "deploys", project_id=PROJECT)] == [fact.id]


@pytest.mark.parametrize("role", ROLES)
def test_library_forget_plan(bank: MemoryBank, role: Role) -> None:
    _project_fact(bank, "The team's staging server is on Oak Street")
    caller = Caller(user_id=role, project_id=PROJECT, role=role)
    plan = forget_preview(bank, caller, "staging server Oak Street").plan
    assert _outcome(lambda: forget_confirm(bank, caller, plan.id)) is may(role, Action.CHANGE)


@pytest.mark.parametrize("role", ROLES)
def test_members_private_memory_is_theirs_in_a_project_too(bank: MemoryBank, role: Role) -> None:
    """A change that reaches only the caller's private memory needs no project role."""
    saved = bank.save(role, "User prefers tea", "preference", role=role)
    assert saved.memory_id is not None
    bank.update(saved.memory_id, role, content="User prefers green tea", role=role)
    bank.delete(saved.memory_id, role, role=role)


# -- the tools --------------------------------------------------------------------------------


def _tool(bank: MemoryBank, role: Role, name: str, arguments: dict[str, Any], **how: Any) -> Any:
    caller = Caller(user_id=role, project_id=PROJECT, role=role)
    chosen = profile(how.pop("profile", "default"))
    return call(bank, chosen, name, arguments, caller, **how)


@pytest.mark.parametrize("role", ROLES)
def test_tools_add_to_the_project(bank: MemoryBank, role: Role) -> None:
    arguments = {"fact": "The team uses Drizzle ORM", "scope": "drive"}
    result = _tool(bank, role, "save_memory", arguments, profile="pagespace")
    assert result["success"] is may(role, Action.ADD_AI), result


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("default", {"name": "forget", "id": "FACT"}),
        ("default", {"name": "remember", "id": "FACT", "fact": "The team deploys on Mondays"}),
        ("pagespace", {"name": "remove_memory", "factId": "FACT", "scope": "drive"}),
    ],
)
def test_tools_change_the_project(
    bank: MemoryBank, role: Role, tool: str, arguments: dict[str, str]
) -> None:
    fact = _project_fact(bank)
    args = {k: fact.id if v == "FACT" else v for k, v in arguments.items()}
    name = args.pop("name")
    result = _tool(bank, role, name, args, profile=tool)
    assert result["success"] is may(role, Action.CHANGE), result
    if not may(role, Action.CHANGE):
        assert "owners and admins" in result["error"]
        with pytest.raises(PermissionDenied):
            _tool(bank, role, name, args, profile=tool, raise_role_required=True)
    still = bank.get(fact.id, "owner", project_id=PROJECT) if not result["success"] else None
    assert still is None or still.content == fact.content


@pytest.mark.parametrize("role", ROLES)
def test_remember_never_rewrites_project_memory_for_a_member(bank: MemoryBank, role: Role) -> None:
    """Hyperspark's remember (messages → LLM → UPDATE) ends in the same check, whatever the
    caller's own model (a real chat-completions server on loopback) decides."""
    fact = _project_fact(bank, "The team deploys every Tuesday afternoon")
    newer = "The team now deploys on Thursday mornings"

    def update(body: dict[str, Any]) -> dict[str, Any]:
        return {"action": "UPDATE", "target_id": fact.id, "content": newer, "reason": "newer"}

    caller = Caller(user_id=role, project_id=PROJECT, role=role)
    said = [{"role": "user", "content": "We deploy on Thursday mornings now"}]
    with running_chat_server() as chat, ChatClient(chat.base_url, "m", max_retries=0) as llm:
        fact_ = {"content": newer, "category": "project", "importance": 6, "domain": None}
        chat.reply({"facts": [fact_]}, update)
        result = remember_conversation(bank, caller, said, llm=llm)
    now = bank.get(fact.id, "owner", project_id=PROJECT).content
    if may(role, Action.CHANGE):
        assert [u.memory_id for u in result.updated] == [fact.id] and now == newer, result
    else:
        # The project's fact is untouched; the new fact is the member's own, and said so.
        assert not result.updated and now == fact.content
        assert [(m.content, m.project_id) for m in result.stored] == [(newer, None)]
        assert any("admins and owners may change" in w for w in result.warnings), result


# -- the REST API -----------------------------------------------------------------------------


@pytest.fixture
def world(bank: MemoryBank) -> World:
    return make_world(bank)  # owner, admin and member of apollo


@pytest.fixture
def client(world: World) -> Iterator[TestClient]:
    # The MCP endpoint answers loopback hosts only (DNS-rebinding protection).
    with TestClient(world.app, base_url="http://127.0.0.1:8000") as c:
        yield c


def _status(allowed_: bool, ok: int) -> int:
    return ok if allowed_ else 403


@pytest.mark.parametrize("role", ROLES)
def test_rest_rows(client: TestClient, world: World, role: Role) -> None:
    h = world.auth(role)
    owner = world.auth("owner")

    def drive_fact(text: str) -> str:
        r = client.post(f"/api/memory/drive/{PROJECT}", json={"fact": text}, headers=owner)
        assert r.status_code == 201, r.text
        return str(r.json()["memory"]["id"])

    first = drive_fact("The team deploys every Tuesday afternoon")
    r = client.get(f"/api/memory/drive/{PROJECT}", headers=h)
    assert r.status_code == 200 and r.json()["count"] == 1
    r = client.post(f"/api/memory/drive/{PROJECT}", json={"fact": "The team uses Rust"}, headers=h)
    assert r.status_code == _status(may(role, Action.ADD_MANUAL), 201), r.text
    r = client.patch(
        f"/api/memories/{first}", json={"content": "The team deploys on Mondays"}, headers=h
    )
    assert r.status_code == _status(may(role, Action.CHANGE), 200), r.text
    thread = client.post("/api/threads", json={"project_id": PROJECT}, headers=h).json()["id"]
    call_ = {"name": "forget", "arguments": {"id": first}, "thread_id": thread}
    r = client.post("/api/tools/default/call", json=call_, headers=h)
    assert r.status_code == _status(may(role, Action.CHANGE), 200), r.text
    second = drive_fact("The team's office is in Leeds")
    r = client.delete(f"/api/memory/drive/{second}", headers=h)
    assert r.status_code == _status(may(role, Action.CHANGE), 204), r.text


# -- MCP: the caller's private memory only ----------------------------------------------------


def test_mcp_reaches_private_memory_only(client: TestClient, world: World) -> None:
    """The MCP endpoint's caller has no project: a member's forget there can never reach the
    project's memory, whatever id the model names; their own private memory is theirs."""
    owner, member = world.auth("owner"), world.auth("member")
    fact_id = client.post(
        f"/api/memory/drive/{PROJECT}",
        json={"fact": "The team deploys on Tuesdays"},
        headers=owner,
    ).json()["memory"]["id"]
    own_id = client.post(
        "/api/memory/user", json={"fact": "User prefers green tea"}, headers=member
    ).json()["memory"]["id"]
    opened = client.post("/mcp", json=MCP_INIT, headers={**MCP_HEADERS, **member})
    headers = {**MCP_HEADERS, **member, "mcp-session-id": opened.headers["mcp-session-id"]}
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert client.post("/mcp", json=done, headers=headers).status_code == 202

    def forget(memory_id: str) -> Any:
        body = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "forget", "arguments": {"id": memory_id}},
        }
        r = client.post("/mcp", json=body, headers=headers)
        assert r.status_code == 200, r.text
        data = [line[5:] for line in r.text.splitlines() if line.startswith("data:")]
        return json.loads(json.loads(data[0])["result"]["content"][0]["text"])

    assert forget(fact_id)["success"] is False
    assert client.get(f"/api/memories/{fact_id}", headers=owner).status_code == 200
    assert forget(own_id)["success"] is True
    assert client.get(f"/api/memories/{own_id}", headers=member).status_code == 404
