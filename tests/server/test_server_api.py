"""The REST API through FastAPI's TestClient: every endpoint, its errors, and seed 002 §6.5."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from memorybank import MemoryBank
from memorybank.providers.embedders.openai import OpenAIEmbedder
from memorybank.server.execution import (
    LOCAL_COMPUTE_THREADS,
    REMOTE_COMPUTE_THREADS,
    compute_threads,
    inline_searches,
)
from memorybank.settings import Settings
from server_helpers import LOOPBACK_PEER, World, make_world, stored_bytes


@pytest.fixture
def world(any_bank: MemoryBank) -> World:
    return make_world(any_bank)


@pytest.fixture
def client(world: World) -> Iterator[TestClient]:
    with TestClient(world.app, client=LOOPBACK_PEER) as c:
        yield c


def add_user_fact(client: TestClient, world: World, user: str, fact: str) -> dict[str, object]:
    r = client.post("/api/memory/user", json={"fact": fact}, headers=world.auth(user))
    assert r.status_code == 201, r.text
    memory: dict[str, object] = r.json()["memory"]
    return memory


def add_drive_fact(client: TestClient, world: World, fact: str, user: str = "owner") -> str:
    r = client.post("/api/memory/drive/apollo", json={"fact": fact}, headers=world.auth(user))
    assert r.status_code == 201, r.text
    return str(r.json()["memory"]["id"])


# -- auth -------------------------------------------------------------------------------------


def test_healthz_and_metrics_need_no_key(client: TestClient) -> None:
    # Issue 17 (finding 8): liveness says nothing about what is stored.
    assert client.get("/healthz").json() == {"status": "ok"}
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert "memorybank_memories_stored" in metrics.text


@pytest.mark.parametrize("header", [None, "Bearer mb_wrong", "Basic abc", "Bearer "])
def test_api_needs_a_valid_key(client: TestClient, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    r = client.get("/api/me", headers=headers)
    assert r.status_code == 401
    assert "error" in r.json()
    assert r.headers["WWW-Authenticate"] == "Bearer"


def test_revoked_key_stops_working(client: TestClient, world: World) -> None:
    key, raw = world.accounts.create_key("owner", label="laptop")
    assert client.get("/api/me", headers={"Authorization": f"Bearer {raw}"}).status_code == 200
    world.accounts.revoke_key(key.id)
    assert client.get("/api/me", headers={"Authorization": f"Bearer {raw}"}).status_code == 401


def test_me(client: TestClient, world: World) -> None:
    world.accounts.add_org_member("acme", "admin", "admin")
    r = client.get("/api/me", headers=world.auth("member")).json()
    assert r == {
        "user_id": "member",
        "name": "Member",
        "mode": "auth",
        "projects": [{"id": "apollo", "name": "Apollo", "role": "member"}],
        "org_admin": False,
    }
    assert client.get("/api/me", headers=world.auth("admin")).json()["org_admin"] is True


def test_me_in_local_mode_lists_every_project_with_memories_as_owner(bank: MemoryBank) -> None:
    """Local mode's one user owns every project: those holding memories are its projects
    (issue 28: the Workspace page said "not in any project" after a project fact was saved)."""
    with TestClient(make_world(bank, users=False).app, client=LOOPBACK_PEER) as local:
        assert local.get("/api/me").json()["projects"] == []
        saved = local.post("/api/memory/drive/apollo", json={"fact": "Apollo deploys on Fridays"})
        assert saved.status_code == 201, saved.text
        bank.save("alice", "Zeus ships weekly", "project", project_id="zeus")
        owner = [{"id": "apollo", "name": "apollo", "role": "owner"}]
        owner.append({"id": "zeus", "name": "zeus", "role": "owner"})
        assert local.get("/api/me").json()["projects"] == owner
        as_alice = local.get("/api/me", headers={"X-Memorybank-User": "alice"}).json()
        assert as_alice["projects"] == owner


def test_api_keys_stored_only_as_hashes(
    client: TestClient, world: World, any_bank: MemoryBank
) -> None:
    raw = world.keys["owner"]
    assert raw.startswith("mb_") and len(raw) > 40
    data = stored_bytes(any_bank)
    assert world.accounts.keys("owner")[0].key_hash.encode() in data
    assert raw.encode() not in data
    assert world.accounts.keys("owner")[0].key_hash != raw


# -- user memory ------------------------------------------------------------------------------


def test_user_memory_crud(client: TestClient, world: World) -> None:
    h = world.auth("owner")
    memory = add_user_fact(client, world, "owner", "I prefer dark mode in every editor")
    assert memory["content"] == "User prefers dark mode in every editor"
    assert memory["source"] == "user"
    listed = client.get("/api/memory/user", headers=h).json()
    assert listed["count"] == 1 and listed["memories"][0]["id"] == memory["id"]
    found = client.get("/api/memory/user", params={"q": "editor theme"}, headers=h).json()
    assert found["memories"][0]["id"] == memory["id"]
    dup = client.post(
        "/api/memory/user", json={"fact": "I prefer dark mode in every editor"}, headers=h
    )
    assert dup.status_code == 409
    assert dup.json()["duplicate"] is True and dup.json()["existing"]["id"] == memory["id"]
    assert client.delete(f"/api/memory/user/{memory['id']}", headers=h).status_code == 204
    assert client.delete(f"/api/memory/user/{memory['id']}", headers=h).status_code == 404
    assert client.get("/api/memory/user", headers=h).json()["count"] == 0


def test_user_memory_bad_input(client: TestClient, world: World) -> None:
    h = world.auth("owner")
    short = client.post("/api/memory/user", json={"fact": "hi"}, headers=h)
    assert short.status_code == 422 and "error" in short.json()
    missing = client.post("/api/memory/user", json={}, headers=h)
    assert missing.status_code == 422 and "fact" in missing.json()["error"]
    broken = client.post(
        "/api/memory/user", content=b"{not json", headers={**h, "Content-Type": "application/json"}
    )
    assert broken.status_code == 400 and broken.json()["error"]
    assert client.get("/api/memory/user", params={"limit": 0}, headers=h).status_code == 422
    # beyond the 64-bit integers the stores bind: a 422, not a 500 (found by schemathesis)
    huge = client.get("/api/memory/drive/apollo", params={"offset": 2**63}, headers=h)
    assert huge.status_code == 422 and "offset" in huge.json()["error"]


def test_second_user_sees_nothing_of_the_first(client: TestClient, world: World) -> None:
    memory = add_user_fact(client, world, "owner", "User lives in Lisbon with two cats")
    other = world.auth("outsider")
    mid = memory["id"]
    assert client.get("/api/memory/user", headers=other).json()["count"] == 0
    assert client.get(f"/api/memories/{mid}", headers=other).status_code == 404
    assert client.get(f"/api/memories/{mid}/history", headers=other).status_code == 404
    assert (
        client.patch(f"/api/memories/{mid}", json={"importance": 3}, headers=other).status_code
        == 404
    )
    assert client.delete(f"/api/memory/user/{mid}", headers=other).status_code == 404
    assert client.delete(f"/api/memory/drive/{mid}", headers=other).status_code == 404
    assert (
        client.get("/api/search", params={"q": "Lisbon cats"}, headers=other).json()["hits"] == []
    )
    assert client.get("/api/recent", headers=other).json()["memories"] == []
    assert "Lisbon" not in client.get("/api/export", headers=other).text
    assert client.get("/api/stats", headers=other).json()["memories"] == 0
    preview = client.post("/api/forget/preview", json={"query": "Lisbon cats"}, headers=other)
    assert preview.json()["steps"] == []
    own = client.post(
        "/api/forget/preview", json={"query": "Lisbon cats"}, headers=world.auth("owner")
    )
    plan = own.json()["plan_id"]
    assert client.post(f"/api/forget/{plan}/confirm", headers=other).status_code == 404
    assert client.get(f"/api/memories/{mid}", headers=world.auth("owner")).status_code == 200


# -- seed 002 §6.5, row by row ----------------------------------------------------------------

VIEW_DRIVE = {"owner": 200, "admin": 200, "member": 200, "outsider": 404}
MANUAL_ADD_DRIVE = {"owner": 201, "admin": 201, "member": 403, "outsider": 404}
DELETE_DRIVE = {"owner": 204, "admin": 204, "member": 403, "outsider": 404}


@pytest.mark.parametrize(("user", "status"), VIEW_DRIVE.items())
def test_drive_view(client: TestClient, world: World, user: str, status: int) -> None:
    add_drive_fact(client, world, "The team chose Zustand over Redux for state")
    r = client.get("/api/memory/drive/apollo", headers=world.auth(user))
    assert r.status_code == status
    if status == 200:
        assert r.json()["count"] == 1 and r.json()["role"] == user
    else:
        assert r.json() == {"error": "no project 'apollo'"}


@pytest.mark.parametrize(("user", "status"), MANUAL_ADD_DRIVE.items())
def test_drive_manual_add(client: TestClient, world: World, user: str, status: int) -> None:
    r = client.post(
        "/api/memory/drive/apollo",
        json={"fact": "The project uses TypeScript with Drizzle ORM"},
        headers=world.auth(user),
    )
    assert r.status_code == status, r.text


@pytest.mark.parametrize(("user", "status"), DELETE_DRIVE.items())
def test_drive_delete(client: TestClient, world: World, user: str, status: int) -> None:
    mid = add_drive_fact(client, world, "The team deploys every Tuesday afternoon")
    r = client.delete(f"/api/memory/drive/{mid}", headers=world.auth(user))
    assert r.status_code == status, r.text
    still = client.get("/api/memory/drive/apollo", headers=world.auth("owner")).json()["count"]
    assert still == (0 if status == 204 else 1)


@pytest.mark.parametrize("user", ["owner", "admin", "member"])
def test_drive_ai_add_for_every_member(client: TestClient, world: World, user: str) -> None:
    thread = client.post("/api/threads", json={"project_id": "apollo"}, headers=world.auth(user))
    assert thread.status_code == 201
    r = client.post(
        "/api/tools/pagespace/call",
        json={
            "name": "save_memory",
            "arguments": {"scope": "drive", "fact": "The team prefers trunk-based development"},
            "thread_id": thread.json()["id"],
        },
        headers=world.auth(user),
    )
    assert r.status_code == 200
    assert r.json()["result"]["success"] is True, r.json()
    listed = client.get("/api/memory/drive/apollo", headers=world.auth("owner")).json()
    assert listed["memories"][0]["source"] == "ai"


def test_drive_ai_add_refused_for_outsider(client: TestClient, world: World) -> None:
    r = client.post("/api/threads", json={"project_id": "apollo"}, headers=world.auth("outsider"))
    assert r.status_code == 404


@pytest.mark.parametrize(("user", "status"), [("member", 403), ("admin", 200), ("owner", 200)])
def test_drive_ai_delete_needs_admin(
    client: TestClient, world: World, user: str, status: int
) -> None:
    mid = add_drive_fact(client, world, "The team deploys every Tuesday afternoon")
    thread = client.post("/api/threads", json={"project_id": "apollo"}, headers=world.auth(user))
    r = client.post(
        "/api/tools/default/call",
        json={"name": "forget", "arguments": {"id": mid}, "thread_id": thread.json()["id"]},
        headers=world.auth(user),
    )
    assert r.status_code == status, r.text


@pytest.mark.parametrize(
    ("user", "arguments", "status"),
    [
        ("member", {"id": "MID", "fact": "The team deploys on Fridays"}, 403),
        ("member", '{"id": "MID", "fact": "The team deploys on Fridays"}', 403),
        ("member", {"fact": "The team uses Python 3.12 everywhere"}, 200),
        ("admin", {"id": "MID", "fact": "The team deploys on Fridays"}, 200),
    ],
)
def test_drive_ai_replace_needs_admin(
    client: TestClient, world: World, user: str, arguments: object, status: int
) -> None:
    """``remember`` with an id edits the fact: in a project, like a manual edit, only for
    admins and owners (a new fact is fine for every member)."""
    mid = add_drive_fact(client, world, "The team deploys every Tuesday afternoon")
    if isinstance(arguments, dict):
        arguments = {k: v.replace("MID", mid) for k, v in arguments.items()}
    else:
        arguments = str(arguments).replace("MID", mid)
    thread = client.post("/api/threads", json={"project_id": "apollo"}, headers=world.auth(user))
    r = client.post(
        "/api/tools/default/call",
        json={"name": "remember", "arguments": arguments, "thread_id": thread.json()["id"]},
        headers=world.auth(user),
    )
    assert r.status_code == status, r.text
    stored = client.get(f"/api/memories/{mid}", headers=world.auth("owner")).json()
    replaced = status == 200 and "id" in str(arguments)
    assert stored["content"] == (
        "The team deploys on Fridays" if replaced else "The team deploys every Tuesday afternoon"
    )


def test_user_memory_rows(client: TestClient, world: World) -> None:
    """User memory: only its owner views, adds (by hand and by AI) and deletes."""
    mine = add_user_fact(client, world, "member", "User is a senior backend engineer")
    ai = client.post(
        "/api/tools/default/call",
        json={"name": "remember", "arguments": {"fact": "I prefer concise answers"}},
        headers=world.auth("member"),
    )
    assert ai.json()["result"]["success"] is True
    listed = client.get("/api/memory/user", headers=world.auth("member")).json()
    assert listed["count"] == 2
    # the project owner has no say over a member's private memory
    assert client.get(f"/api/memories/{mine['id']}", headers=world.auth("owner")).status_code == 404
    assert (
        client.delete(f"/api/memory/user/{mine['id']}", headers=world.auth("owner")).status_code
        == 404
    )


def test_patch_and_history(client: TestClient, world: World) -> None:
    h = world.auth("owner")
    mine = add_user_fact(client, world, "owner", "User prefers tabs over spaces")
    r = client.patch(
        f"/api/memories/{mine['id']}", json={"content": "User prefers spaces over tabs"}, headers=h
    )
    assert r.status_code == 200 and r.json()["content"] == "User prefers spaces over tabs"
    assert (
        client.get(f"/api/memories/{mine['id']}", headers=h)
        .json()["content"]
        .startswith("User prefers spaces")
    )
    events = client.get(f"/api/memories/{mine['id']}/history", headers=h).json()["events"]
    assert [e["kind"] for e in events] == ["add", "update"] or [e["kind"] for e in events] == [
        "ADD",
        "UPDATE",
    ]
    bad = client.patch(f"/api/memories/{mine['id']}", json={"importance": 11}, headers=h)
    assert bad.status_code == 422
    mid = add_drive_fact(client, world, "The team chose Postgres for the main database")
    member = client.patch(
        f"/api/memories/{mid}", json={"importance": 9}, headers=world.auth("member")
    )
    assert member.status_code == 403
    admin = client.patch(
        f"/api/memories/{mid}", json={"importance": 9}, headers=world.auth("admin")
    )
    assert admin.status_code == 200 and admin.json()["importance"] == 9
    assert client.get(f"/api/memories/{mid}", headers=world.auth("member")).status_code == 200
    assert client.get("/api/memories/mem_nope", headers=h).status_code == 404


# -- clear with confirmation ------------------------------------------------------------------


def test_clear_user_memory_with_token(client: TestClient, world: World) -> None:
    h = world.auth("owner")
    add_user_fact(client, world, "owner", "User prefers tabs over spaces")
    add_user_fact(client, world, "owner", "User lives in Lisbon with two cats")
    first = client.post("/api/memories/clear", headers=h).json()
    assert first["count"] == 2 and first["confirm_token"].startswith("ct_")
    token = first["confirm_token"]
    # bound to user and scope
    assert (
        client.post(
            "/api/memories/clear", json={"confirm_token": token}, headers=world.auth("admin")
        ).status_code
        == 422
    )
    assert (
        client.post(
            "/api/memories/projects/apollo/clear", json={"confirm_token": token}, headers=h
        ).status_code
        == 422
    )
    done = client.post("/api/memories/clear", json={"confirm_token": token}, headers=h)
    assert done.json() == {"deleted": 2}
    again = client.post("/api/memories/clear", json={"confirm_token": token}, headers=h)
    assert again.status_code == 422  # single use


def test_clear_drive_memory(client: TestClient, world: World) -> None:
    add_drive_fact(client, world, "The team chose Zustand over Redux for state")
    assert (
        client.post("/api/memories/projects/apollo/clear", headers=world.auth("member")).status_code
        == 403
    )
    assert (
        client.post(
            "/api/memories/projects/apollo/clear", headers=world.auth("outsider")
        ).status_code
        == 404
    )
    token = client.post("/api/memories/projects/apollo/clear", headers=world.auth("admin")).json()[
        "confirm_token"
    ]
    done = client.post(
        "/api/memories/projects/apollo/clear",
        json={"confirm_token": token},
        headers=world.auth("admin"),
    )
    assert done.json() == {"deleted": 1}


def test_clearing_lives_under_api_memories_only(client: TestClient) -> None:
    """Clearing is ours, not seed 002's: its routes are under ``/api/memories`` (the paths
    under ``/api/memory/…`` it had before 0.1.0, never released, are gone)."""
    paths = client.get("/openapi.json").json()["paths"]
    assert "/api/memory/user/clear" not in paths
    assert "/api/memory/drive/{project_id}/clear" not in paths
    assert client.post("/api/memory/user/clear").status_code in (404, 405)
    for ours in ("/api/memories/clear", "/api/memories/projects/{project_id}/clear"):
        assert "deprecated" not in paths[ours]["post"]
    # seed 002's own routes keep their paths, tagged as the seed's
    assert "seed 002" in paths["/api/memory/user"]["get"]["tags"]
    assert "seed 002" in paths["/api/memory/drive/{drive_id}"]["post"]["tags"]


# -- search, recent, export, import, stats -----------------------------------------------------


def test_search_recent_and_org_wide(client: TestClient, world: World) -> None:
    add_user_fact(client, world, "member", "User prefers Rust for systems programming")
    add_drive_fact(client, world, "The project is written in Rust and Python")
    h = world.auth("member")
    hits = client.get(
        "/api/search", params={"q": "Rust", "project_id": "apollo"}, headers=h
    ).json()["hits"]
    assert len(hits) == 2 and {"score", "relevance", "importance", "recency"} <= hits[0].keys()
    only_user = client.get("/api/search", params={"q": "Rust", "scopes": "user"}, headers=h).json()
    assert len(only_user["hits"]) == 1
    assert (
        client.get(
            "/api/search",
            params={"q": "Rust", "project_id": "apollo"},
            headers=world.auth("outsider"),
        ).status_code
        == 404
    )
    assert client.get("/api/search", headers=h).status_code == 422
    recent = client.get(
        "/api/recent", params={"since": "24h", "project_id": "apollo"}, headers=h
    ).json()
    assert recent["count"] == 2
    # seed 003: org-wide only for org admins
    world.accounts.add_org_member("acme", "member", "member")
    world.accounts.add_org_member("acme", "admin", "admin")
    assert (
        client.get("/api/search", params={"q": "Rust", "org_wide": True}, headers=h).status_code
        == 403
    )
    org = client.get(
        "/api/search", params={"q": "Rust", "org_wide": True}, headers=world.auth("admin")
    )
    assert org.status_code == 200
    assert [hit["memory"]["user_id"] for hit in org.json()["hits"]] == ["member"]


def test_export_import_and_stats(client: TestClient, world: World) -> None:
    h = world.auth("owner")
    add_user_fact(client, world, "owner", "User prefers tabs over spaces")
    exported = client.get("/api/export", headers=h)
    assert exported.headers["content-disposition"].startswith("attachment;")
    md = client.get("/api/export", params={"format": "markdown"}, headers=h)
    assert "tabs" in md.text
    assert 'filename="memorybank-owner.md"' in md.headers["content-disposition"]
    assert md.headers["content-disposition"].endswith("filename*=UTF-8''memorybank-owner.md")
    assert client.get("/api/export", params={"format": "xml"}, headers=h).status_code == 422
    r = client.post("/api/import", content=exported.content, headers=world.auth("admin"))
    assert r.json().items() >= {"imported": 1, "skipped": 0}.items()
    assert (
        client.post("/api/import", content=exported.content, headers=world.auth("admin"))
        .json()
        .items()
        >= {"imported": 0, "skipped": 1}.items()
    )
    assert (
        client.post(
            "/api/import",
            content=exported.content,
            params={"project_id": "apollo"},
            headers=world.auth("member"),
        ).status_code
        == 403
    )
    assert client.post("/api/import", content=b"[1,2]", headers=h).status_code == 422
    stats = client.get("/api/stats", headers=world.auth("admin")).json()
    assert stats["memories"] == 1
    assert stats["projects"] == [{"id": "apollo", "name": "Apollo", "role": "admin", "memories": 0}]


# -- forget ------------------------------------------------------------------------------------


def test_forget_preview_confirm_cancel(client: TestClient, world: World) -> None:
    h = world.auth("owner")
    add_user_fact(client, world, "owner", "User lives at 123 Oak Street in Springfield")
    add_user_fact(client, world, "owner", "User prefers tabs over spaces")
    preview = client.post(
        "/api/forget/preview", json={"query": "my address on Oak Street"}, headers=h
    ).json()
    assert preview["plan_id"].startswith("fp_") and preview["text"]
    actions = {s["content"]: s["action"] for s in preview["steps"]}
    assert actions["User lives at 123 Oak Street in Springfield"] == "FORGET"
    done = client.post(f"/api/forget/{preview['plan_id']}/confirm", headers=h).json()
    assert done["forgotten"] == 1
    assert client.post(f"/api/forget/{preview['plan_id']}/confirm", headers=h).status_code == 422
    second = client.post("/api/forget/preview", json={"query": "tabs spaces"}, headers=h).json()
    assert client.post(f"/api/forget/{second['plan_id']}/cancel", headers=h).json() == {
        "cancelled": True
    }
    assert client.post("/api/forget/fp_unknown/cancel", headers=h).status_code == 404
    assert (
        client.post(
            "/api/forget/preview",
            json={"query": "x", "project_id": "apollo"},
            headers=world.auth("member"),
        ).status_code
        == 403
    )


def test_forget_preview_of_an_old_job(client: TestClient, world: World) -> None:
    """Issue 28 through REST (what the UI's Forget tab calls): a fact about the user's own
    work at Globex is planned for deletion; their sister's job and their laptop are kept."""
    h = world.auth("owner")
    job = ["User used to work at Globex as a backend developer", "User left Globex in 2023"]
    others = ["User's sister works at Globex", "User bought a Globex laptop"]
    for fact in [*job, *others]:
        add_user_fact(client, world, "owner", fact)
    preview = client.post(
        "/api/forget/preview",
        json={"query": "forget everything about my old job at Globex"},
        headers=h,
    ).json()
    steps = {s["content"]: (s["action"], s["reason"]) for s in preview["steps"]}
    assert {fact: steps[fact][0] for fact in [*job, *others]} == {
        **dict.fromkeys(job, "FORGET"),
        **dict.fromkeys(others, "KEEP"),
    }
    assert steps["User's sister works at Globex"][1] == (
        "mentions 'globex' of someone else (User's sister)"
    )
    done = client.post(f"/api/forget/{preview['plan_id']}/confirm", headers=h).json()
    assert done["forgotten"] == 2


# -- threads, tools, prompt --------------------------------------------------------------------


def test_threads_and_disabled_memory(client: TestClient, world: World) -> None:
    h = world.auth("member")
    thread = client.post(
        "/api/threads", json={"title": "Chat", "memory_enabled": False}, headers=h
    ).json()
    assert thread["memory_enabled"] is False and thread["project_id"] is None
    assert client.get("/api/threads", headers=h).json()["threads"][0]["id"] == thread["id"]
    assert client.get("/api/threads", headers=world.auth("owner")).json()["threads"] == []
    call = client.post(
        "/api/tools/default/call",
        json={"name": "recall", "arguments": {"query": "x"}, "thread_id": thread["id"]},
        headers=h,
    )
    assert call.status_code == 409 and "turned off" in call.json()["error"]
    on = client.patch(
        f"/api/threads/{thread['id']}",
        json={"memory_enabled": True, "project_id": "apollo"},
        headers=h,
    )
    assert on.json()["memory_enabled"] is True and on.json()["project_id"] == "apollo"
    assert (
        client.patch(
            f"/api/threads/{thread['id']}", json={"title": "x"}, headers=world.auth("owner")
        ).status_code
        == 404
    )
    assert (
        client.patch(
            f"/api/threads/{thread['id']}", json={"project_id": "nope"}, headers=h
        ).status_code
        == 404
    )


def test_tool_definitions_and_calls(client: TestClient, world: World) -> None:
    h = world.auth("owner")
    defs = client.get("/api/tools/default", params={"format": "anthropic"}, headers=h).json()
    assert defs["profile"] == "default" and defs["token_cost"] > 0
    assert [t["name"] for t in defs["tools"]] == ["remember", "recall", "forget"]
    assert client.get("/api/tools/nope", headers=h).status_code == 404
    assert client.get("/api/tools/default", params={"format": "xml"}, headers=h).status_code == 422
    saved = client.post(
        "/api/tools/default/call",
        json={
            "name": "remember",
            "arguments": json.dumps({"fact": "I prefer dark mode", "category": "preference"}),
        },
        headers=h,
    ).json()
    assert saved["result"]["success"] is True
    bad = client.post(
        "/api/tools/default/call", json={"name": "recall", "arguments": {}}, headers=h
    )
    assert bad.json()["result"]["success"] is False
    assert (
        client.post(
            "/api/tools/default/call", json={"name": "recall", "thread_id": "thr_x"}, headers=h
        ).status_code
        == 404
    )
    prompt = client.get("/api/prompt", params={"budget": 1000}, headers=h).json()
    assert "dark mode" in prompt["prompt"] and 0 < prompt["tokens"] <= 1000


# -- limits ------------------------------------------------------------------------------------


def test_request_size_limit(bank: MemoryBank) -> None:
    world = make_world(bank, max_request_bytes=2048)
    with TestClient(world.app) as client:
        big = client.post(
            "/api/memory/user", json={"fact": "x" * 5000}, headers=world.auth("owner")
        )
        assert big.status_code == 413 and "limit" in big.json()["error"]

        def chunks() -> Iterator[bytes]:
            yield b'{"fact": "'
            yield b"x" * 4000
            yield b'"}'

        streamed = client.post(
            "/api/import",
            content=chunks(),
            headers={**world.auth("owner"), "Content-Type": "application/json"},
        )
        assert streamed.status_code == 413


def test_ai_write_rate_limit(bank: MemoryBank) -> None:
    world = make_world(bank, ai_write_rate_per_minute=2)
    with TestClient(world.app) as client:
        h = world.auth("owner")
        facts = ["I prefer dark mode", "I live in Lisbon", "I have two cats"]
        codes = [
            client.post(
                "/api/tools/default/call",
                json={"name": "remember", "arguments": {"fact": f}},
                headers=h,
            )
            for f in facts
        ]
        assert [c.status_code for c in codes] == [200, 200, 429]
        assert int(codes[2].headers["Retry-After"]) >= 1 and "error" in codes[2].json()
        # reads are not limited; other users have their own budget
        assert (
            client.post(
                "/api/tools/default/call",
                json={"name": "recall", "arguments": {"query": "x"}},
                headers=h,
            ).status_code
            == 200
        )
        other = client.post(
            "/api/memory/user",
            json={"fact": "User prefers light mode"},
            headers=world.auth("admin"),
        )
        assert other.status_code == 201
        manual = client.post(
            "/api/memory/user", json={"fact": "User prefers light mode"}, headers=h
        )
        assert manual.status_code == 429


def test_metrics_carry_no_content(client: TestClient, world: World) -> None:
    add_user_fact(client, world, "owner", "User prefers tabs over spaces")
    client.get("/api/memories/mem_secretid", headers=world.auth("owner"))
    text = client.get("/metrics").text
    assert 'route="/api/memories/{memory_id}"' in text
    assert "mem_secretid" not in text and "tabs" not in text and world.keys["owner"] not in text
    assert "memorybank_memories_stored 1.0" in text


# -- local mode --------------------------------------------------------------------------------


def test_local_mode(any_bank: MemoryBank) -> None:
    world = make_world(any_bank, users=False)
    with TestClient(world.app) as client:
        me = client.get("/api/me").json()
        assert me == {
            "user_id": "local",
            "name": "Local user",
            "mode": "local",
            "projects": [],
            "org_admin": False,
        }
        assert (
            client.post("/api/memory/user", json={"fact": "I prefer dark mode"}).status_code == 201
        )
        assert (
            client.post(
                "/api/memory/drive/notes", json={"fact": "The notes are in English"}
            ).status_code
            == 201
        )
        assert client.get("/api/memory/drive/notes").json()["role"] == "owner"
        # once a user exists, keys are required
        world.accounts.create_user("alice")
        assert client.get("/api/me").status_code == 401


def test_compute_pool_is_small_when_nothing_waits_and_wide_when_requests_do(
    any_bank: MemoryBank,
) -> None:
    # Few threads, and searches on the event loop, only when nothing in them waits: a local
    # model and an in-process store (SQLite); PostgreSQL is a round trip per read.
    in_process = not any_bank.store.remote_reads
    expected = LOCAL_COMPUTE_THREADS if in_process else REMOTE_COMPUTE_THREADS
    assert compute_threads(Settings(), any_bank) == expected
    assert compute_threads(Settings(compute_threads=7), any_bank) == 7
    assert inline_searches(Settings(), any_bank) is in_process
    assert inline_searches(Settings(inline_searches=False), any_bank) is False
    remote = copy.copy(any_bank)
    remote.embedder = OpenAIEmbedder("http://127.0.0.1:9/v1", "m", dimension=384)
    try:
        assert compute_threads(Settings(), remote) == REMOTE_COMPUTE_THREADS
        assert inline_searches(Settings(), remote) is False
    finally:
        remote.embedder.close()


@pytest.mark.parametrize("inline", [True, False])
def test_searches_inline_or_in_the_compute_pool_keep_their_contract(
    any_bank: MemoryBank, inline: bool
) -> None:
    # Wherever a search or save runs, its parameters, validation and errors are unchanged.
    world = make_world(any_bank, inline_searches=inline)
    auth = world.auth("member")
    with TestClient(world.app) as client:
        assert world.app.state.inline_searches is (inline and not any_bank.store.remote_reads)
        add_user_fact(client, world, "member", "User prefers green tea")
        found = client.get("/api/search", params={"q": "green tea"}, headers=auth).json()
        assert found["hits"][0]["memory"]["content"] == "User prefers green tea"
        too_few = client.get("/api/search", params={"q": "tea", "limit": 0}, headers=auth)
        assert too_few.status_code == 422 and "limit" in too_few.json()["error"]
        assert client.get("/api/search", headers=auth).status_code == 422
        assert client.get("/api/search", params={"q": "tea"}).status_code == 401
        prompt = client.get("/api/prompt", headers=auth).json()
        assert prompt["tokens"] > 0 and "long-term memory" in prompt["prompt"]
