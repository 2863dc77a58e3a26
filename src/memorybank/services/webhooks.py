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
import math
import secrets
import time
from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta

from memorybank.errors import NotFound, RateLimited, ValidationError
from memorybank.model import Event, utcnow
from memorybank.model.webhooks import WEBHOOK_EVENT_TYPES, Delivery, Webhook
from memorybank.providers.netguard import AddressPolicy, http_url_problem
from memorybank.rules.permissions import Action, allowed
from memorybank.services.accounts import Accounts
from memorybank.stores.base import Store
from memorybank.stores.webhooks_sql import Cipher, sql_webhooks

TIMESTAMP_HEADER = "X-Memorybank-Timestamp"
SIGNATURE_HEADER = "X-Memorybank-Signature"
#: How old a signed timestamp :func:`verify` accepts, in seconds.
TOLERANCE_SECONDS = 300
#: Webhooks one project (or one org) may have, and test sends per webhook per minute, unless
#: the server's settings say otherwise (``MEMORYBANK_WEBHOOK_MAX_PER_PROJECT``,
#: ``MEMORYBANK_WEBHOOK_TEST_SENDS_PER_MINUTE``).
MAX_PER_PROJECT = 10
TEST_SENDS_PER_MINUTE = 5


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


def manager_problem(
    accounts: Accounts, user_id: str, *, project_id: str | None, org_id: str | None
) -> str | None:
    """Why ``user_id`` may not manage the webhooks of this project (its admins and owners, by
    the permission table's CHANGE row) or org (its admins), or ``None`` when they may. A user
    with no active API key manages nothing: revoking someone's keys is how they leave. Without
    users (local mode) the one person at the machine manages everything.

    The one decision, asked when a webhook is made or managed and again before each
    delivery: a webhook delivers only while its creator could still make it.
    """
    if not accounts.has_users():
        return None
    if project_id is not None:
        role = accounts.role(project_id, user_id)
        if role is None or not allowed(role, Action.CHANGE):
            return f"{user_id!r} is not an admin or owner of project {project_id!r}"
    elif (org_id, "admin") not in accounts.orgs(user_id):
        return f"{user_id!r} is not an admin of org {org_id!r}"
    if not any(key.revoked_at is None for key in accounts.keys(user_id)):
        return f"{user_id!r} has no active API key"
    return None


def paused_because(accounts: Accounts, hook: Webhook) -> str | None:
    """Why nothing is sent to ``hook`` now (its creator may no longer manage it), or ``None``.
    Its project's or org's other managers still see it, and may delete it."""
    problem = manager_problem(
        accounts, hook.created_by, project_id=hook.project_id, org_id=hook.org_id
    )
    if problem is None:
        return None
    return (
        f"not sent: its creator {problem}; an admin or owner may delete this webhook and "
        "create another"
    )


class Webhooks:
    """The webhooks of one database: create, list, delete, send a test, read the log.
    Who may manage which webhook is :func:`manager_problem`'s to say; the adapter asks it for
    the caller (and answers as it answers other refusals). A project or org has at most
    ``max_per_project`` webhooks, and each webhook at most ``test_sends_per_minute`` tests."""

    def __init__(
        self,
        store: Store,
        policy: AddressPolicy,
        cipher: Cipher | None = None,
        *,
        max_per_project: int = MAX_PER_PROJECT,
        test_sends_per_minute: int = TEST_SENDS_PER_MINUTE,
    ) -> None:
        self.tables = sql_webhooks(store, cipher)
        self.policy = policy
        self.max_per_project = max_per_project
        self.test_sends_per_minute = test_sends_per_minute

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
        if not self.tables.add(hook, limit=self.max_per_project):
            what, which = ("project", project_id) if project_id else ("org", org_id)
            raise ValidationError(
                f"{what} {which!r} has {self.max_per_project} webhooks, the most one {what} may "
                "have (MEMORYBANK_WEBHOOK_MAX_PER_PROJECT): delete one first",
                field=f"{what}_id",
            )
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
        """Queue a ``test`` delivery (no event) to ``hook``, sent by the worker like any;
        :class:`~memorybank.errors.RateLimited` past ``test_sends_per_minute`` in the last
        minute (counted in the database, so every server process counts the same ones)."""
        now = utcnow()
        recent = self.tables.tests_since(hook.id, now - timedelta(minutes=1))
        if len(recent) >= self.test_sends_per_minute:
            oldest = recent[-self.test_sends_per_minute]
            wait = max(1, math.ceil((oldest + timedelta(minutes=1) - now).total_seconds()))
            raise RateLimited(
                f"at most {self.test_sends_per_minute} test sends a minute per webhook "
                f"(MEMORYBANK_WEBHOOK_TEST_SENDS_PER_MINUTE); try again in {wait} s",
                retry_after=wait,
            )
        delivery = Delivery(webhook_id=hook.id, event_type="test", body="")
        body = payload(None, hook, delivery.id, "test")
        delivery = delivery.model_copy(update={"body": body})
        self.tables.enqueue([delivery])
        return delivery

    def deliveries(self, hook_id: str, limit: int = 50) -> list[Delivery]:
        """A webhook's deliveries, newest first."""
        return self.tables.deliveries(hook_id, limit)


__all__ = [
    "MAX_PER_PROJECT",
    "SIGNATURE_HEADER",
    "TEST_SENDS_PER_MINUTE",
    "TIMESTAMP_HEADER",
    "TOLERANCE_SECONDS",
    "Webhooks",
    "manager_problem",
    "paused_because",
    "payload",
    "sign",
    "signature_headers",
    "url_problem",
    "verify",
]
