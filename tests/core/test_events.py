"""Events (issue 21): every change recorded with who and through what, read by the library
(``read_events``) and streamed over Server-Sent Events by a real server, with
``Last-Event-ID`` resume, and never across tenants or projects."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server_helpers import World, make_world, serving

from memorybank import MemoryBank, tools
from memorybank.core.events import read_events
from memorybank.model import Caller, Channel
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.services import transfer
from memorybank.stores.sqlite import SQLiteStore
from memorybank.stores.sqlite_schema import MIGRATIONS


def test_channels_say_through_what_memory_changed(bank: MemoryBank) -> None:
    by_hand = bank.save("u1", "User drinks green tea", "preference", source="user")
    caller = Caller(user_id="u1")
    answer = tools.call(
        bank, tools.profile("default"), "remember", {"fact": "User owns a cat"}, caller
    )
    assert answer["success"], answer
    data = transfer.export(bank, "u1")
    transfer.import_(bank, "u2", data)
    bank.update(str(by_hand.memory_id), "u1", content="User drinks black tea")
    tools.call(bank, tools.profile("default"), "forget", {"id": answer["id"]}, caller)
    mine = [(e.type, e.channel, e.actor) for e in read_events(bank.store, "u1")]
    assert mine == [
        ("created", Channel.USER, "u1"),
        ("updated", Channel.USER, "u1"),
        ("deleted", Channel.AI, "u1"),  # the cat's created event went with it
    ]
    assert {(e.type, e.channel) for e in read_events(bank.store, "u2")} == {
        ("created", Channel.IMPORT)
    }
    assert read_events(bank.store, "u1", types={"deleted"})[0].memory_id == answer["id"]
    assert read_events(bank.store, "u1", include_private=False) == []


def test_an_existing_database_keeps_its_history_as_events(tmp_path: Path) -> None:
    """A SQLite file made before events existed (schema 4) opens with its history numbered
    in the order it was written, and new events are numbered after it."""

    class OldStore(SQLiteStore):
        migrations = MIGRATIONS[:4]

    embedder = LocalEmbedder()
    path = tmp_path / "old.db"
    with OldStore(path, dimension=embedder.dimension) as old, old.writing() as txn:
        for n, (memory, kind, text) in enumerate(
            [
                ("m1", "ADD", "User visited Oslo"),
                ("m2", "ADD", "User visited Rome"),
                ("m1", "DELETE", None),
            ]
        ):
            txn.execute(
                "INSERT INTO history (id, memory_id, user_id, project_id, scope_key, kind, "
                "old_content, new_content, actor, created_us) VALUES (?, ?, 'u1', NULL, 'u:u1', "
                "?, NULL, ?, 'u1', ?)",
                (f"evt_{n}", memory, kind, text, 1_700_000_000_000_000 + n),
            )
    with memorybank_open(path) as after:
        events = read_events(after.store, "u1")
        assert [(e.id, e.type, e.memory_id, e.content) for e in events] == [
            (1, "created", "m1", "User visited Oslo"),
            (2, "created", "m2", "User visited Rome"),
            (3, "deleted", "m1", None),
        ]
        assert [e.channel for e in events] == [None, None, None]  # not recorded back then
        saved = after.save("u1", "User visited Lisbon")
        newest = read_events(after.store, "u1", after=3)
        assert [(e.id, e.memory_id, e.channel) for e in newest] == [
            (4, saved.memory_id, Channel.AI)
        ]


def memorybank_open(path: Path) -> MemoryBank:
    import memorybank

    return memorybank.open(f"sqlite:///{path}")


# -- the stream, from a real server ------------------------------------------------------------


@pytest.fixture
def world(any_bank: MemoryBank) -> World:
    w = make_world(any_bank)
    w.accounts.create_project("zeus", owner="outsider", name="Zeus")
    return w


@pytest.fixture
def base_url(world: World) -> Iterator[str]:
    with serving(world.app) as client:
        yield str(client.base_url).rstrip("/")


class Stream:
    """An SSE client on its own thread, collecting ``(id, event, data)`` messages."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.messages: list[tuple[int, str, dict[str, Any]]] = []
        self._arrived = threading.Condition()
        self.open = threading.Event()
        self._stop = threading.Event()
        self._client = httpx.Client(timeout=30)
        self._socket: socket.socket
        self._thread = threading.Thread(target=self._run, args=(url, headers), daemon=True)
        self._thread.start()
        assert self.open.wait(10), "the stream did not open"

    def _run(self, url: str, headers: dict[str, str]) -> None:
        try:
            with self._client.stream("GET", url, headers=headers) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                self._socket = response.extensions["network_stream"].get_extra_info("socket")
                self.open.set()
                self._read(response)
        except httpx.HTTPError:
            if not self._stop.is_set():
                raise

    def _read(self, response: httpx.Response) -> None:
        fields: dict[str, str] = {}
        for line in response.iter_lines():
            if not line:
                if "data" in fields:
                    data = json.loads(fields["data"])
                    with self._arrived:
                        self.messages.append((int(fields["id"]), fields["event"], data))
                        self._arrived.notify_all()
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")

    def wait_for(self, count: int, timeout: float = 10) -> list[tuple[int, str, dict[str, Any]]]:
        """The messages once ``count`` have arrived (woken by each one, not by polling)."""
        with self._arrived:
            self._arrived.wait_for(lambda: len(self.messages) >= count, timeout)
            return list(self.messages)

    def close(self) -> None:
        """Hang up, as a browser closing the page does."""
        self._stop.set()
        self._socket.shutdown(socket.SHUT_RDWR)  # wakes the reading thread at once
        self._thread.join(timeout=10)
        self._client.close()


def test_stream_shows_only_what_the_caller_may_see(base_url: str, world: World) -> None:
    member = Stream(base_url + "/api/events", world.auth("member"))
    outsider = Stream(base_url + "/api/events", world.auth("outsider"))
    try:
        with httpx.Client(base_url=base_url, timeout=30) as client:
            save = client.post  # noqa: F841
            client.post(
                "/api/memory/user", json={"fact": "I prefer tea"}, headers=world.auth("outsider")
            ).raise_for_status()
            client.post(
                "/api/memory/drive/zeus",
                json={"fact": "Zeus ships in June"},
                headers=world.auth("outsider"),
            ).raise_for_status()
            client.post(
                "/api/memory/user", json={"fact": "I prefer coffee"}, headers=world.auth("member")
            ).raise_for_status()
            client.post(
                "/api/memory/drive/apollo",
                json={"fact": "Apollo ships in May"},
                headers=world.auth("owner"),
            ).raise_for_status()
            call = client.post(
                "/api/tools/default/call",
                json={"name": "remember", "arguments": {"fact": "User likes chess"}},
                headers=world.auth("owner"),
            )
            assert call.json()["result"]["success"]
            # The stream sends in event order: once the member's last save arrives, anything
            # of the others' the member could have seen would have arrived before it.
            client.post(
                "/api/memory/user", json={"fact": "I prefer oat milk"}, headers=world.auth("member")
            ).raise_for_status()
        seen = member.wait_for(3)
        assert [(m[1], m[2]["content"], m[2]["channel"]) for m in seen] == [
            ("created", "User prefers coffee", "user"),
            ("created", "Apollo ships in May", "user"),
            ("created", "User prefers oat milk", "user"),
        ]
        assert [m[2]["content"] for m in outsider.wait_for(2)] == [
            "User prefers tea",
            "Zeus ships in June",
        ]
        assert seen[0][0] < seen[1][0]
    finally:
        member.close()
        outsider.close()


def test_stream_resumes_after_last_event_id(base_url: str, world: World) -> None:
    with httpx.Client(base_url=base_url, timeout=30, headers=world.auth("owner")) as client:
        for fact in ("I like tea", "I like jazz", "I like chess"):
            client.post("/api/memory/user", json={"fact": fact}).raise_for_status()
        page = client.get("/api/events/list").json()
        assert [e["content"] for e in page["events"]] == [
            "User likes tea",
            "User likes jazz",
            "User likes chess",
        ]
        first = page["events"][0]["id"]
        assert client.get("/api/events", headers={"Last-Event-ID": "x"}).status_code == 422
    resumed = Stream(base_url + "/api/events", {**world.auth("owner"), "Last-Event-ID": str(first)})
    live = Stream(base_url + "/api/events", world.auth("owner"))  # from now on only
    try:
        got = resumed.wait_for(2)
        assert [m[2]["content"] for m in got] == ["User likes jazz", "User likes chess"]
        with httpx.Client(base_url=base_url, timeout=30, headers=world.auth("owner")) as client:
            mid = page["events"][1]["memory_id"]
            assert client.delete(f"/api/memory/user/{mid}").status_code == 204
        assert [(m[1], m[2]["content"]) for m in resumed.wait_for(3)][2:] == [("deleted", None)]
        assert [(m[1], m[2]["memory_id"]) for m in live.wait_for(1)] == [("deleted", mid)]
    finally:
        resumed.close()
        live.close()


def test_stream_needs_a_key(base_url: str) -> None:
    assert httpx.get(base_url + "/api/events", timeout=10).status_code == 401
