"""memorybank.Client beyond the shared contract (``test_bank.py`` runs that through it): its
retries, its errors, the AI's side (system prompt, tool definitions, tool calls), and the
user a key acts for. Against real servers on 127.0.0.1."""

from __future__ import annotations

import time

import pytest

from client_helpers import ME, scripted, served
from memorybank import (
    Caller,
    Client,
    MemoryBank,
    NotFound,
    PermissionDenied,
    StoreError,
    ValidationError,
)
from memorybank.core.events import read_events
from memorybank.core.prompt import auto_recall
from memorybank.errors import RateLimited
from server_helpers import free_port


def test_429_and_503_are_retried_after_what_retry_after_says() -> None:
    answers = [
        ME,
        (429, {"Retry-After": "1"}, {"error": "too many memory writes"}),
        (503, {}, {"error": "the database is locked"}),
        (200, {}, {"count": 7}),
    ]
    with scripted(answers) as (url, arrivals), Client(url, "mb_key") as client:
        assert client.count("alice") == 7
    times = [t for t, _, _ in arrivals]
    assert [p for _, _, p in arrivals][1:] == ["/api/memories/count?scopes=all"] * 3
    assert times[2] - times[1] >= 0.95  # waited the second Retry-After asked for


def test_retries_run_out_into_the_error_the_status_stands_for() -> None:
    limited = (429, {"Retry-After": "0"}, {"error": "too many memory writes: try in 0 s"})
    with scripted([ME, limited, limited]) as (url, arrivals), Client(url, retries=1) as client:
        with pytest.raises(RateLimited, match="too many"):
            client.save("alice", "User prefers green tea", "preference")
    assert len(arrivals) == 3


def test_an_unreachable_server_is_a_store_error_after_the_retries() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with Client(url, retries=2) as client, pytest.raises(StoreError, match="cannot reach"):
        client.count("local")
    assert time.monotonic() - started < 5


def test_the_key_decides_the_user(bank: MemoryBank) -> None:
    with served(bank) as (url, accounts):
        accounts.create_user("alice")
        key = accounts.create_key("alice")[1]
        with Client(url, key) as alice:
            assert alice.user_id == "alice"
            saved = alice.save("alice", "User prefers green tea", "preference")
            assert saved.success and saved.memory is not None
            with pytest.raises(PermissionDenied, match="acts for 'alice'"):
                alice.search("bob", "tea")
            with pytest.raises(NotFound):
                alice.get("mem_nope", "alice")
        with Client(url, "mb_wrong") as stranger, pytest.raises(PermissionDenied, match="key"):
            stranger.me()


def test_the_ai_side_over_http(bank: MemoryBank) -> None:
    with served(bank) as (url, _), Client(url) as client:  # local mode: the user "local"
        assert client.user_id == "local"
        specs = client.tool_definitions("local", "default", "openai")
        assert {s["function"]["name"] for s in specs} == {"remember", "recall", "forget"}
        result = client.call_tool(
            "local",
            "default",
            "remember",
            {"fact": "I prefer dark mode in every editor", "category": "preference"},
        )
        assert result["success"] is True
        assert client.call_tool("local", "default", "remember", "{not json")["success"] is False
        prompt = client.system_prompt("local", "default", 1000)
        assert "User prefers dark mode in every editor" in prompt
        client.save("local", "User's sister Ana lives in Madrid", "context", importance=3)
        caller = Caller(user_id="local")
        recalled = client.auto_recall(caller, "Where does my sister live?", 500)
        assert recalled == auto_recall(bank, caller, "Where does my sister live?", 500)
        assert "Madrid" in recalled
        with pytest.raises(ValidationError) as err:
            client.save("local", "short", "preference")
        assert err.value.field == "content"
        with pytest.raises(NotFound, match="no tool profile"):
            client.tool_definitions("local", "nope")


def test_events_over_http_are_the_banks(bank: MemoryBank) -> None:
    """``Client.events`` pages through what ``read_events(bank.store, …)`` answers, with its
    ``types``."""
    with served(bank) as (url, _), Client(url) as client:
        saved = client.save("local", "User drinks green tea", "preference")
        client.update(str(saved.memory_id), "local", content="User drinks black tea")
        assert client.events("local") == read_events(bank.store, "local")
        assert [e.type for e in client.events("local")] == ["created", "updated"]
        first = client.events("local", limit=1)
        assert [e.type for e in client.events("local", after=first[0].id)] == ["updated"]
        assert [e.type for e in client.events("local", types={"updated"})] == ["updated"]


def test_in_local_mode_a_client_acts_for_the_user_each_call_names(bank: MemoryBank) -> None:
    bank.save("alice", "User prefers green tea", "preference")  # as `memorybank add alice`
    with served(bank) as (url, _), Client(url) as client:
        assert [m.content for m in client.list("alice")] == ["User prefers green tea"]
        assert client.list("local") == [] and client.list("bob") == []
        saved = client.save("Zoë", "User prefers window seats", "preference")
        assert saved.memory is not None and saved.memory.user_id == "Zoë"  # percent-encoded
        assert client.count("alice") == 1 and client.count("Zoë") == 1


def test_the_user_header_counts_in_local_mode_only(bank: MemoryBank) -> None:
    from fastapi.testclient import TestClient

    from server_helpers import make_world

    local = TestClient(make_world(bank, users=False).app)
    assert local.get("/api/me").json()["user_id"] == "local"
    assert local.get("/api/me", headers={"X-Memorybank-User": "alice"}).json()["user_id"] == (
        "alice"
    )
    bad = local.get("/api/me", headers={"X-Memorybank-User": "a%0Ab"})
    assert bad.status_code == 422 and "X-Memorybank-User" in bad.json()["error"]
    world = make_world(bank)
    with TestClient(world.app) as auth:
        headers = {**world.auth("member"), "X-Memorybank-User": "owner"}
        assert auth.get("/api/me", headers=headers).json()["user_id"] == "member"


@pytest.mark.parametrize("header", ["²", "9" * 5000, "nan", "-3", "1e999", "Fri, 01 Jan"])
def test_a_hostile_retry_after_is_ignored_never_raised(header: str) -> None:
    """Issue 34, finding 11: ``Retry-After: ²`` passed ``isdigit`` and raised a bare
    ``ValueError`` from ``int``; every header that is not whole seconds is ignored."""
    limited = (429, {"Retry-After": header}, {"error": "too many memory writes"})
    with scripted([ME, limited, limited]) as (url, _), Client(url, retries=1, max_wait=0.5) as c:
        with pytest.raises(RateLimited) as raised:
            c.save("alice", "User prefers green tea", "preference")
    assert raised.value.retry_after == 1


@pytest.mark.parametrize("bad", [".", "..", ""])
def test_dot_ids_never_leave_their_path(bank: MemoryBank, bad: str) -> None:
    """Issue 34, finding 11: ``clear("alice", project_id="..")`` sent
    ``/api/memories/projects/../clear``, which the URL resolved to alice's private clear."""
    with served(bank) as (url, _), Client(url) as client:
        kept = client.save("alice", "User prefers green tea", "preference").memory_id
        with pytest.raises(ValidationError, match="is not an id"):
            client.clear("alice", project_id=bad)
        for call in (client.get, client.delete, client.history, client.restore):
            with pytest.raises(ValidationError, match="is not an id"):
                call(bad, "alice")
        with pytest.raises(ValidationError, match="is not an id"):
            client.update(bad, "alice", importance=3)
        assert client.get(kept, "alice").content == "User prefers green tea"
