"""Webhooks (issue 21): signed deliveries to a real receiver on 127.0.0.1, retried with
backoff by a worker whose pending work lives in the database (surviving a restart of the
server), sent off the save path, and only to addresses the operator allows."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from tests.server_helpers import make_world, spawn_server, stored_bytes
from tests.webhook_receiver import Received, receiver

from memorybank import MemoryBank
from memorybank.errors import ConfigurationError, ValidationError
from memorybank.model import utcnow
from memorybank.model.webhooks import Delivery
from memorybank.providers.netguard import AddressPolicy
from memorybank.services.webhook_worker import RetryPolicy, WebhookWorker
from memorybank.services.webhooks import Webhooks, sign, verify
from memorybank.stores.sqlite import SQLiteStore
from memorybank.stores.webhooks_sql import sql_webhooks

LOOPBACK = AddressPolicy(allow_loopback=True)
FAST = RetryPolicy(base_seconds=0.05, max_attempts=3, timeout_seconds=5)


def run_until(worker: WebhookWorker, done: object, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:  # type: ignore[operator]
        worker.run_once()
        time.sleep(0.02)


def wait_until_settled(deliveries_url: str, timeout: float = 20) -> dict[str, Any]:
    """The server's delivery log once no delivery in it is pending any more."""
    deadline = time.monotonic() + timeout
    while True:
        log: dict[str, Any] = httpx.get(deliveries_url).json()
        if all(d["status"] != "pending" for d in log["deliveries"]):
            return log
        assert time.monotonic() < deadline, f"still pending after {timeout} s: {log}"
        time.sleep(0.05)


def newest(hooks: Webhooks, hook_id: str) -> Delivery | None:
    found = hooks.deliveries(hook_id, 1)
    return found[0] if found else None


def signed(secret: str, request: Received) -> bool:
    return verify(secret, request.body, request.headers)


def test_signature_is_hmac_sha256_over_timestamp_and_body() -> None:
    import hashlib
    import hmac

    body = b'{"type":"created"}'
    expected = hmac.new(b"whsec_k", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert sign("whsec_k", 1_700_000_000, body) == "v1=" + expected
    headers = {"x-memorybank-timestamp": "1700000000", "x-memorybank-signature": "v1=" + expected}
    assert verify("whsec_k", body, headers, now=1_700_000_100)
    assert not verify("whsec_k", body + b" ", headers, now=1_700_000_100)  # body changed
    assert not verify("whsec_k", body, headers, now=1_700_001_000)  # too old: a replay


def test_project_events_reach_the_receiver_signed(any_bank: MemoryBank) -> None:
    hooks = Webhooks(any_bank.store, LOOPBACK)
    worker = WebhookWorker(any_bank.store, LOOPBACK, FAST)
    worker.run_once()  # the cursor starts at the newest event: history is not replayed
    with receiver() as rx:
        hook = hooks.create(
            "owner", rx.url, project_id="apollo", event_types=["created", "deleted"]
        )
        any_bank.save("owner", "I prefer tea")  # private memory: never sent
        saved = any_bank.save("owner", "Apollo ships in May", project_id="apollo")
        mid = str(saved.memory_id)
        run_until(worker, lambda: len(rx.received) >= 1)
        any_bank.update(mid, "owner", project_id="apollo", content="Apollo ships in June")
        any_bank.save("owner", "Zeus ships in July", project_id="zeus")  # another project
        any_bank.delete(mid, "owner", project_id="apollo")
        run_until(worker, lambda: len(rx.received) >= 2)
        assert worker.run_once() == 0  # a pass waits for its sends: nothing was left to send
        got = rx.received
    bodies = [json.loads(r.body) for r in got]
    # The created event's text went with the deleted memory; the delivery queued before
    # the delete still carries it, and the deletion carries none.
    assert [(b["type"], b["event"]["memory_id"]) for b in bodies] == [
        ("created", mid),
        ("deleted", mid),
    ]
    assert bodies[1]["event"]["content"] is None
    assert all(signed(hook.secret, r) for r in got)
    assert not signed("whsec_wrong", got[0])
    assert [r.headers["X-Memorybank-Event"] for r in got] == ["created", "deleted"]
    log = hooks.deliveries(hook.id)
    assert [(d.event_type, d.status, d.attempts, d.last_status) for d in log] == [
        ("deleted", "delivered", 1, 200),
        ("created", "delivered", 1, 200),
    ]


def test_a_failing_receiver_is_retried_with_backoff_then_given_up(bank: MemoryBank) -> None:
    hooks = Webhooks(bank.store, LOOPBACK)
    worker = WebhookWorker(bank.store, LOOPBACK, FAST)
    worker.run_once()
    with receiver([500]) as rx:
        hook = hooks.create("u1", rx.url, project_id="p1")
        bank.save("u1", "Project deadline is Friday", project_id="p1")
        run_until(worker, lambda: getattr(newest(hooks, hook.id), "status", "") == "failed")
        times = [float(r.headers["X-Memorybank-Timestamp"]) for r in rx.received]
    [delivery] = hooks.deliveries(hook.id)
    assert (delivery.status, delivery.attempts, delivery.last_status) == ("failed", 3, 500)
    assert "HTTP 500" in (delivery.last_error or "")
    assert len(rx.received) == 3 and times == sorted(times)


def test_org_webhooks_get_every_project_of_the_org(bank: MemoryBank) -> None:
    world = make_world(bank)
    world.accounts.create_project("hermes", owner="owner", org_id="acme")
    world.accounts.create_project("ares", owner="owner", org_id="acme")
    world.accounts.add_org_member("acme", "owner", "admin")  # who may make an org's webhook
    hooks = Webhooks(bank.store, LOOPBACK)
    worker = WebhookWorker(bank.store, LOOPBACK, FAST)
    worker.run_once()
    with receiver() as rx:
        hooks.create("owner", rx.url, org_id="acme")
        for project in ("hermes", "apollo", "ares"):  # apollo is in no org
            bank.save("owner", f"{project.title()} ships soon", project_id=project)
        run_until(worker, lambda: len(rx.received) >= 2)
        assert worker.run_once() == 0  # a pass waits for its sends: nothing was left to send
        projects = sorted(json.loads(r.body)["event"]["project_id"] for r in rx.received)
    assert projects == ["ares", "hermes"]


def test_pending_deliveries_end_unsent_once_the_creator_is_demoted(any_bank: MemoryBank) -> None:
    bank = any_bank
    world = make_world(bank)
    hooks = Webhooks(bank.store, LOOPBACK)
    worker = WebhookWorker(bank.store, LOOPBACK, FAST)
    worker.run_once()
    with receiver() as rx:
        hook = hooks.create("admin", rx.url, project_id="apollo")
        bank.save("owner", "Apollo ships in May", project_id="apollo")
        bank.save("owner", "Apollo's budget is twelve engineers", project_id="apollo")
        assert worker.fan_out() == 2  # queued while its creator was an admin
        world.accounts.add_member("apollo", "admin", "member")
        assert worker.run_once() == 0  # both end in the one pass, unsent
        bank.save("owner", "Apollo's review is on Friday", project_id="apollo")
        worker.run_once()
        assert rx.received == []
    log = hooks.deliveries(hook.id)  # the third event was never queued
    assert [(d.status, d.attempts, d.body) for d in log] == [("failed", 0, "")] * 2
    for delivery in log:
        assert "not sent: its creator 'admin' is not an admin or owner" in (
            delivery.last_error or ""
        )


def test_one_webhooks_backlog_does_not_hide_anothers_next_delivery(any_bank: MemoryBank) -> None:
    bank = any_bank
    hooks = Webhooks(bank.store, LOOPBACK)
    worker = WebhookWorker(bank.store, LOOPBACK, FAST)
    with receiver() as busy, receiver() as other:
        first = hooks.create("u1", busy.url, project_id="p1")
        second = hooks.create("u1", other.url, project_id="p2")
        for _ in range(300):  # more than one pass looks at
            hooks.tables.enqueue([Delivery(webhook_id=first.id, event_type="test", body="{}")])
        hooks.send_test(second)
        due = hooks.tables.due_by_webhook(utcnow(), 50)
        assert [d.webhook_id for d in due] == [first.id, second.id]  # one each, oldest first
        worker.run_once()
        assert (len(busy.received), len(other.received)) == (1, 1)


def test_urls_follow_the_provider_address_rules(bank: MemoryBank) -> None:
    public_only = Webhooks(bank.store, AddressPolicy())
    private_ok = Webhooks(bank.store, AddressPolicy(allow_loopback=True, allow_private=True))
    for url in ("http://127.0.0.1:9/hook", "http://10.1.2.3/hook", "http://[::1]/h"):
        with pytest.raises(ValidationError, match="MEMORYBANK_PROVIDER_ALLOW_PRIVATE"):
            public_only.create("u1", url, project_id="p1")
        private_ok.create("u1", url, project_id="p1")
    with pytest.raises(ValidationError, match="metadata"):
        private_ok.create("u1", "http://169.254.169.254/latest", project_id="p1")
    with pytest.raises(ValidationError, match="event types"):
        private_ok.create("u1", "https://example.com/h", project_id="p1", event_types=["nope"])
    with pytest.raises(ValidationError, match="one of them"):
        private_ok.create("u1", "https://example.com/h")


def test_a_name_resolving_to_loopback_is_refused_when_connecting(bank: MemoryBank) -> None:
    worker = WebhookWorker(bank.store, AddressPolicy(), FAST)
    hooks = Webhooks(bank.store, AddressPolicy())
    worker.run_once()
    with receiver() as rx:
        port = rx.url.split(":")[2].split("/")[0]
        hook = hooks.create("u1", f"http://localhost:{port}/hook", project_id="p1")
        hooks.send_test(hook)
        run_until(worker, lambda: getattr(newest(hooks, hook.id), "attempts", 0) >= 1)
        assert rx.received == []
    assert "loopback" in (hooks.deliveries(hook.id)[0].last_error or "")


def test_deliveries_never_hold_up_a_save(tmp_path: Path, bank: MemoryBank) -> None:
    hooks = Webhooks(bank.store, LOOPBACK)
    worker = WebhookWorker(bank.store, LOOPBACK, FAST, poll_seconds=0.02)
    worker.run_once()
    with receiver(hold=True) as rx:  # a receiver that answers only when the test lets it
        hooks.create("u1", rx.url, project_id="p1")
        worker.start()
        try:
            bank.save("u1", "Project kickoff is Monday", project_id="p1")
            rx.wait_for(1)  # the worker is now waiting on the receiver
            for i in range(5):
                bank.save("u1", f"Project milestone {i} is due in week {i + 2}", project_id="p1")
            assert rx.answered == 0  # all saved while the delivery was held
            assert bank.count("u1", project_id="p1") == 6
            assert rx.hold is not None
            rx.hold.set()
        finally:
            worker.stop()


def test_rest_refuses_private_addresses_unless_allowed(bank: MemoryBank) -> None:
    refusing = make_world(bank)
    with TestClient(refusing.app) as client:
        made = client.post(
            "/api/webhooks",
            json={"url": "http://127.0.0.1:9/h", "project_id": "apollo"},
            headers=refusing.auth("owner"),
        )
        assert made.status_code == 422 and "private" in made.json()["error"].lower()


def test_rest_webhook_management(tmp_path: Path, embedder: object) -> None:
    from memorybank.providers.embedders.local import LocalEmbedder

    assert isinstance(embedder, LocalEmbedder)
    store = SQLiteStore(tmp_path / "rest.db", dimension=embedder.dimension)
    with MemoryBank(store, embedder) as bank, receiver() as rx:
        world = make_world(bank, provider_allow_private=True, webhooks_enabled=False)
        client = TestClient(world.app)
        body = {"url": rx.url, "project_id": "apollo", "event_types": ["created", "test"]}
        assert (
            client.post("/api/webhooks", json=body, headers=world.auth("member")).status_code == 403
        )
        assert (
            client.post("/api/webhooks", json=body, headers=world.auth("outsider")).status_code
            == 404
        )
        org = {"url": rx.url, "org_id": "acme"}
        assert (
            client.post("/api/webhooks", json=org, headers=world.auth("owner")).status_code == 404
        )
        made = client.post("/api/webhooks", json=body, headers=world.auth("admin"))
        assert made.status_code == 201, made.text
        hook = made.json()
        assert hook["secret"].startswith("whsec_") and hook["event_types"] == ["created", "test"]
        listed = client.get("/api/webhooks", headers=world.auth("owner")).json()["webhooks"]
        assert [h["id"] for h in listed] == [hook["id"]] and listed[0]["secret"] is None
        assert client.get("/api/webhooks", headers=world.auth("member")).json()["webhooks"] == []
        hid = hook["id"]
        assert (
            client.post(f"/api/webhooks/{hid}/test", headers=world.auth("member")).status_code
            == 404
        )
        test = client.post(f"/api/webhooks/{hid}/test", headers=world.auth("owner"))
        assert test.status_code == 202 and test.json()["status"] == "pending"
        # The secret is sealed with the master key: the database alone cannot sign.
        assert hook["secret"].encode() not in stored_bytes(bank)
        with pytest.raises(ConfigurationError, match="master key"):
            WebhookWorker(bank.store, LOOPBACK, FAST).run_once()
        worker = WebhookWorker(bank.store, LOOPBACK, FAST, cipher=world.accounts.cipher)
        run_until(worker, lambda: len(rx.received) >= 1)
        assert json.loads(rx.received[0].body)["type"] == "test"
        assert signed(hook["secret"], rx.received[0])
        log = client.get(f"/api/webhooks/{hid}/deliveries", headers=world.auth("admin")).json()
        assert [(d["event_type"], d["status"]) for d in log["deliveries"]] == [
            ("test", "delivered")
        ]
        assert client.delete(f"/api/webhooks/{hid}", headers=world.auth("admin")).status_code == 204
        assert (
            client.get(f"/api/webhooks/{hid}/deliveries", headers=world.auth("admin")).status_code
            == 404
        )


@pytest.mark.slow  # two real server processes, each loading the model
def test_a_delivery_survives_a_server_restart(tmp_path: Path) -> None:
    """A receiver fails twice, then succeeds; the server is stopped after the first failure
    and a new one on the same database delivers the rest."""
    db = f"sqlite:///{tmp_path / 'restart.db'}"
    env = {
        "MEMORYBANK_WEBHOOK_POLL_SECONDS": "0.05",
        "MEMORYBANK_WEBHOOK_RETRY_BASE_SECONDS": "0.3",
    }
    with receiver([500, 500, 200]) as rx:
        proc, url = spawn_server(db, env=env)
        try:
            hook = httpx.post(url + "/api/webhooks", json={"url": rx.url, "project_id": "apollo"})
            assert hook.status_code == 201, hook.text
            secret = hook.json()["secret"]
            saved = httpx.post(
                url + "/api/memory/drive/apollo", json={"fact": "Apollo ships in May"}
            )
            assert saved.status_code == 201, saved.text
            rx.wait_for(1)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        assert len(rx.received) == 1
        with SQLiteStore(tmp_path / "restart.db", dimension=384) as store:
            [pending] = sql_webhooks(store).deliveries(hook.json()["id"], 10)
        assert (pending.status, pending.attempts, pending.last_status) == ("pending", 1, 500)
        proc, url = spawn_server(db, env=env)
        try:
            rx.wait_for(3)
            log = wait_until_settled(url + f"/api/webhooks/{hook.json()['id']}/deliveries")
            got = list(rx.received)  # the log says delivered: no attempt can follow
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    assert len(got) == 3  # delivered once it succeeded: nothing more
    assert len({r.body for r in got}) == 1 and all(signed(secret, r) for r in got)
    assert json.loads(got[0].body)["event"]["content"] == "Apollo ships in May"
    assert [(d["status"], d["attempts"], d["last_status"]) for d in log["deliveries"]] == [
        ("delivered", 3, 200)
    ]
