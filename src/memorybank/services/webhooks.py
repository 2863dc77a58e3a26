"""Webhooks for integrators (issue 21): an endpoint URL per project or per org, the event
types it wants, and a log of deliveries. :mod:`memorybank.services.webhook_worker` sends them.

Every delivery is a JSON ``POST`` signed with the webhook's secret: HMAC-SHA256 over the
timestamp, a dot, and the raw body, sent as

* ``X-Memorybank-Timestamp``: Unix seconds when the attempt was made;
* ``X-Memorybank-Signature``: ``v1=`` and the hex digest.

A receiver recomputes the digest from the raw body, compares in constant time, and refuses
old timestamps (replays). :func:`verify` does exactly that:

>>> body = b'{"type": "created"}'
>>> headers = signature_headers("whsec_test", body, timestamp=1_800_000_000)
>>> verify("whsec_test", body, headers, now=1_800_000_010)
True
>>> verify("whsec_other", body, headers, now=1_800_000_010)
False
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Collection, Mapping, Sequence

from memorybank.errors import NotFound, ValidationError
from memorybank.model import Event
from memorybank.model.webhooks import WEBHOOK_EVENT_TYPES, Delivery, Webhook
from memorybank.providers.netguard import AddressPolicy, http_url_problem
from memorybank.stores.base import Store
from memorybank.stores.webhooks_sql import Cipher, sql_webhooks

TIMESTAMP_HEADER = "X-Memorybank-Timestamp"
SIGNATURE_HEADER = "X-Memorybank-Signature"
#: How old a signed timestamp :func:`verify` accepts, in seconds.
TOLERANCE_SECONDS = 300


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature of ``body`` sent at ``timestamp``: ``v1=`` + hex HMAC-SHA256 of
    ``"<timestamp>." + body`` keyed with ``secret``."""
    message = str(timestamp).encode() + b"." + body
    return "v1=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_headers(secret: str, body: bytes, *, timestamp: int | None = None) -> dict[str, str]:
    """The two headers that sign a delivery of ``body`` (now, unless ``timestamp``)."""
    at = int(time.time()) if timestamp is None else timestamp
    return {TIMESTAMP_HEADER: str(at), SIGNATURE_HEADER: sign(secret, at, body)}


def verify(
    secret: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    now: float | None = None,
    tolerance: int = TOLERANCE_SECONDS,
) -> bool:
    """Whether ``body`` with these headers was signed with ``secret`` within ``tolerance``
    seconds of ``now`` (what a receiver checks; header names in any case)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    stamp = lowered.get(TIMESTAMP_HEADER.lower(), "")
    given = lowered.get(SIGNATURE_HEADER.lower(), "")
    if not stamp.isdigit():
        return False
    current = time.time() if now is None else now
    if abs(current - int(stamp)) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, int(stamp), body), given)


def payload(event: Event | None, hook: Webhook, delivery_id: str, event_type: str) -> str:
    """The JSON body of one delivery: which webhook, which delivery, the event type and the
    event (``null`` for a test)."""
    return json.dumps(
        {
            "webhook_id": hook.id,
            "delivery_id": delivery_id,
            "type": event_type,
            "event": None if event is None else event.model_dump(mode="json"),
        },
        separators=(",", ":"),
    )


def url_problem(url: object, policy: AddressPolicy) -> str | None:
    """What is wrong with ``url`` as a webhook endpoint, or ``None``. Hosts that are IP
    literals must be allowed by ``policy`` (names are checked on each connection)."""
    return http_url_problem(
        url,
        policy,
        example="the address that receives the events, such as https://example.com/hook",
        credentials="check the signature instead",
        refused_for="webhooks",
    )


class Webhooks:
    """The webhooks of one database: create, list, delete, send a test, read the log.
    Who may manage which webhook is the adapter's to check (a project's admins and owners,
    an org's admins)."""

    def __init__(self, store: Store, policy: AddressPolicy, cipher: Cipher | None = None) -> None:
        self.tables = sql_webhooks(store, cipher)
        self.policy = policy

    def create(
        self,
        created_by: str,
        url: str,
        *,
        project_id: str | None = None,
        org_id: str | None = None,
        event_types: Collection[str] | None = None,
        policy: AddressPolicy | None = None,
    ) -> Webhook:
        """A new webhook for one project or one org (exactly one of them), with a new
        secret; every event type when ``event_types`` is ``None``. ``policy`` (else this
        object's) says which addresses the URL may name."""
        if (project_id is None) == (org_id is None):
            raise ValidationError(
                "give a project_id or an org_id (one of them)", field="project_id"
            )
        problem = url_problem(url, policy or self.policy)
        if problem is not None:
            raise ValidationError(f"url {problem}", field="url")
        types = tuple(WEBHOOK_EVENT_TYPES if event_types is None else dict.fromkeys(event_types))
        unknown = [t for t in types if t not in WEBHOOK_EVENT_TYPES]
        if unknown or not types:
            raise ValidationError(
                f"unknown event types {unknown}: use some of {', '.join(WEBHOOK_EVENT_TYPES)}",
                field="event_types",
            )
        hook = Webhook(
            org_id=org_id,
            project_id=project_id,
            created_by=created_by,
            url=url,
            secret="whsec_" + secrets.token_urlsafe(32),
            event_types=types,
        )
        self.tables.add(hook)
        return hook

    def get(self, hook_id: str) -> Webhook:
        """One webhook; :class:`NotFound` when there is none."""
        hook = self.tables.get(hook_id)
        if hook is None:
            raise NotFound(f"no webhook {hook_id!r}")
        return hook

    def of(self, project_ids: Sequence[str], org_ids: Sequence[str]) -> list[Webhook]:
        """The webhooks of these projects and orgs, oldest first."""
        return [
            h for h in self.tables.webhooks() if h.project_id in project_ids or h.org_id in org_ids
        ]

    def delete(self, hook_id: str) -> None:
        """Remove a webhook and its log."""
        if not self.tables.delete(hook_id):
            raise NotFound(f"no webhook {hook_id!r}")

    def send_test(self, hook: Webhook) -> Delivery:
        """Queue a ``test`` delivery (no event) to ``hook``, sent by the worker like any."""
        delivery = Delivery(webhook_id=hook.id, event_type="test", body="")
        body = payload(None, hook, delivery.id, "test")
        delivery = delivery.model_copy(update={"body": body})
        self.tables.enqueue([delivery])
        return delivery

    def deliveries(self, hook_id: str, limit: int = 50) -> list[Delivery]:
        """A webhook's deliveries, newest first."""
        return self.tables.deliveries(hook_id, limit)


__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "TOLERANCE_SECONDS",
    "Webhooks",
    "payload",
    "sign",
    "signature_headers",
    "url_problem",
    "verify",
]
