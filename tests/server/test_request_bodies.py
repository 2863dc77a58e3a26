"""Request bodies: ``POST /api/memories`` takes one item's fields as well as a batch, a
``user_id`` in a body is checked against the caller (never chooses one), and every route that
takes a body answers a body of the wrong shape with the shape it expects (issue 28 item 5)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from memorybank import MemoryBank
from memorybank.server.error_responses import body_examples
from server_helpers import LOOPBACK_PEER, make_world

EXPECTED = re.compile(r" — expected a body like (?P<shapes>.+)$")


def _routes_with_a_body(bank: MemoryBank) -> list[APIRoute]:
    app = make_world(bank, users=False).app
    found = []
    pending: list[Any] = list(app.router.routes)
    while pending:  # FastAPI keeps included routers' routes behind their own objects
        route = pending.pop()
        if isinstance(route, APIRoute):
            if route.body_field is not None:
                found.append(route)
        pending += getattr(getattr(route, "router", None), "routes", [])
        pending += getattr(route, "routes", [])
    return found


def test_one_item_is_saved_as_a_batch_of_one(bank: MemoryBank) -> None:
    client = TestClient(make_world(bank, users=False).app)
    alice = {"X-Memorybank-User": "alice"}
    one = client.post(
        "/api/memories",
        json={"user_id": "alice", "content": "I prefer dark mode", "category": "preference"},
        headers=alice,
    )
    assert one.status_code == 200, one.text
    [result] = one.json()["results"]
    assert result["success"] and result["content"] == "User prefers dark mode"
    assert result["memory"]["user_id"] == "alice"
    batch = client.post(
        "/api/memories",
        json={"items": [{"content": "I prefer dark mode", "category": "preference"}]},
        headers=alice,
    )
    assert batch.json()["results"][0]["duplicate"] is True  # the same fact, the same way in
    in_project = client.post(
        "/api/memories",
        json={"content": "Apollo ships on Fridays", "project_id": "apollo", "tags": ["release"]},
        headers=alice,
    )
    assert in_project.json()["results"][0]["memory"]["project_id"] == "apollo"
    assert in_project.json()["results"][0]["memory"]["tags"] == ["release"]


def test_a_user_id_in_the_body_must_be_the_callers(bank: MemoryBank) -> None:
    """The API key (or local mode's header) says who a request acts for; a body naming
    someone else is refused, saying how to act for them."""
    local = TestClient(make_world(bank, users=False).app)
    refused = local.post("/api/memories", json={"user_id": "alice", "content": "I like tea"})
    assert refused.status_code == 403
    assert "send the header X-Memorybank-User: alice" in refused.json()["error"]
    assert bank.count("alice") == 0 and bank.count("local") == 0

    world = make_world(bank)
    with TestClient(world.app, client=LOOPBACK_PEER) as auth:
        body = {"user_id": "owner", "content": "User prefers green tea"}
        refused = auth.post("/api/memories", json=body, headers=world.auth("member"))
        assert refused.status_code == 403 and "use owner's API key" in refused.json()["error"]
        saved = auth.post("/api/memories", json=body, headers=world.auth("owner"))
        assert saved.status_code == 200 and saved.json()["results"][0]["success"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"user_id": "local", "text": "I prefer dark mode"}, "content: Field required"),
        ({"items": [{"text": "I prefer dark mode"}]}, "items.0.content: Field required"),
        ({"items": []}, "items: List should have at least 1 item"),
        (None, "body: Field required"),
    ],
)
def test_a_save_of_the_wrong_shape_shows_both_shapes(
    bank: MemoryBank, body: Any, says: str
) -> None:
    client = TestClient(make_world(bank, users=False).app)
    answer = client.post("/api/memories", json=body)
    assert answer.status_code == 422
    message = answer.json()["error"]
    assert message.startswith(says), message
    assert "one." not in message and "batch." not in message  # pydantic's shape tags
    shapes = EXPECTED.search(message)
    assert shapes is not None, message
    assert shapes["shapes"] == (
        '{"content": "User prefers dark mode", "category": "preference"} or '
        '{"items": [{"content": "User prefers dark mode", "category": "preference"}, '
        '{"content": "User\'s sister Ana lives in Madrid"}]}'
    )


def test_every_body_route_answers_a_wrong_body_with_an_example_it_accepts(
    bank: MemoryBank,
) -> None:
    """For each route that takes a JSON body: a body of the wrong shape gets a 422 showing
    an example; each example is a body of the route's type; invalid JSON gets 400, with the
    example too."""
    client = TestClient(make_world(bank, users=False).app)
    routes = _routes_with_a_body(bank)
    assert len(routes) >= 14  # POST /api/context went with the pre-release aliases
    shown_examples = 0
    for route in routes:
        annotation = route.body_field.field_info.annotation  # type: ignore[union-attr]
        examples = body_examples(annotation)
        assert examples, route.path
        for example in examples:  # every example is a valid body of the route
            TypeAdapter(annotation).validate_python(example)
        if route.path == "/api/import":
            continue  # validated by the import itself: an export's own errors say what is wrong
        method = sorted(route.methods)[0]
        path = re.sub(r"\{[^}]+\}", "x", route.path)
        answer = client.request(method, path, json={"surely_not_a_field": 1})
        assert answer.status_code in (422, 404), (route.path, answer.text)
        if answer.status_code == 422:
            shapes = EXPECTED.search(answer.json()["error"])
            assert shapes is not None, (route.path, answer.text)
            shown = [json.loads(s) for s in shapes["shapes"].split(" or ")]
            assert shown == examples
            shown_examples += 1
        garbled = client.request(
            method, path, content=b"{nope", headers={"Content-Type": "application/json"}
        )
        if garbled.status_code == 400:
            assert "expected a body like" in garbled.json()["error"], route.path
    assert shown_examples >= len(routes) - 1  # all but /api/import
