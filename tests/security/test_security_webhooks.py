"""Issue 27, findings 4, 6 and 13, and the event streams' cap, performed over real HTTP.

* **4** — a tenant points webhooks at a receiver that accepts the connection and never
  answers. Another org's delivery still arrives while those connections hang, and the
  silent receiver never holds more than its share of the sending lanes.
* **6** — a project admin makes a webhook, then is demoted (or loses every API key): nothing
  more is sent to it, the owner sees it paused with the reason, and deletes it.
* **13** — a project has at most 10 webhooks and a webhook at most 5 test sends a minute, each
  refused with a 4xx naming the limit and its setting; a delivery that is done keeps its
  status, not its body.
* **Streams** — a user holds at most 5 event streams open at once; the 6th is a 429 naming the
  setting, another user is not affected, and closing one frees its place.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from memorybank import MemoryBank
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.services.accounts import Accounts
from memorybank.settings import Settings
from memorybank.stores.sqlite import SQLiteStore
from memorybank.stores.webhooks_sql import sql_webhooks
from server_helpers import MASTER, make_world, serving, spawn_server
from webhook_receiver import receiver


def until(done: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Wait for ``done`` (a state of real servers); fail saying ``what`` did not happen."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.02)


@dataclass
class Silent:
    """A receiver that accepts every connection, reads the request and never answers."""

    url: str = ""
    requests: int = 0
    open: int = 0  # connections it holds now
    most_open: int = 0
    closed: int = 0  # connections the sender gave up on
    lock: threading.Lock = field(default_factory=threading.Lock)


@contextmanager
def silent_receiver() -> Iterator[Silent]:
    state = Silent()
    listener = socket.create_server(("127.0.0.1", 0))
    state.url = f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
    held: list[socket.socket] = []

    def hold(conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:  # the request's head; its body follows, unread
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        with state.lock:
            state.requests += 1
            state.open += 1
            state.most_open = max(state.most_open, state.open)
        while conn.recv(65536):  # never answer; wait for the sender to give up
            pass
        with state.lock:
            state.open -= 1
            state.closed += 1

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed at the end of the test
                return
            held.append(conn)
            threading.Thread(target=hold, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield state
    finally:
        # Shut down, not only closed (a thread blocked on a socket keeps it open): the
        # listener refuses new connections, the sender sees the held ones end.
        for sock in (listener, *held):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _accounts(db: Path, embedder: LocalEmbedder) -> tuple[MemoryBank, Accounts]:
    bank = MemoryBank(SQLiteStore(db, dimension=embedder.dimension), embedder)
    return bank, Accounts.open(bank, Settings(url=f"sqlite:///{db}", master_key=MASTER))


@contextmanager
def served(db: Path, **env: str) -> Iterator[httpx.Client]:
    """``memorybank serve`` on ``db`` in auth mode, its webhook worker polling fast and loopback
    receivers allowed (they stand in for integrators' servers on the internet)."""
    proc, url = spawn_server(
        f"sqlite:///{db}",
        env={
            "MEMORYBANK_MASTER_KEY": MASTER,
            "MEMORYBANK_PROVIDER_ALLOW_PRIVATE": "true",
            "MEMORYBANK_WEBHOOK_POLL_SECONDS": "0.05",
            **env,
        },
    )
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            yield http
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def hook(http: httpx.Client, who: dict[str, str], url: str, **owner: str) -> str:
    made = http.post("/api/webhooks", json={"url": url, **owner}, headers=who)
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def save(http: httpx.Client, who: dict[str, str], project: str, fact: str) -> None:
    saved = http.post(f"/api/memory/drive/{project}", json={"fact": fact}, headers=who)
    assert saved.status_code == 201, saved.text


# -- finding 4: a receiver that never answers --------------------------------------------------


def test_a_receiver_that_never_answers_delays_only_itself(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    db = tmp_path / "slow.db"
    bank, accounts = _accounts(db, embedder)
    keys = {}
    for user in ("mallory", "bob"):
        accounts.create_user(user)
        keys[user] = accounts.create_key(user)[1]
    accounts.create_project("slowpoke", owner="mallory")
    accounts.create_project("apollo", owner="bob", org_id="acme")
    accounts.add_org_member("acme", "bob", "admin")
    bank.close()
    mallory, bob = _auth(keys["mallory"]), _auth(keys["bob"])
    # Four lanes: at most two for one project's webhooks. A read timeout far beyond the test,
    # so the silent receiver's connections hang for all of it.
    env = {
        "MEMORYBANK_WEBHOOK_CONCURRENCY": "4",
        "MEMORYBANK_WEBHOOK_READ_TIMEOUT_SECONDS": "120",
    }
    # The silent receiver lets go first, so the server is not stopped while it waits on it.
    with receiver() as fast, served(db, **env) as http, silent_receiver() as silent:
        for _ in range(3):
            hook(http, mallory, silent.url, project_id="slowpoke")
        org_hook = hook(http, bob, fast.url, org_id="acme")
        save(http, mallory, "slowpoke", "Slowpoke ships in May")
        until(lambda: silent.requests >= 1, "a delivery to the silent receiver")
        save(http, bob, "apollo", "Apollo ships in June")
        fast.wait_for(1)
        # The other org's delivery came while every silent connection still hung.
        assert silent.closed == 0
        until(lambda: silent.open == 2, "two hanging deliveries (the project's share)")
        assert json.loads(fast.received[0].body)["event"]["project_id"] == "apollo"

        def delivered() -> bool:
            # The receiver has it; the worker records the answer a moment later.
            path = f"/api/webhooks/{org_hook}/deliveries"
            log = http.get(path, headers=bob).json()["deliveries"]
            return [(d["event_type"], d["status"]) for d in log] == [("created", "delivered")]

        until(delivered, "the other org's delivery recorded as delivered")
        # The third webhook's delivery waits for a lane of its project: never three at once.
        save(http, bob, "apollo", "Apollo's launch review is on Friday")
        fast.wait_for(2)
        assert silent.most_open == 2 and silent.closed == 0


# -- finding 6: the creator of a webhook loses the right to manage it ---------------------------


def _demote(accounts: Accounts, user: str) -> None:
    accounts.add_member("apollo", user, "member")


def _revoke_keys(accounts: Accounts, user: str) -> None:
    for key in accounts.keys(user):
        accounts.revoke_key(key.id)


@pytest.mark.parametrize("lose", [_demote, _revoke_keys], ids=["demoted", "keys revoked"])
def test_a_webhook_stops_when_its_creator_may_no_longer_manage_it(
    tmp_path: Path, embedder: LocalEmbedder, lose: Callable[[Accounts, str], None]
) -> None:
    db = tmp_path / "demoted.db"
    bank, accounts = _accounts(db, embedder)
    keys = {}
    for user in ("alice", "adam"):
        accounts.create_user(user)
        keys[user] = accounts.create_key(user)[1]
    accounts.create_project("apollo", owner="alice")
    accounts.add_member("apollo", "adam", "admin")
    alice, adam = _auth(keys["alice"]), _auth(keys["adam"])
    with receiver() as theirs, receiver() as control, served(db) as http:
        adams = hook(http, adam, theirs.url, project_id="apollo")
        save(http, alice, "apollo", "Apollo ships in May")
        theirs.wait_for(1)
        lose(accounts, "adam")  # as `memorybank admin` does, on the server's database
        hook(http, alice, control.url, project_id="apollo")
        save(http, alice, "apollo", "Apollo's launch review is on Friday")
        # Both webhooks' deliveries of an event are decided in one pass: once the control
        # has its delivery, adam's webhook has had its chance and was given nothing.
        control.wait_for(1)
        assert len(theirs.received) == 1
        log = http.get(f"/api/webhooks/{adams}/deliveries", headers=alice).json()
        assert [d["status"] for d in log["deliveries"]] == ["delivered"]
        listed = http.get("/api/webhooks", headers=alice).json()["webhooks"]
        paused = {h["id"]: h["paused"] for h in listed}
        assert paused[adams] is not None and "adam" in paused[adams], paused
        assert all(reason is None for h, reason in paused.items() if h != adams), paused
        assert http.delete(f"/api/webhooks/{adams}", headers=alice).status_code == 204
        listed = http.get("/api/webhooks", headers=alice).json()["webhooks"]
        assert adams not in [h["id"] for h in listed]
    bank.close()


# -- finding 13: how many webhooks and test sends; what the log keeps ---------------------------


def test_webhooks_and_test_sends_are_limited_and_the_log_keeps_no_bodies(bank: MemoryBank) -> None:
    world = make_world(bank, provider_allow_private=True, webhook_poll_seconds=0.05)
    with receiver() as rx, serving(world.app) as http:
        admin = world.auth("admin")
        made = [hook(http, admin, rx.url, project_id="apollo") for _ in range(10)]
        refused = http.post(
            "/api/webhooks", json={"url": rx.url, "project_id": "apollo"}, headers=admin
        )
        assert refused.status_code == 422, refused.text
        error = refused.json()["error"]
        assert "10 webhooks" in error and "MEMORYBANK_WEBHOOK_MAX_PER_PROJECT" in error
        assert len(http.get("/api/webhooks", headers=admin).json()["webhooks"]) == 10
        first = made[0]
        for _ in range(5):
            sent = http.post(f"/api/webhooks/{first}/test", headers=admin)
            assert sent.status_code == 202, sent.text
        throttled = http.post(f"/api/webhooks/{first}/test", headers=admin)
        assert throttled.status_code == 429, throttled.text
        assert "MEMORYBANK_WEBHOOK_TEST_SENDS_PER_MINUTE" in throttled.json()["error"]
        assert 1 <= int(throttled.headers["Retry-After"]) <= 60
        # Another webhook has its own tests.
        assert http.post(f"/api/webhooks/{made[1]}/test", headers=admin).status_code == 202
        save(http, world.auth("owner"), "apollo", "Apollo's secret codename is Bluebird")
        rx.wait_for(6 + 10)  # the tests and one event to each of the 10 webhooks
        tables = sql_webhooks(bank.store)

        def all_done() -> bool:
            return all(d.status != "pending" for h in made for d in tables.deliveries(h, 50))

        until(all_done, "every delivery")
        logged = [d for h in made for d in tables.deliveries(h, 50)]
        assert len(logged) == 16 and {d.status for d in logged} == {"delivered"}
        assert {d.body for d in logged} == {""}  # status kept, body gone
    assert b"Bluebird" in b"".join(r.body for r in rx.received)


# -- event streams: how many one user holds open -------------------------------------------------


def test_a_user_holds_at_most_five_event_streams(bank: MemoryBank) -> None:
    world = make_world(bank, webhooks_enabled=False)
    with serving(world.app) as http, ExitStack() as streams:

        def stream(user: str) -> httpx.Response:
            return streams.enter_context(
                http.stream("GET", "/api/events", headers=world.auth(user))
            )

        held = [stream("member") for _ in range(5)]
        assert [r.status_code for r in held] == [200] * 5
        sixth = stream("member")
        assert sixth.status_code == 429
        sixth.read()
        error = sixth.json()["error"]
        assert "at most 5 event streams" in error and "MEMORYBANK_EVENT_STREAMS_PER_USER" in error
        assert int(sixth.headers["Retry-After"]) >= 1
        assert stream("owner").status_code == 200  # another user's streams are their own
        held[0].close()  # the client goes away: its place is free once the server sees it

        def reopened() -> bool:
            with http.stream("GET", "/api/events", headers=world.auth("member")) as again:
                return again.status_code == 200

        until(reopened, "a stream after one was closed")
