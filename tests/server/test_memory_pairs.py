"""A fact that may update another, answered over a real server (uvicorn on 127.0.0.1, each
backend): the pair a save reported stays open in ``GET /api/memory-pairs`` until someone
answers; "both are true" (``POST /api/memories/{id}/keep-both``, ``Client.keep_both``) closes
it for good and takes the older out of the block's "earlier, may be outdated" note; "Replace"
closes it until a restore; a deleted fact takes its pairs with it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from memorybank import MemoryBank
from memorybank.client import Client
from memorybank.model import Caller
from memorybank.tools import system_prompt
from server_helpers import World, make_world, serving_at

OLDER = "User works at Globex as an engineer"
NEWER = "User moved to Initech as an engineer"
NOTE = f"earlier, may be outdated: {OLDER}"


@pytest.fixture
def world(any_bank: MemoryBank) -> World:
    return make_world(any_bank)


@pytest.fixture
def base_url(world: World) -> Iterator[str]:
    with serving_at(world.app) as base:
        yield base


def save_pair(http: httpx.Client, world: World) -> tuple[str, str]:
    """The older and the newer fact's ids, the newer reported as may update the older."""
    h = world.auth("owner")
    older = http.post("/api/memory/user", json={"fact": OLDER}, headers=h)
    assert older.status_code == 201, older.text
    newer = http.post("/api/memory/user", json={"fact": NEWER}, headers=h)
    assert newer.status_code == 201, newer.text
    old_id = older.json()["memory"]["id"]
    assert old_id in [c["memory_id"] for c in newer.json()["conflicts"]], newer.json()
    return old_id, newer.json()["memory"]["id"]


def pairs(http: httpx.Client, world: World, user: str = "owner") -> list[tuple[str, str]]:
    answer = http.get("/api/memory-pairs", params={"scopes": "user"}, headers=world.auth(user))
    assert answer.status_code == 200, answer.text
    return [(p["memory"]["id"], p["other"]["id"]) for p in answer.json()["pairs"]]


def test_both_are_true_is_recorded_and_never_asked_again(
    base_url: str, world: World, any_bank: MemoryBank
) -> None:
    with httpx.Client(base_url=base_url, timeout=60) as http:
        old_id, new_id = save_pair(http, world)
        # Open until answered: any client, any number of reads.
        assert pairs(http, world) == [(new_id, old_id)]
        assert pairs(http, world) == [(new_id, old_id)]
        assert pairs(http, world, "outsider") == []
        owner = Caller(user_id="owner")
        assert NOTE in system_prompt(any_bank, owner)

        with Client(base_url, api_key=world.keys["owner"]) as client:
            shown = client.open_pairs("owner", scopes="user")
            assert [(n.content, o.content) for n, o in shown] == [(NEWER, OLDER)]
            client.keep_both(new_id, old_id, "owner")
            assert client.open_pairs("owner") == []

        assert pairs(http, world) == []
        block = system_prompt(any_bank, owner)
        assert NOTE not in block and OLDER in block and NEWER in block  # both current facts
        # Both stay current; saying it again (either order) asks nothing new.
        assert {m.content for m in any_bank.list("owner", superseded=False)} == {OLDER, NEWER}
        again = http.post(
            f"/api/memories/{old_id}/keep-both", json={"other": new_id}, headers=world.auth("owner")
        )
        assert again.status_code == 200, again.text
        assert {again.json()["memory"]["id"], again.json()["other"]["id"]} == {old_id, new_id}
        assert pairs(http, world) == []


def test_replace_closes_the_pair_until_a_restore_and_a_delete_drops_it(
    base_url: str, world: World
) -> None:
    h = world.auth("owner")
    with httpx.Client(base_url=base_url, timeout=60) as http:
        old_id, new_id = save_pair(http, world)
        replaced = http.post(f"/api/memories/{old_id}/supersede", json={"by": new_id}, headers=h)
        assert replaced.status_code == 200, replaced.text
        assert pairs(http, world) == []
        assert http.post(f"/api/memories/{old_id}/restore", headers=h).status_code == 200
        assert pairs(http, world) == [(new_id, old_id)]  # asked again: nobody answered it
        assert http.delete(f"/api/memory/user/{old_id}", headers=h).status_code == 204
        assert pairs(http, world) == []


def test_keep_both_says_what_to_fix(base_url: str, world: World) -> None:
    h = world.auth("owner")
    with httpx.Client(base_url=base_url, timeout=60) as http:
        old_id, new_id = save_pair(http, world)
        itself = http.post(f"/api/memories/{new_id}/keep-both", json={"other": new_id}, headers=h)
        assert itself.status_code == 422
        assert "cannot be paired with itself" in itself.json()["error"]
        missing = http.post(
            f"/api/memories/{new_id}/keep-both", json={"other": "mem_nope"}, headers=h
        )
        assert missing.status_code == 404
        assert "mem_nope" in missing.json()["error"]
        no_body = http.post(f"/api/memories/{new_id}/keep-both", json={}, headers=h)
        assert no_body.status_code == 422
        assert "other" in no_body.json()["error"]
        # Another user's fact is one the caller may not see: not found, nothing recorded.
        theirs = http.post(
            f"/api/memories/{new_id}/keep-both",
            json={"other": old_id},
            headers=world.auth("outsider"),
        )
        assert theirs.status_code == 404
        assert http.post("/api/memories/x/keep-both", json={"other": old_id}).status_code == 401
        assert pairs(http, world) == [(new_id, old_id)]


def test_a_projects_pairs_are_its_members(base_url: str, world: World) -> None:
    with httpx.Client(base_url=base_url, timeout=60) as http:
        for fact in (OLDER, NEWER):
            saved = http.post(
                "/api/memory/drive/apollo", json={"fact": fact}, headers=world.auth("owner")
            )
            assert saved.status_code == 201, saved.text
        seen = http.get(
            "/api/memory-pairs",
            params={"project_id": "apollo", "scopes": "project"},
            headers=world.auth("member"),
        )
        assert seen.status_code == 200, seen.text
        [pair] = seen.json()["pairs"]
        assert (pair["memory"]["content"], pair["other"]["content"]) == (NEWER, OLDER)
        # A member may view the pair, not answer it (seed 002: only admins and owners change).
        answer = http.post(
            f"/api/memories/{pair['memory']['id']}/keep-both",
            json={"other": pair["other"]["id"]},
            headers=world.auth("member"),
        )
        assert answer.status_code == 403, answer.text
        outsider = http.get(
            "/api/memory-pairs", params={"project_id": "apollo"}, headers=world.auth("outsider")
        )
        assert outsider.status_code == 404
