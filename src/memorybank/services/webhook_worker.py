"""The webhook worker: turns new events into deliveries and sends them, on its own thread,
so a save never waits for an integrator's server.

Everything it has to do is in the database (see :mod:`memorybank.stores.webhooks_sql`): a
cursor into the events, and pending deliveries with the time of their next attempt. A
server that stops mid-way leaves them for the next one (or another replica) to pick up;
a delivery is sent at least once. A failed attempt (no answer, or a status outside 2xx) is
retried after ``base_seconds`` × 2^(attempts − 1), capped at ``max_delay_seconds``, until
``max_attempts`` have failed; then the delivery is ``failed`` in the log.

Connections go through :mod:`memorybank.providers.netguard`: the addresses a webhook may reach are
those users' providers may reach (public ones; private ones only when the operator allows).

>>> worker = WebhookWorker(bank.store, AddressPolicy(), RetryPolicy(base_seconds=1))
>>> worker.run_once()  # nothing subscribed: the cursor starts at the newest event
0
>>> worker.retry.delay(3)
4.0
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import httpx

from memorybank.model import Event, Scope, utcnow
from memorybank.model.webhooks import Delivery, Webhook
from memorybank.providers.netguard import AddressPolicy, guarded_client
from memorybank.services.webhooks import payload, signature_headers
from memorybank.stores.base import Store
from memorybank.stores.webhooks_sql import Cipher, CursorMoved, sql_webhooks

log = logging.getLogger(__name__)

#: Events read per pass.
_BATCH = 500
#: With no webhook at all, how often the cursor still follows the events (a write).
_IDLE_ADVANCE_SECONDS = 30.0
#: How long a worker holds a delivery it is sending before another may retry it.
_LEASE = timedelta(seconds=60)


@dataclass(frozen=True)
class RetryPolicy:
    """When failed deliveries are tried again, and for how long."""

    base_seconds: float = 5.0
    max_attempts: int = 8
    max_delay_seconds: float = 3600.0
    timeout_seconds: float = 10.0

    def delay(self, attempts: int) -> float:
        """Seconds to wait after the ``attempts``-th failed attempt."""
        return float(min(self.base_seconds * 2 ** (attempts - 1), self.max_delay_seconds))


class WebhookWorker:
    """Sends the webhooks of ``store``'s database; :meth:`start` runs it on a thread that
    wakes every ``poll_seconds``, :meth:`run_once` does one pass (tests, scripts)."""

    def __init__(
        self,
        store: Store,
        policy: AddressPolicy | Callable[[], AddressPolicy],
        retry: RetryPolicy | None = None,
        *,
        poll_seconds: float = 1.0,
        cipher: Cipher | None = None,
    ) -> None:
        self.store = store
        self.tables = sql_webhooks(store, cipher)
        self.retry = retry or RetryPolicy()
        self.poll_seconds = poll_seconds
        self._policy = policy
        self._clients: dict[AddressPolicy, httpx.Client] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._idle_advance = float("-inf")

    # -- the thread -------------------------------------------------------------------------

    def start(self) -> None:
        """Run passes on a daemon thread until :meth:`stop`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="webhooks", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Finish the current pass, stop the thread, close connections."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.retry.timeout_seconds + 5)
            self._thread = None
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def _client(self) -> httpx.Client:
        """The client of the address policy now in force (a server's policy depends on
        whether it has users yet)."""
        policy = self._policy if isinstance(self._policy, AddressPolicy) else self._policy()
        if policy not in self._clients:
            self._clients[policy] = guarded_client(
                policy,
                timeout=self.retry.timeout_seconds,
                headers={"User-Agent": "memorybank-webhooks", "Content-Type": "application/json"},
            )
        return self._clients[policy]

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # the store may be briefly unavailable: try on the next pass
                log.exception("webhook pass failed")
            self._stop.wait(self.poll_seconds)

    # -- one pass ---------------------------------------------------------------------------

    def run_once(self) -> int:
        """Queue deliveries for new events, then attempt the due ones: how many were sent
        (successfully or not)."""
        self.fan_out()
        sent = 0
        hooks: dict[str, Webhook | None] = {}
        for delivery in self.tables.due(utcnow(), 50):
            if self._stop.is_set():
                break
            if delivery.webhook_id not in hooks:
                hooks[delivery.webhook_id] = self.tables.get(delivery.webhook_id)
            hook = hooks[delivery.webhook_id]
            if hook is not None and self.tables.claim(delivery, utcnow() + _LEASE):
                self._attempt(hook, delivery)
                sent += 1
        return sent

    def fan_out(self) -> int:
        """Turn the events after the cursor into deliveries to the webhooks that want them;
        how many deliveries were queued."""
        cursor = self.tables.cursor()
        newest = self.store.last_event_id()  # every event up to it is committed and visible
        if cursor is None:  # a new database, or webhooks just arrived: start from now
            self._enqueue([], None, newest)
            return 0
        hooks = self.tables.webhooks(active_only=True)
        if not hooks and time.monotonic() - self._idle_advance < _IDLE_ADVANCE_SECONDS:
            return 0  # nobody to send to: move the cursor now and then, not on every pass
        keys = {h.id: self._scope_keys(h) for h in hooks}
        wanted = sorted({k for ks in keys.values() for k in ks})
        events = self.store.events(wanted, cursor, _BATCH) if wanted else []
        new = events[-1].id if len(events) == _BATCH else max(newest, cursor)
        if new == cursor:
            return 0
        self._idle_advance = time.monotonic()
        deliveries = []
        for event in events:
            if event.id > new:  # committed after ``newest``: the next pass
                continue
            for hook in hooks:
                # Only what happened since the webhook was made (the cursor may be behind).
                if not (
                    _key(event) in keys[hook.id]
                    and hook.wants(event.type)
                    and event.at >= hook.created_at
                ):
                    continue
                try:
                    deliveries.append(_delivery(event, hook))
                except Exception:
                    # One event that cannot be sent costs that delivery, never the pass: a
                    # failing pass sent no webhook of any tenant on the server.
                    log.exception("event %s cannot be sent to webhook %s", event.id, hook.id)
        return len(deliveries) if self._enqueue(deliveries, cursor, new) else 0

    def _enqueue(self, deliveries: list[Delivery], old: int | None, new: int) -> bool:
        try:
            self.tables.enqueue(deliveries, (old, new))
        except CursorMoved:  # another worker queued these events
            return False
        return True

    def _scope_keys(self, hook: Webhook) -> set[str]:
        if hook.project_id is not None:
            return {Scope(user_id="", project_id=hook.project_id).key}
        projects = self.tables.org_projects(hook.org_id or "")
        return {Scope(user_id="", project_id=p).key for p in projects}

    def _attempt(self, hook: Webhook, delivery: Delivery) -> None:
        body = delivery.body.encode()
        headers = {
            **signature_headers(hook.secret, body),
            "X-Memorybank-Event": delivery.event_type,
            "X-Memorybank-Delivery": delivery.id,
        }
        status: int | None = None
        error: str | None = None
        try:
            status = self._client().post(hook.url, content=body, headers=headers).status_code
        except httpx.HTTPError as exc:
            error = (str(exc) or type(exc).__name__)[:500]
        now = utcnow()
        if status is not None and 200 <= status < 300:
            self.tables.record_attempt(
                delivery.id,
                "delivered",
                next_attempt_at=now,
                last_status=status,
                last_error=None,
                done_at=now,
            )
            return
        attempts = delivery.attempts + 1
        error = error or f"the receiver answered HTTP {status}"
        final = attempts >= self.retry.max_attempts
        self.tables.record_attempt(
            delivery.id,
            "failed" if final else "pending",
            next_attempt_at=now + timedelta(seconds=self.retry.delay(attempts)),
            last_status=status,
            last_error=error,
            done_at=now if final else None,
        )


def _key(event: Event) -> str:
    return Scope(user_id=event.user_id, project_id=event.project_id).key


def _delivery(event: Event, hook: Webhook) -> Delivery:
    delivery = Delivery(webhook_id=hook.id, event_id=event.id, event_type=event.type, body="")
    return delivery.model_copy(update={"body": payload(event, hook, delivery.id, event.type)})


__all__ = ["RetryPolicy", "WebhookWorker"]
