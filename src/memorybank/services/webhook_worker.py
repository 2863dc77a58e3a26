"""The webhook worker: turns new events into deliveries and sends them, on threads of its
own, so a save never waits for an integrator's server and no integrator's server waits for
another's.

Everything it has to do is in the database (see :mod:`memorybank.stores.webhooks_sql`): a
cursor into the events, and pending deliveries with the time of their next attempt. A
server that stops mid-way leaves them for the next one (or another replica) to pick up;
a delivery is sent at least once. A failed attempt (no answer, or a status outside 2xx) is
retried after ``base_seconds`` × 2^(attempts − 1), capped at ``max_delay_seconds``, until
``max_attempts`` have failed; then the delivery is ``failed`` in the log.

**Fairness.** Deliveries are sent by a pool of ``concurrency`` threads, in lanes: one
delivery in flight per webhook at a time (its deliveries go in order), and at most half the
lanes for the webhooks of one project or org. Each pass takes the oldest due delivery of
every webhook that has a free lane, so a receiver that accepts the connection and never
answers holds one lane until its read timeout, and delays only its own deliveries. An
attempt fails when the receiver does not accept the connection within
``connect_timeout_seconds`` or stays silent for ``timeout_seconds``.

**Who it delivers for.** Before sending, the worker asks
:func:`~memorybank.services.webhooks.paused_because`: a webhook whose creator can no longer
manage its project or org (demoted, removed, every API key revoked) gets no new deliveries,
and its pending ones end ``failed`` with the reason, unsent.

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
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import dataclass
from datetime import timedelta

import httpx

from memorybank.errors import StoreError
from memorybank.model import Event, Scope, utcnow
from memorybank.model.webhooks import Delivery, Webhook
from memorybank.providers.netguard import AddressPolicy, guarded_client
from memorybank.services.accounts import Accounts
from memorybank.services.webhooks import paused_because, payload, signature_headers
from memorybank.stores.accounts_sql import sql_accounts
from memorybank.stores.base import Store
from memorybank.stores.webhooks_sql import Cipher, CursorMoved, sql_webhooks

log = logging.getLogger(__name__)

#: Events read per pass.
_BATCH = 500
#: Webhooks whose next delivery one pass looks at.
_HEADS = 200
#: With no webhook at all, how often the cursor still follows the events (a write).
_IDLE_ADVANCE_SECONDS = 30.0
#: How long a worker holds a delivery it is sending before another may retry it, beyond
#: what the attempt's timeouts allow it (a worker that died leaves it to be retried then).
_LEASE_MARGIN_SECONDS = 60.0


@dataclass(frozen=True)
class RetryPolicy:
    """When failed deliveries are tried again, and how long one attempt may wait: for the
    connection (``connect_timeout_seconds``), then for each read or write
    (``timeout_seconds``, how long a receiver may stay silent)."""

    base_seconds: float = 5.0
    max_attempts: int = 8
    max_delay_seconds: float = 3600.0
    timeout_seconds: float = 5.0
    connect_timeout_seconds: float = 3.0

    def delay(self, attempts: int) -> float:
        """Seconds to wait after the ``attempts``-th failed attempt."""
        return float(min(self.base_seconds * 2 ** (attempts - 1), self.max_delay_seconds))

    def timeout(self) -> httpx.Timeout:
        """The timeouts of one attempt."""
        return httpx.Timeout(self.timeout_seconds, connect=self.connect_timeout_seconds)

    def lease(self) -> timedelta:
        """How long a worker holds a delivery it is attempting: the attempt's connect, write
        and read timeouts, and a margin."""
        longest = self.connect_timeout_seconds + 2 * self.timeout_seconds
        return timedelta(seconds=longest + _LEASE_MARGIN_SECONDS)


class Lanes:
    """Which webhooks have a delivery in flight: at most ``size`` in all, one per webhook,
    and at most half of ``size`` (at least one) for the webhooks of one owner (a project or
    an org), so one tenant's slow receivers never take every lane. Thread-safe.

    >>> lanes = Lanes(4)
    >>> [lanes.take(hook, "project:a") for hook in ("w1", "w1", "w2", "w3")]
    [True, False, True, False]
    >>> lanes.take("w4", "project:b"), sorted(lanes.busy())
    (True, ['w1', 'w2', 'w4'])
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.share = max(1, size // 2)
        self._owners: dict[str, str] = {}
        self._lock = threading.Lock()

    def take(self, hook_id: str, owner: str) -> bool:
        """Take a lane for ``hook_id``; false if it has one, or none is free for it."""
        with self._lock:
            if hook_id in self._owners or len(self._owners) >= self.size:
                return False
            if Counter(self._owners.values())[owner] >= self.share:
                return False
            self._owners[hook_id] = owner
            return True

    def give_back(self, hook_id: str) -> None:
        with self._lock:
            self._owners.pop(hook_id, None)

    def busy(self) -> set[str]:
        """The webhooks with a delivery in flight."""
        with self._lock:
            return set(self._owners)


def _owner(hook: Webhook) -> str:
    return f"project:{hook.project_id}" if hook.project_id is not None else f"org:{hook.org_id}"


class WebhookWorker:
    """Sends the webhooks of ``store``'s database: :meth:`start` runs passes on a thread that
    wakes every ``poll_seconds`` (or when a lane frees), sending on up to ``concurrency``
    threads; :meth:`run_once` does one pass and waits for its sends (tests, scripts)."""

    def __init__(
        self,
        store: Store,
        policy: AddressPolicy | Callable[[], AddressPolicy],
        retry: RetryPolicy | None = None,
        *,
        poll_seconds: float = 1.0,
        cipher: Cipher | None = None,
        concurrency: int = 8,
    ) -> None:
        self.store = store
        self.tables = sql_webhooks(store, cipher)
        self.accounts = Accounts(sql_accounts(store))  # roles and keys only: no master key
        self.retry = retry or RetryPolicy()
        self.poll_seconds = poll_seconds
        self.lanes = Lanes(concurrency)
        self._policy = policy
        self._clients: dict[AddressPolicy, httpx.Client] = {}
        self._clients_lock = threading.Lock()
        self._senders = ThreadPoolExecutor(concurrency, thread_name_prefix="webhook-send")
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._idle_advance = float("-inf")

    # -- the thread -------------------------------------------------------------------------

    def start(self) -> None:
        """Run passes on a daemon thread until :meth:`stop`."""
        if self._thread is None:
            try:
                self.tables.prune_bodies()  # logs from before bodies were dropped on completion
            except StoreError as exc:  # a read-only database still serves reads
                log.warning("webhook delivery bodies not pruned: %s", exc)
            self._thread = threading.Thread(target=self._loop, name="webhooks", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Finish the current pass and the attempts in flight, stop, close connections."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=self.poll_seconds + 5)
            self._thread = None
        self._senders.shutdown(wait=True, cancel_futures=True)
        with self._clients_lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()

    def _client(self) -> httpx.Client:
        """The client of the address policy now in force (a server's policy depends on
        whether it has users yet)."""
        policy = self._policy if isinstance(self._policy, AddressPolicy) else self._policy()
        with self._clients_lock:
            if policy not in self._clients:
                self._clients[policy] = guarded_client(
                    policy,
                    timeout=self.retry.timeout(),
                    headers={
                        "User-Agent": "memorybank-webhooks",
                        "Content-Type": "application/json",
                    },
                    max_connections=self.lanes.size + 2,
                )
            return self._clients[policy]

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._pass()
            except Exception:  # the store may be briefly unavailable: try on the next pass
                log.exception("webhook pass failed")
            self._wake.wait(self.poll_seconds)
            self._wake.clear()

    # -- one pass ---------------------------------------------------------------------------

    def run_once(self) -> int:
        """Queue deliveries for new events, attempt the due ones and wait for those attempts:
        how many were made (successful or not)."""
        started = self._pass()
        wait_for(started)
        return len(started)

    def _pass(self) -> list[Future[None]]:
        """Queue deliveries for new events and start attempts of the due ones, one per
        webhook with a free lane; the attempts started."""
        self.fan_out()
        started: list[Future[None]] = []
        hooks: dict[str, Webhook | None] = {}
        for delivery in self.tables.due_by_webhook(utcnow(), _HEADS, self.lanes.busy()):
            if self._stop.is_set():
                break
            if delivery.webhook_id not in hooks:
                hooks[delivery.webhook_id] = self.tables.get(delivery.webhook_id)
            hook = hooks[delivery.webhook_id]
            if hook is None:
                continue
            paused = paused_because(self.accounts, hook)
            if paused is not None:
                self.tables.give_up(hook.id, paused, utcnow())
                continue
            if not self.lanes.take(hook.id, _owner(hook)):
                continue
            if not self.tables.claim(delivery, utcnow() + self.retry.lease()):
                self.lanes.give_back(hook.id)
                continue
            started.append(self._senders.submit(self._send, hook, delivery))
        return started

    def _send(self, hook: Webhook, delivery: Delivery) -> None:
        try:
            self._attempt(hook, delivery)
        except Exception:  # recorded nothing: the lease ends and the delivery is retried
            log.exception("webhook delivery %s failed", delivery.id)
        finally:
            self.lanes.give_back(hook.id)
            self._wake.set()  # a lane is free: the loop looks for that webhook's next one

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
        if events:  # a webhook whose creator can no longer manage it gets nothing
            hooks = [h for h in hooks if paused_because(self.accounts, h) is None]
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
            # Only the status matters: the receiver's body is never read.
            with self._client().stream("POST", hook.url, content=body, headers=headers) as sent:
                status = sent.status_code
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


__all__ = ["Lanes", "RetryPolicy", "WebhookWorker"]
