"""memorybank.AsyncClient beyond the shared contract (``tests/core/test_bank.py`` runs that
through it as well): the same interface as :class:`memorybank.Client`, each method a
coroutine; its retries and errors; the AI's side; concurrent calls on one client. Against real
servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import inspect
import time

import pytest

import memorybank
from client_helpers import ME, scripted, served
from memorybank import (
    AsyncClient,
    Caller,
    Client,
    MemoryBank,
    MemoryBankError,
    NotFound,
    PermissionDenied,
    StoreError,
    ValidationError,
)
from memorybank.core.prompt import auto_recall
from memorybank.errors import RateLimited
from server_helpers import free_port

#: What only one of the two has: closing (``aclose`` is httpx's async name).
ONLY_SYNC = {"close"}
ONLY_ASYNC = {"aclose"}


def _public(cls: type) -> dict[str, object]:
    return {name: getattr(cls, name) for name in dir(cls) if not name.startswith("_")}


def test_the_async_client_has_the_clients_methods_with_the_same_signatures() -> None:
    sync, asynchronous = _public(Client), _public(AsyncClient)
    assert set(sync) - ONLY_SYNC == set(asynchronous) - ONLY_ASYNC
    assert "AsyncClient" in memorybank.__all__
    for name, method in sync.items():
        if name in ONLY_SYNC or not callable(method):
            continue
        twin = asynchronous[name]
        assert inspect.iscoroutinefunction(twin), name
        assert not inspect.iscoroutinefunction(method), name
        assert str(inspect.signature(twin)) == str(inspect.signature(method)), name
        assert twin.__doc__ == method.__doc__, name
    assert str(inspect.signature(Client.save)).endswith("-> 'SaveResult'")


def test_429_and_503_are_retried_after_what_retry_after_says() -> None:
    answers = [
        ME,
        (429, {"Retry-After": "1"}, {"error": "too many memory writes"}),
        (503, {}, {"error": "the database is locked"}),
        (200, {}, {"count": 7}),
    ]

    async def count(url: str) -> int:
        async with AsyncClient(url, "mb_key") as client:
            return await client.count("alice")

    with scripted(answers) as (url, arrivals):
        assert asyncio.run(count(url)) == 7
    times = [t for t, _, _ in arrivals]
    assert [p for _, _, p in arrivals][1:] == ["/api/memories/count?scopes=all"] * 3
    assert times[2] - times[1] >= 0.95  # waited the second Retry-After asked for


def test_retries_run_out_into_the_error_the_status_stands_for() -> None:
    limited = (429, {"Retry-After": "0"}, {"error": "too many memory writes: try in 0 s"})

    async def save(url: str) -> None:
        async with AsyncClient(url, retries=1) as client:
            await client.save("alice", "User prefers green tea", "preference")

    with scripted([ME, limited, limited]) as (url, arrivals):
        with pytest.raises(RateLimited, match="too many"):
            asyncio.run(save(url))
    assert len(arrivals) == 3


def test_an_unreachable_server_is_a_store_error_after_the_retries() -> None:
    async def count() -> int:
        async with AsyncClient(f"http://127.0.0.1:{free_port()}", retries=2) as client:
            return await client.count("local")

    started = time.monotonic()
    with pytest.raises(StoreError, match="cannot reach"):
        asyncio.run(count())
    assert time.monotonic() - started < 5


def test_the_key_decides_the_user(bank: MemoryBank) -> None:
    async def as_alice(url: str, key: str) -> None:
        async with AsyncClient(url, key) as alice:
            with pytest.raises(MemoryBankError, match=r"await client\.me\(\)"):
                _ = alice.user_id  # not known before the first call
            saved = await alice.save("alice", "User prefers green tea", "preference")
            assert saved.success and saved.memory is not None
            assert alice.user_id == "alice"
            with pytest.raises(PermissionDenied, match="acts for 'alice'"):
                await alice.search("bob", "tea")
            with pytest.raises(NotFound):
                await alice.get("mem_nope", "alice")
        async with AsyncClient(url, "mb_wrong") as stranger:
            with pytest.raises(PermissionDenied, match="key"):
                await stranger.me()

    with served(bank) as (url, accounts):
        accounts.create_user("alice")
        asyncio.run(as_alice(url, accounts.create_key("alice")[1]))


def test_the_ai_side_over_http(bank: MemoryBank) -> None:
    async def chat(url: str) -> str:
        async with AsyncClient(url) as client:  # local mode: the user "local"
            specs = await client.tool_definitions("local", "default", "openai")
            assert {s["function"]["name"] for s in specs} == {"remember", "recall", "forget"}
            arguments = {"fact": "I prefer dark mode in every editor", "category": "preference"}
            result = await client.call_tool("local", "default", "remember", arguments)
            assert result["success"] is True
            broken = await client.call_tool("local", "default", "remember", "{not json")
            assert broken["success"] is False
            prompt = await client.system_prompt("local", "default", 1000)
            assert "User prefers dark mode in every editor" in prompt
            await client.save("local", "User's sister Ana lives in Madrid", "context")
            with pytest.raises(ValidationError) as err:
                await client.save("local", "short", "preference")
            assert err.value.field == "content"
            return await client.auto_recall(Caller(user_id="local"), "Where does my sister live?")

    with served(bank) as (url, _):
        recalled = asyncio.run(chat(url))
    assert recalled == auto_recall(bank, Caller(user_id="local"), "Where does my sister live?")
    assert "Madrid" in recalled


def test_one_client_serves_concurrent_calls(bank: MemoryBank) -> None:
    """Calls on one client may run at once (``asyncio.gather``), each getting its own answer,
    in local mode for several users."""
    facts = {
        "alice": "User prefers green tea",
        "bob": "User prefers black coffee",
        "carol": "User prefers sparkling water",
    }

    async def run(url: str) -> list[list[str]]:
        async with AsyncClient(url) as client:
            await asyncio.gather(*(client.save(u, f, "preference") for u, f in facts.items()))
            found = await asyncio.gather(*(client.search(u, "drink") for u in facts))
            return [[hit.memory.content for hit in hits] for hits in found]

    with served(bank) as (url, _):
        assert asyncio.run(run(url)) == [[fact] for fact in facts.values()]


def test_async_client_ignores_a_hostile_retry_after_and_dot_ids(bank: MemoryBank) -> None:
    """Issue 34, finding 11, for the async twin."""

    async def limited_save(url: str) -> None:
        async with AsyncClient(url, retries=1, max_wait=0.5) as client:
            await client.save("alice", "User prefers green tea", "preference")

    async def clear_dots(url: str) -> str:
        async with AsyncClient(url) as client:
            kept = (await client.save("alice", "User prefers green tea", "preference")).memory_id
            with pytest.raises(ValidationError, match="is not an id"):
                await client.clear("alice", project_id="..")
            return (await client.get(kept, "alice")).content

    limited = (429, {"Retry-After": "²"}, {"error": "too many memory writes"})
    with scripted([ME, limited, limited]) as (url, _), pytest.raises(RateLimited):
        asyncio.run(limited_save(url))
    with served(bank) as (url, _):
        assert asyncio.run(clear_dots(url)) == "User prefers green tea"
