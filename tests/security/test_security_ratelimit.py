"""Issue 17, findings 5 and 6: one per-user write limit for every adapter.

The attack: 70 ``remember`` calls in two seconds over ``/mcp`` all landed, while REST stopped
at 60 a minute; threads could be created without any limit. Now the bank owns one limiter
(``bank.writes.count``): MCP, the REST tool route, manual adds and thread creation
spend the same budget, a refused write stores nothing and says when to retry, and reads are
not charged to it (they have a limit of their own since issue 34: test_security_fairness).
Performed for real: MCP over streamable HTTP in the app, and a real ``memorybank serve``
subprocess configured through ``MEMORYBANK_AI_WRITE_RATE_PER_MINUTE``.
"""

from __future__ import annotations

import itertools
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

import memorybank
from memorybank import MemoryBank
from memorybank.errors import RateLimited, ValidationError
from memorybank.rules.limits import RateLimiter
from memorybank.tools import Caller, call, profile
from server_helpers import Mcp, World, make_world, spawn_server

RETRY = re.compile(r"try again in (\d+) s")

NOUNS = (
    "bicycle sofa laptop guitar kayak telescope piano tent camera violin scooter blender "
    "drone lantern hammock easel microscope surfboard typewriter sewing-machine"
).split()
CITIES = "Lisbon Oslo Nairobi Lima Hanoi Quebec".split()


def facts() -> Iterator[str]:
    """Distinct facts, so each accepted write is one more stored memory."""
    for city, noun in itertools.product(CITIES, NOUNS):
        yield f"User bought a {noun} in {city}"


def refused(answer: dict[str, Any]) -> int:
    """The seconds a rate-limit refusal asks to wait (fails if ``answer`` is anything else)."""
    assert answer.get("success") is False, answer
    found = RETRY.search(answer["error"])
    assert found and "too many memory writes" in answer["error"], answer
    return int(found.group(1))


def limited(response: Any) -> int:
    """The ``Retry-After`` of a 429 (fails if ``response`` is anything else)."""
    assert response.status_code == 429, response.text
    assert RETRY.search(response.json()["error"]), response.text
    retry = int(response.headers["Retry-After"])
    assert 1 <= retry <= 60
    return retry


@pytest.fixture
def world(bank: MemoryBank) -> World:
    # Explicit, so that a MEMORYBANK_AI_WRITE_RATE_PER_MINUTE in the environment changes nothing.
    return make_world(bank, ai_write_rate_per_minute=60)


@pytest.fixture
def client(world: World) -> Iterator[TestClient]:
    # Loopback as base URL: the MCP transport refuses other Host headers.
    with TestClient(world.app, base_url="http://127.0.0.1:8000") as c:
        yield c


# -- the attack, over MCP ----------------------------------------------------------------------


def test_the_61st_mcp_write_in_a_minute_is_refused_and_stores_nothing(
    client: TestClient, world: World, bank: MemoryBank
) -> None:
    mcp = Mcp(client, world.auth("owner"))
    texts = facts()
    answers = [mcp.call("remember", {"fact": next(texts)}) for _ in range(60)]
    assert not any("too many memory writes" in str(a) for _, a in answers)
    stored = bank.count("owner")
    assert stored == sum(a.get("success") is True for _, a in answers) > 50
    for _ in range(10):  # the rest of the attack's 70 calls
        is_error, answer = mcp.call("remember", {"fact": next(texts)})
        assert is_error and 1 <= refused(answer) <= 60
    assert bank.count("owner") == stored
    # Reads spend no write budget; another user has a budget of their own.
    is_error, found = mcp.call("recall", {"query": "where did I buy my guitar"})
    assert not is_error and found["facts"]
    other = Mcp(client, world.auth("admin"))
    assert other.call("remember", {"fact": "I prefer tea over coffee"})[1]["success"] is True


# -- one budget for every adapter --------------------------------------------------------------


def test_rest_and_mcp_share_one_budget(client: TestClient, world: World, bank: MemoryBank) -> None:
    h = world.auth("owner")
    texts = facts()
    for _ in range(30):
        added = client.post("/api/memory/user", json={"fact": next(texts)}, headers=h)
        assert added.status_code in (201, 409), added.text
    mcp = Mcp(client, h)
    for _ in range(30):
        assert "too many" not in str(mcp.call("remember", {"fact": next(texts)})[1])
    stored = bank.count("owner")

    # The 61st write is refused whichever adapter carries it.
    refused(mcp.call("remember", {"fact": next(texts)})[1])
    limited(client.post("/api/memory/user", json={"fact": next(texts)}, headers=h))
    tool = {"name": "remember", "arguments": {"fact": next(texts)}}
    limited(client.post("/api/tools/default/call", json=tool, headers=h))
    limited(client.post("/api/threads", json={"title": "One more"}, headers=h))
    assert bank.count("owner") == stored
    assert client.get("/api/threads", headers=h).json()["threads"] == []

    # Reads go on: listing, search, a read-only tool over REST and over MCP.
    current = bank.count("owner", superseded=False)  # the judge may retire near copies
    assert client.get("/api/memory/user", headers=h).json()["count"] == current
    assert client.get("/api/search", params={"q": "guitar"}, headers=h).status_code == 200
    recall = {"name": "recall", "arguments": {"query": "guitar"}}
    assert client.post("/api/tools/default/call", json=recall, headers=h).status_code == 200
    assert mcp.call("recall", {"query": "guitar"})[0] is False


def test_thread_creation_is_limited(bank: MemoryBank) -> None:
    world = make_world(bank, ai_write_rate_per_minute=3)
    with TestClient(world.app) as client:
        h = world.auth("owner")
        for n in range(3):
            made = client.post("/api/threads", json={"title": f"Chat {n}"}, headers=h)
            assert made.status_code == 201, made.text
        limited(client.post("/api/threads", json={"title": "Chat 3"}, headers=h))
        assert len(client.get("/api/threads", headers=h).json()["threads"]) == 3
        # Other users keep their own budget.
        other = client.post("/api/threads", json={"title": "Mine"}, headers=world.auth("admin"))
        assert other.status_code == 201


# -- a real `memorybank serve`, configured by the environment ----------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    proc, url = spawn_server(
        f"sqlite:///{tmp_path / 'served.db'}", env={"MEMORYBANK_AI_WRITE_RATE_PER_MINUTE": "5"}
    )
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_real_server_limits_mcp_and_rest_together(served: str) -> None:
    with httpx.Client(base_url=served, timeout=60) as http:
        mcp = Mcp(http)
        texts = facts()
        for _ in range(3):
            assert mcp.call("remember", {"fact": next(texts)})[1]["success"] is True
        for _ in range(2):
            added = http.post("/api/memory/user", json={"fact": next(texts)})
            assert added.status_code == 201, added.text
        # Five writes in the minute: the sixth is refused over MCP and over REST.
        is_error, answer = mcp.call("remember", {"fact": next(texts)})
        assert is_error and refused(answer) >= 1
        limited(http.post("/api/memory/user", json={"fact": next(texts)}))
        limited(http.post("/api/threads", json={"title": "Later"}))
        listed = http.get("/api/memory/user").json()
        assert listed["count"] == 5
        assert mcp.call("recall", {"query": "what did I buy"})[0] is False


# -- the parts ---------------------------------------------------------------------------------


def test_limiter_window_slides_per_user() -> None:
    now = [100.0]
    limiter = RateLimiter(2, clock=lambda: now[0])
    limiter.hit("alice")
    now[0] = 130.0
    limiter.hit("alice")
    limiter.hit("bob")
    with pytest.raises(RateLimited) as caught:
        limiter.hit("alice")
    assert caught.value.retry_after == 30  # until the first write leaves the window
    now[0] = 160.0  # exactly a minute after the first: it no longer counts
    limiter.hit("alice")
    with pytest.raises(RateLimited):
        limiter.hit("alice")
    limiter.per_minute = 3  # raising the limit keeps the counts
    limiter.hit("alice")
    with pytest.raises(RateLimited):
        limiter.hit("alice")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValidationError):
            RateLimiter(bad)  # type: ignore[arg-type]


def test_a_refused_write_is_not_counted() -> None:
    now = [0.0]
    limiter = RateLimiter(1, clock=lambda: now[0])
    limiter.hit("u")
    for second in range(1, 60):  # hammering while refused does not push the retry further
        now[0] = float(second)
        with pytest.raises(RateLimited) as caught:
            limiter.hit("u")
        assert caught.value.retry_after == 60 - second
    now[0] = 60.0
    limiter.hit("u")


def test_the_bank_is_unlimited_unless_asked(bank: MemoryBank) -> None:
    assert bank.writes.limiter is None
    for _ in range(500):
        bank.writes.count("u1")
    bank.writes.set_limit(2)
    bank.writes.count("u1")
    bank.writes.count("u1")
    with pytest.raises(RateLimited):
        bank.writes.count("u1")
    bank.writes.set_limit(None)
    bank.writes.count("u1")


def test_open_passes_the_setting(tmp_path: Path) -> None:
    with memorybank.open(f"sqlite:///{tmp_path / 'o.db'}", ai_write_rate_per_minute=7) as opened:
        assert opened.writes.limiter is not None and opened.writes.limiter.per_minute == 7


def test_the_app_sets_the_banks_limit(bank: MemoryBank) -> None:
    bank.writes.set_limit(1000)
    make_world(bank, ai_write_rate_per_minute=4)
    assert bank.writes.limiter is not None and bank.writes.limiter.per_minute == 4


def test_the_dispatcher_counts_each_writing_call_once(bank: MemoryBank) -> None:
    """The tools API (what REST and MCP run): only side-effecting calls that pass validation
    count, and the refusal is an answer the model can act on, or the error when asked."""
    bank.writes.set_limit(2)
    tools = profile("default")
    caller = Caller(user_id="sam")
    # Arguments the schema refuses never start a write, so they are not counted.
    assert call(bank, tools, "remember", {"fact": 5}, caller)["success"] is False
    assert call(bank, tools, "remember", {"nope": 1}, caller)["success"] is False
    for text in ("I prefer Neovim", "I live in Porto"):
        assert call(bank, tools, "remember", {"fact": text}, caller)["success"] is True
    for _ in range(5):
        assert call(bank, tools, "recall", {"query": "editor"}, caller)["success"] is True
    answer = call(bank, tools, "remember", {"fact": "I have two cats"}, caller)
    assert refused(answer) >= 1 and bank.count("sam") == 2
    with pytest.raises(RateLimited) as caught:
        call(bank, tools, "forget", {"id": "mem_x"}, caller, raises=(RateLimited,))
    assert caught.value.retry_after >= 1
    assert call(bank, tools, "remember", {"fact": "I have a dog"}, Caller(user_id="kim"))["success"]


def test_a_write_is_charged_what_it_stores() -> None:
    """Issue 27: units, not requests. A batch fits only whole; its wait is until enough of the
    window has slid out; one larger than the limit never fits and says to split it."""
    now = [0.0]
    limiter = RateLimiter(10, clock=lambda: now[0])
    limiter.hit("u", 4)
    now[0] = 20.0
    limiter.hit("u", 5)
    with pytest.raises(RateLimited) as caught:
        limiter.hit("u", 3)  # 9 used, 1 left: nothing is charged
    assert caught.value.retry_after == 40  # when the first 4 leave the window
    assert "1 left and this request stores 3" in str(caught.value)
    limiter.hit("u")  # the one left is still there
    with pytest.raises(RateLimited) as caught:
        limiter.hit("u", 11)
    assert caught.value.retry_after == 60
    assert "stores 11 items and the limit is 10" in str(caught.value)
    assert "MEMORYBANK_AI_WRITE_RATE_PER_MINUTE" in str(caught.value)
    now[0] = 60.0  # the first 4 have left
    limiter.hit("u", 4)
    for bad in (0, -1, True):
        with pytest.raises(ValueError):
            limiter.hit("u", bad)
