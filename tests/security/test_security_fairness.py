"""Issue 34, findings 1 and 2, performed for real over HTTP: one tenant (bob) floods a server
with long searches or consolidation previews while another (alice) searches or saves.

1. Searches ran on the shared event loop with no per-user read limit: bob's two loops of
   1,000-character searches took alice's search p50 from 8 to 184 ms. Searches now run in the
   compute pool in turns per user (one of bob's at a time), and each user has a read limit
   (``MEMORYBANK_READ_RATE_PER_MINUTE``).
2. Each consolidation preview cost one write unit and held a shared compute thread: bob's
   previews took alice's save p50 from 19 to 1,901 ms. A preview now costs reads by the facts
   it examines, and waits for bob's own earlier calls, never before alice's.

3. Only REST reads were charged: the same searches through MCP's ``recall`` (or the REST tool
   route, or MCP's ``recall_context`` prompt) spent no read limit. Every tool call that is
   not a write is now one read, charged where the REST API charges its searches
   (``bank.writes.count_read``).

Issue 44 (findings F2–F4): every read, not only searches. ``GET /api/memory-pairs`` (two
reads a pair, on the event loop, uncharged), the REST tool route (FastAPI's general pool,
outside the turns), plain lists and the export (neither charged nor taken in turns) each let
one tenant's flood take another's search p50 to 6–26×. They now take their caller's turns and
are charged by their answer's size (``tests/server/test_read_rule.py`` holds every route to
it).

These tests assert order, not speed: alice's request is answered while bob's flood is still
queued (before, her save waited behind his previews). Latency ratios are ``memorybank bench
fairness``, in one run.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from memorybank import MemoryBank
from memorybank.core.records import save_records
from memorybank.core.scopes import scope_set
from memorybank.model import Category, Memory
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.stores.sqlite import SQLiteStore
from server_helpers import Mcp, make_world, serving

FLOOD = 8
LONG_QUERY = " ".join(f"what does the user think about topic {n} in detail" for n in range(20))


@pytest.fixture
def bank(tmp_path: Path, embedder: LocalEmbedder) -> Iterator[MemoryBank]:
    store = SQLiteStore(tmp_path / "fair.db", dimension=embedder.dimension)
    with MemoryBank(store, embedder) as b:
        yield b


def _seed(bank: MemoryBank, user: str, count: int) -> None:
    records = [
        Memory(
            user_id=user,
            content=f"User's note {n}: keeps item {n} in box {n % 7}",
            category=Category.CONTEXT,
        )
        for n in range(count)
    ]
    save_records(bank, records, actor=user)


def _while_flooding(
    http: httpx.Client,
    flood: Callable[[], httpx.Response],
    alone: Callable[[], httpx.Response],
    size: int = FLOOD,
) -> tuple[httpx.Response, int, list[httpx.Response]]:
    """Send ``size`` of bob's requests at once; once the first is answered (the rest are
    then queued in the server), alice's one request. Alice's answer, how many of bob's were
    answered while she waited, and bob's answers."""
    first = threading.Event()
    with ThreadPoolExecutor(size + 1) as pool:

        def bobs() -> httpx.Response:
            answer = flood()
            first.set()
            return answer

        floods: list[Future[httpx.Response]] = [pool.submit(bobs) for _ in range(size)]
        assert first.wait(120), "none of bob's requests was answered"
        before = sum(1 for f in floods if not f.done())
        mine = alone()
        answered = before - sum(1 for f in floods if not f.done())
        return mine, answered, [f.result() for f in floods]


def test_another_tenants_searches_do_not_queue_mine(bank: MemoryBank) -> None:
    world = make_world(bank, read_rate_per_minute=10_000)
    _seed(bank, "member", 200)
    queries = (f"{LONG_QUERY} {n}" for n in itertools.count())  # each one embedded anew
    with serving(world.app) as http:
        bob, alice = world.auth("member"), world.auth("owner")
        mine, answered, theirs = _while_flooding(
            http,
            lambda: http.get("/api/search", params={"q": next(queries)}, headers=bob),
            lambda: http.get("/api/search", params={"q": "where do I live"}, headers=alice),
        )
    assert mine.status_code == 200, mine.text
    assert all(r.status_code == 200 for r in theirs)
    # Bob's searches take their turns; alice's takes one of its own.
    assert answered <= 2, f"alice waited for {answered} of bob's searches"


def test_reads_have_a_per_user_limit(bank: MemoryBank) -> None:
    world = make_world(bank, read_rate_per_minute=5)
    with serving(world.app) as http:
        bob, alice = world.auth("member"), world.auth("owner")
        answers = [http.get("/api/search", params={"q": "tea"}, headers=bob) for _ in range(6)]
        assert [r.status_code for r in answers] == [200] * 5 + [429]
        refused = answers[-1]
        assert "MEMORYBANK_READ_RATE_PER_MINUTE" in refused.json()["error"]
        assert int(refused.headers["Retry-After"]) >= 1
        assert http.get("/api/prompt", headers=bob).status_code == 429  # a block is a read
        assert http.get("/api/search", params={"q": "tea"}, headers=alice).status_code == 200


def test_previews_cost_by_work_and_never_queue_anothers_save(bank: MemoryBank) -> None:
    world = make_world(bank, read_rate_per_minute=10_000, ai_write_rate_per_minute=10_000)
    _seed(bank, "member", 300)
    with serving(world.app) as http:
        bob, alice = world.auth("member"), world.auth("owner")
        fact = {"fact": "User keeps the spare key under the blue pot"}
        mine, answered, theirs = _while_flooding(
            http,
            lambda: http.get("/api/consolidate", headers=bob),
            lambda: http.post("/api/memory/user", json=fact, headers=alice),
        )
    assert mine.status_code == 201, mine.text
    assert all(r.status_code == 200 for r in theirs)
    # Before: the pool's three threads took bob's previews first come, first served, and
    # alice's save waited for most of them (5 or 6 of his 7 were answered first).
    assert answered <= 2, f"alice's save waited for {answered} of bob's previews"


def test_a_preview_is_charged_the_facts_it_examines(bank: MemoryBank) -> None:
    _seed(bank, "member", 300)  # 30 read units a preview
    world = make_world(bank, read_rate_per_minute=50)
    with serving(world.app) as http:
        bob = world.auth("member")
        codes = [http.get("/api/consolidate", headers=bob).status_code for _ in range(4)]
        assert codes == [200, 200, 429, 429]
        assert http.get("/api/search", params={"q": "tea"}, headers=bob).status_code == 429
        owner = world.auth("owner")
        assert http.get("/api/search", params={"q": "tea"}, headers=owner).status_code == 200


def test_mcp_and_tool_reads_spend_the_read_limit(bank: MemoryBank) -> None:
    world = make_world(bank, read_rate_per_minute=3)
    bank.save("member", "User keeps the spare key under the blue pot", "context")
    with serving(world.app) as http:
        bob, alice = world.auth("member"), world.auth("owner")
        mcp = Mcp(http, bob)
        answers = [mcp.call("recall", {"query": "where is the spare key"}) for _ in range(3)]
        assert all(not is_error and found["facts"] for is_error, found in answers)
        is_error, refused = mcp.call("recall", {"query": "where is the spare key"})
        assert is_error and "MEMORYBANK_READ_RATE_PER_MINUTE" in refused["error"]
        assert "try again in" in refused["error"]
        # The same budget everywhere: REST searches, the REST tool route, the MCP prompt.
        assert http.get("/api/search", params={"q": "key"}, headers=bob).status_code == 429
        recall = {"name": "recall", "arguments": {"query": "key"}}
        assert http.post("/api/tools/default/call", json=recall, headers=bob).status_code == 429
        prompt = {"name": "recall_context", "arguments": {"message": "where is my key?"}}
        error = mcp.rpc("prompts/get", prompt)["error"]
        assert "MEMORYBANK_READ_RATE_PER_MINUTE" in error["message"]
        # Another user's reads are their own.
        theirs = Mcp(http, alice)
        assert theirs.call("recall", {"query": "where is the spare key"})[0] is False
        assert "result" in theirs.rpc("prompts/get", prompt)
        assert http.post("/api/tools/default/call", json=recall, headers=alice).status_code == 200


def test_another_tenants_mcp_calls_do_not_queue_mine(bank: MemoryBank) -> None:
    """Before, MCP calls ran beside the compute pool, as many at once as the tools' 8 threads:
    bob's flood of recalls filled them and alice's recall waited for most of his. Now an MCP
    call takes its caller's turn in the compute pool, like a REST search."""
    world = make_world(bank, read_rate_per_minute=10_000)
    _seed(bank, "member", 200)
    queries = (f"{LONG_QUERY} {n}" for n in itertools.count())
    flood = 3 * FLOOD
    with serving(world.app) as http:
        bob, alice = Mcp(http, world.auth("member")), Mcp(http, world.auth("owner"))
        first = threading.Event()
        with ThreadPoolExecutor(flood) as pool:

            def bobs() -> bool:
                is_error, _ = bob.call("recall", {"query": next(queries)})
                first.set()
                return is_error

            floods = [pool.submit(bobs) for _ in range(flood)]
            assert first.wait(120), "none of bob's calls was answered"
            before = sum(1 for f in floods if not f.done())
            is_error, found = alice.call("recall", {"query": "where do I live"})
            answered = before - sum(1 for f in floods if not f.done())
            assert not any(f.result() for f in floods)
    assert not is_error, found
    assert answered <= 2, f"alice's recall waited for {answered} of bob's"


def test_a_listing_that_searches_is_a_read(bank: MemoryBank) -> None:
    """``GET /api/memory/user?q=…`` (and a project's page with ``q``) searched on the event
    loop and spent no read limit: a way around both. With ``q`` it is now a search, and
    since issue 44 a plain page is a read too (``tests/server/test_read_rule.py``)."""
    world = make_world(bank, read_rate_per_minute=2)
    with serving(world.app) as http:
        bob = world.auth("member")
        searched = [
            http.get("/api/memory/user", params={"q": "tea"}, headers=bob).status_code,
            http.get("/api/memory/drive/apollo", params={"q": "tea"}, headers=bob).status_code,
            http.get("/api/memory/user", params={"q": "tea"}, headers=bob).status_code,
        ]
        assert searched == [200, 200, 429]
        assert http.get("/api/memory/user", headers=bob).status_code == 429
        assert http.get(
            "/api/memory/user", params={"q": "tea"}, headers=world.auth("owner")
        ).is_success


def test_an_org_wide_search_costs_one_read_per_member_searched(bank: MemoryBank) -> None:
    world = make_world(bank, read_rate_per_minute=5)
    for user, role in (("admin", "admin"), ("member", "member"), ("owner", "member")):
        world.accounts.add_org_member("acme", user, role)
    with serving(world.app) as http:
        admin = world.auth("admin")
        org = {"q": "tea", "org_wide": True}
        assert http.get("/api/search", params=org, headers=admin).status_code == 200  # 3 of 5
        assert http.get("/api/search", params=org, headers=admin).status_code == 429
        assert http.get("/api/search", params={"q": "tea"}, headers=admin).status_code == 200


def _jobs(bank: MemoryBank, user: str, count: int) -> None:
    """Facts of ``user``'s that may each update another: pairs a save asks about."""
    companies = ("Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne")
    facts = [
        {"content": f"User works at {companies[n % 7]} as engineer no. {n}", "category": "identity"}
        for n in range(count)
    ]
    bank.save_many(user, facts, on_conflict="keep")


def test_a_page_of_pairs_is_one_read_of_its_facts(bank: MemoryBank) -> None:
    """F2: a page of 1,000 pairs was 2,001 reads (the pairs' ids, then two ``store.get`` a
    pair). The store now answers the pairs with both facts, from one query."""
    _jobs(bank, "bob", 12)
    keys = [scope.key for scope in scope_set("bob", None, "user").scopes()]
    found = bank.store.open_pairs(keys, 1000)
    assert found, "the jobs should have left pairs open"
    for newer, older in found:
        assert isinstance(newer, Memory) and isinstance(older, Memory)
        assert newer.user_id == older.user_id == "bob" and newer.id != older.id


def _bobs_reads(
    world_http: httpx.Client, bob: dict[str, str]
) -> dict[str, Callable[[], httpx.Response]]:
    """Bob's floods of round 5: pages of pairs, tool-route recalls, lists and exports."""
    queries = (f"{LONG_QUERY} {n}" for n in itertools.count())
    recall = lambda: {"name": "recall", "arguments": {"query": next(queries)}}  # noqa: E731
    return {
        "pairs": lambda: world_http.get("/api/memory-pairs", params={"limit": 1000}, headers=bob),
        "tool route": lambda: world_http.post(
            "/api/tools/default/call", json=recall(), headers=bob
        ),
        "list": lambda: world_http.get("/api/memories", params={"limit": 1000}, headers=bob),
        "export": lambda: world_http.get("/api/export", headers=bob),
    }


@pytest.mark.parametrize("flood", ["pairs", "list", "export"])
def test_another_tenants_reads_of_any_kind_do_not_queue_mine(bank: MemoryBank, flood: str) -> None:
    """F2–F4: bob's reads take their turns, whatever they read; alice's search one of its own
    (before, the pairs and lists ran on the event loop ahead of her, and the tool route's
    recalls filled FastAPI's pool beside the turns)."""
    world = make_world(bank, read_rate_per_minute=1_000_000)
    _seed(bank, "member", 600)
    _jobs(bank, "member", 40)
    with serving(world.app) as http:
        bob, alice = world.auth("member"), world.auth("owner")
        mine, answered, theirs = _while_flooding(
            http,
            _bobs_reads(http, bob)[flood],
            lambda: http.get("/api/search", params={"q": "where do I live"}, headers=alice),
        )
    assert mine.status_code == 200, mine.text
    assert all(r.status_code == 200 for r in theirs), [r.text[:200] for r in theirs]
    assert answered <= 2, f"alice waited for {answered} of bob's {flood} reads"


def test_pages_of_pairs_spend_the_read_limit_by_their_size(bank: MemoryBank) -> None:
    """F2 at default limits: ~4,400 pages a minute, never a 429. Each page is now charged
    one unit, and one more per 64 KiB of it."""
    _jobs(bank, "member", 40)
    world = make_world(bank, read_rate_per_minute=20)
    with serving(world.app) as http:
        bob = world.auth("member")
        pages = [
            http.get("/api/memory-pairs", params={"limit": 1000}, headers=bob) for _ in range(20)
        ]
        codes = [p.status_code for p in pages]
        assert 429 in codes, codes
        answered = codes.index(429)
        size = len(pages[0].content)
        assert answered <= 20 // (1 + (size - 1) // (64 * 1024)), (answered, size)
        assert "MEMORYBANK_READ_RATE_PER_MINUTE" in pages[answered].json()["error"]
        owner = world.auth("owner")
        assert http.get("/api/memory-pairs", headers=owner).status_code == 200


def test_another_tenants_tool_calls_do_not_queue_mine(bank: MemoryBank) -> None:
    """F3: the REST tool route ran in FastAPI's general pool, beside the turns: 24 of bob's
    recalls there filled the tools' eight threads, and alice's recall through the same route
    waited for most of them (his 12 loops took her search from 26–29 to 161–163 ms). A tool
    call now takes its caller's turn, as over MCP."""
    world = make_world(bank, read_rate_per_minute=1_000_000)
    _seed(bank, "member", 200)
    with serving(world.app) as http:
        bob, alice = world.auth("member"), world.auth("owner")
        mine, answered, theirs = _while_flooding(
            http,
            _bobs_reads(http, bob)["tool route"],
            lambda: http.post(
                "/api/tools/default/call",
                json={"name": "recall", "arguments": {"query": "where do I live"}},
                headers=alice,
            ),
            size=3 * FLOOD,
        )
    assert mine.status_code == 200 and mine.json()["result"]["success"], mine.text
    assert all(r.status_code == 200 for r in theirs)
    assert answered <= 2, f"alice's tool call waited for {answered} of bob's"
