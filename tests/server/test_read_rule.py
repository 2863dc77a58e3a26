"""Issue 44's one rule for every read, held route by route: every read the REST API serves
(the OpenAPI schema's ``GET`` operations, and the reads sent as ``POST``: auto-recall and a
tool call) runs in its caller's turn in the compute pool (never on the event loop), is
charged to the caller's read limit, and has a page size that bounds it.

The walk fails for a new read route that is not, unless it is listed below with the reason
it is not: a route that serves no user, or one whose answer is bounded without a page size.
Before, ``GET /api/memory-pairs``, the plain lists, the export and the REST tool route were
neither charged nor taken in turns (findings F2–F4).
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

import httpx
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from memorybank import MemoryBank
from memorybank.core.records import save_records
from memorybank.core.writes import ANSWER_BYTES_PER_READ
from memorybank.model import Memory
from memorybank.rules.limits import PAGE_MAX
from memorybank.server.execution import SWITCH_INTERVAL_S, placement_of
from server_helpers import World, make_world

#: Reads no caller's budget pays for, and why.
NOT_A_USERS_READ = {
    ("GET", "/healthz"): "answers {'status': 'ok'} to anyone, reads nothing stored",
    ("GET", "/metrics"): "the operator's counters, for this machine or the metrics token",
    ("GET", "/api/events"): (
        "an event stream: held open under MEMORYBANK_EVENT_STREAMS_PER_USER, each poll a "
        "bounded read of at most 200 events in a worker thread"
    ),
}

#: Reads sent as POST: the model's tool call (charged by the tools dispatcher, as over MCP)
#: and the auto-recall block.
READS_SENT_AS_POST = {("POST", "/api/tools/{profile}/call"), ("POST", "/api/auto-recall")}

#: Reads whose answer is bounded without a ``limit`` of at most :data:`PAGE_MAX`, and how.
BOUNDED_OTHERWISE = {
    "/api/me": "the caller and the projects they are a member of",
    "/api/memories/count": "a number",
    "/api/memories/{memory_id}": "one memory",
    "/api/memories/{memory_id}/history": "one memory's events, charged by their size",
    "/api/export": "one scope, the whole of it by design, charged by its size",
    "/api/stats": "counts of the caller's scopes",
    "/api/stats/metrics": "a window of at most 365 days, summed",
    "/api/consolidate": "at most 5,000 facts examined, charged one unit per 10 (routes/tidy.py)",
    "/api/threads": "the caller's threads, charged by their size",
    "/api/tools/{profile}": "one profile's tool definitions",
    "/api/tools/{profile}/call": "the tool's own arguments bound what it answers",
    "/api/prompt": "a memory block of at most 20,000 tokens",
    "/api/auto-recall": "a memory block of at most 20,000 tokens",
    "/api/settings/providers": "at most one provider of each kind",
    "/api/webhooks": "at most 10 webhooks per project or org the caller administers",
}

#: Values for the path and required query parameters, and the bodies, of the reads.
PATH_VALUES = {
    "memory_id": "mem_nothing_here",
    "drive_id": "apollo",
    "profile": "default",
    "hook_id": "wh_nothing_here",
}
QUERY_VALUES = {"q": "tea"}
BODIES: dict[str, Any] = {
    "/api/auto-recall": {"message": "what tea do I like?"},
    "/api/tools/{profile}/call": {"name": "recall", "arguments": {"query": "tea"}},
}


def _routes(world: World) -> dict[tuple[str, str], APIRoute]:
    return {
        (method, route.path): route
        for route in world.app.routes
        if isinstance(route, APIRoute) and route.include_in_schema
        for method in route.methods
    }


def _reads(world: World) -> list[tuple[str, str, dict[str, Any]]]:
    """Every read of the OpenAPI schema: (method, path, operation)."""
    found = []
    for path, operations in world.app.openapi()["paths"].items():
        for method, operation in operations.items():
            key = (method.upper(), path)
            if key in NOT_A_USERS_READ:
                continue
            if key[0] == "GET" or key in READS_SENT_AS_POST:
                found.append((key[0], path, operation))
    return found


def test_every_read_runs_in_its_callers_turn(any_bank: MemoryBank) -> None:
    world = make_world(any_bank, users=False)
    routes = _routes(world)
    reads = _reads(world)
    assert len(reads) >= 20, "the walk found too few reads: is the schema complete?"
    off_turn = [
        f"{method} {path}"
        for method, path, _ in reads
        if (placement := placement_of(routes[(method, path)].endpoint)) is None
        or not placement.in_turn
    ]
    assert off_turn == [], f"reads not placed in their caller's turn: {off_turn}"
    charged_by_size = [
        f"{method} {path}"
        for method, path, _ in reads
        if (placement := placement_of(routes[(method, path)].endpoint)) is not None
        and not placement.reads
    ]
    # The two reads charged by their own rule: a tool call (the dispatcher, as over MCP) and
    # a consolidation preview (by the facts it examines).
    assert sorted(charged_by_size) == ["GET /api/consolidate", "POST /api/tools/{profile}/call"]


def test_every_read_has_a_page_size_that_bounds_it(any_bank: MemoryBank) -> None:
    world = make_world(any_bank, users=False)
    unbounded = []
    for method, path, operation in _reads(world):
        limits = [p for p in operation.get("parameters", []) if p["name"] == "limit"]
        if not limits:
            if path not in BOUNDED_OTHERWISE:
                unbounded.append(f"{method} {path}: no limit")
            continue
        most = limits[0]["schema"].get("maximum")
        if most is None or (most > PAGE_MAX and path not in BOUNDED_OTHERWISE):
            unbounded.append(f"{method} {path}: limit up to {most}")
    assert unbounded == [], f"reads with no page size that bounds them: {unbounded}"


def _request(
    client: TestClient, method: str, path: str, operation: dict[str, Any], key: str
) -> httpx.Response:
    url = path.format(**PATH_VALUES)
    required = [
        p["name"]
        for p in operation.get("parameters", [])
        if p["in"] == "query" and p.get("required")
    ]
    params = {name: QUERY_VALUES[name] for name in required}
    headers = {"Authorization": f"Bearer {key}"}
    return client.request(method, url, params=params, json=BODIES.get(path), headers=headers)


def test_every_read_is_charged_to_its_callers_read_limit(any_bank: MemoryBank) -> None:
    """Each read, by a user of its own whose limit is one read a minute: the first is
    answered (whatever it answers: a 404 for an id that is nowhere is charged too), the
    second refused with 429 and ``Retry-After``."""
    world = make_world(any_bank, read_rate_per_minute=1)
    refused = []
    with TestClient(world.app) as client:
        for n, (method, path, operation) in zip(itertools.count(), _reads(world), strict=False):
            user = f"reader{n}"
            world.accounts.create_user(user)
            world.accounts.add_member("apollo", user, "member")
            key = world.accounts.create_key(user)[1]
            first = _request(client, method, path, operation, key)
            assert first.status_code not in (429, 500), (method, path, first.text)
            second = _request(client, method, path, operation, key)
            if second.status_code != 429 or "Retry-After" not in second.headers:
                refused.append(f"{method} {path}: {second.status_code}")
    assert refused == [], f"reads not charged to the caller's read limit: {refused}"


def test_a_read_costs_its_answers_size(any_bank: MemoryBank) -> None:
    """A page of many memories costs more than one memory: one unit per
    ``ANSWER_BYTES_PER_READ`` of its answer beyond the first, so a loop of pages of 1,000
    is refused long before a loop of searches would be."""
    world = make_world(any_bank, read_rate_per_minute=12)
    notes = [
        Memory(user_id="member", content=f"User keeps note {n} in the shed", category="context")
        for n in range(400)
    ]
    save_records(any_bank, notes, actor="member")
    auth = world.auth("member")
    with TestClient(world.app) as client:
        page = client.get("/api/memories", params={"limit": 400}, headers=auth)
        assert page.status_code == 200, page.text
        cost = 1 + (len(page.content) - 1) // ANSWER_BYTES_PER_READ
        assert cost >= 3, f"a page of {len(page.content)} bytes should cost more than 2 units"
        answered = 1
        while client.get("/api/memories", params={"limit": 400}, headers=auth).status_code == 200:
            answered += 1
        assert answered <= 12 // cost + 1
        # Another user's reads are their own.
        assert client.get("/api/memories", headers=world.auth("owner")).status_code == 200


def test_a_tool_calls_answer_is_charged_by_its_size(any_bank: MemoryBank) -> None:
    """A tool's read costs what a REST read of the same size costs, whichever adapter
    carries it (the REST tool route here, MCP and the tools API alike: the dispatcher
    charges it)."""
    world = make_world(any_bank, read_rate_per_minute=12)
    shed = "in the garden shed, behind the blue door, on the second shelf from the top"
    notes = [
        Memory(user_id="member", content=f"User keeps note {n} {shed}", category="context")
        for n in range(500)
    ]
    save_records(any_bank, notes, actor="member")
    recent = {"name": "recall_recent", "arguments": {"limit": 500}}
    auth = world.auth("member")
    with TestClient(world.app) as client:
        first = client.post("/api/tools/hyperspark/call", json=recent, headers=auth)
        assert first.status_code == 200, first.text
        cost = 1 + (len(first.content) - 1) // ANSWER_BYTES_PER_READ
        assert cost >= 2, f"an answer of {len(first.content)} bytes should cost more than 1"
        answered = 1
        while client.post("/api/tools/hyperspark/call", json=recent, headers=auth).is_success:
            answered += 1
        assert answered <= 12 // cost + 1


def test_a_serving_app_hands_the_gil_over_often(any_bank: MemoryBank) -> None:
    """While an app serves, a thread holding Python's GIL hands it over after 1 ms, not 5:
    one user's CPU-bound read no longer makes another's search wait 5 ms at each of its
    hand-overs (a loop of pages of pairs: 2.48× at 5 ms, 1.58× at 1 ms)."""
    before = sys.getswitchinterval()
    with TestClient(make_world(any_bank, users=False).app):
        assert sys.getswitchinterval() <= SWITCH_INTERVAL_S
    assert sys.getswitchinterval() == before
