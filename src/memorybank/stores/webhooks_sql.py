"""Webhooks and their deliveries in a SQL store's own database (SQLite migration 5,
PostgreSQL migration 6), in the store's transactions, with the shared dialect.

Pending deliveries live in the database, so a delivery survives a restart of the server
that was sending it: any worker picks up a delivery whose ``next_attempt_us`` has passed,
and claims it first by moving that time forward by a lease (a worker that dies mid-send
leaves it to be retried when the lease ends). Which events have been turned into
deliveries is one cursor in ``meta``, moved forward only by the transaction that inserts
their deliveries, so two workers never both deliver one event.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Protocol

from memorybank.errors import ConfigurationError
from memorybank.model.stored import from_us, to_us
from memorybank.model.webhooks import Delivery, DeliveryStatus, Webhook
from memorybank.stores.base import Store, require_sql
from memorybank.stores.sql import SqlDatabase, Transaction, upsert

_HOOK_COLUMNS = "id, org_id, project_id, created_by, url, secret, event_types, active, created_us"
_DELIVERY_COLUMNS = (
    "id, webhook_id, event_id, event_type, body, status, attempts, next_attempt_us, "
    "last_status, last_error, created_us, done_us"
)
#: The newest event id already turned into deliveries.
CURSOR_KEY = "webhooks.cursor"
_SET_CURSOR = upsert("meta", "key, value", "key")


#: How a stored secret sealed with the master key starts (a bare one is from before sealing).
SEALED = "fernet:"


class Cipher(Protocol):
    """What seals webhook secrets at rest: a :class:`cryptography.fernet.Fernet`."""

    def encrypt(self, data: bytes) -> bytes: ...

    def decrypt(self, token: bytes | str) -> bytes: ...


def _hook(row: Sequence[Any], secret: str) -> Webhook:
    return Webhook(
        id=row[0],
        org_id=row[1],
        project_id=row[2],
        created_by=row[3],
        url=row[4],
        secret=secret,
        event_types=tuple(json.loads(row[6])),
        active=bool(row[7]),
        created_at=from_us(row[8]),
    )


def _delivery(row: Sequence[Any]) -> Delivery:
    return Delivery(
        id=row[0],
        webhook_id=row[1],
        event_id=row[2],
        event_type=row[3],
        body=row[4],
        status=row[5],
        attempts=row[6],
        next_attempt_at=from_us(row[7]),
        last_status=row[8],
        last_error=row[9],
        created_at=from_us(row[10]),
        done_at=from_us(row[11]),
    )


class CursorMoved(Exception):
    """Another worker turned the same events into deliveries first."""


class SqlWebhookStore:
    """Webhooks and deliveries in the database of a SQL store. With a ``cipher`` (the
    server's master key) a webhook's signing secret is stored sealed, as provider keys are:
    the database alone cannot forge deliveries."""

    def __init__(self, database: SqlDatabase, cipher: Cipher | None = None) -> None:
        self.database = database
        self._cipher = cipher

    def _seal(self, secret: str) -> str:
        if self._cipher is None:
            return secret
        return SEALED + self._cipher.encrypt(secret.encode()).decode()

    def _hook(self, row: Sequence[Any]) -> Webhook:
        stored = str(row[5])
        if not stored.startswith(SEALED):
            return _hook(row, stored)
        if self._cipher is None:
            raise ConfigurationError(
                "webhook secrets are sealed with the server's master key: open the webhooks "
                "with it (MEMORYBANK_MASTER_KEY or the key file)"
            )
        return _hook(row, self._cipher.decrypt(stored[len(SEALED) :]).decode())

    # -- webhooks ---------------------------------------------------------------------------

    def add(self, hook: Webhook, *, limit: int | None = None) -> bool:
        """Store a new webhook, unless its project (or org) has ``limit`` webhooks already
        (counted in the same transaction): whether it was stored."""
        owner = ("project_id", hook.project_id) if hook.project_id else ("org_id", hook.org_id)
        with self.database.writing() as txn:
            if limit is not None:
                row = txn.one(f"SELECT COUNT(*) FROM webhooks WHERE {owner[0]} = ?", (owner[1],))
                if row is not None and int(row[0]) >= limit:
                    return False
            txn.execute(
                f"INSERT INTO webhooks ({_HOOK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    hook.id,
                    hook.org_id,
                    hook.project_id,
                    hook.created_by,
                    hook.url,
                    self._seal(hook.secret),
                    json.dumps(list(hook.event_types)),
                    hook.active,
                    to_us(hook.created_at),
                ),
            )
        return True

    def get(self, hook_id: str) -> Webhook | None:
        """One webhook."""
        with self.database.reading() as txn:
            row = txn.one(f"SELECT {_HOOK_COLUMNS} FROM webhooks WHERE id = ?", (hook_id,))
        return None if row is None else self._hook(row)

    def webhooks(self, *, active_only: bool = False) -> list[Webhook]:
        """Every webhook, oldest first."""
        where = " WHERE active = ?" if active_only else ""
        with self.database.reading() as txn:
            rows = txn.fetch(
                f"SELECT {_HOOK_COLUMNS} FROM webhooks{where} ORDER BY created_us, id",
                (True,) if active_only else (),
            )
        return [self._hook(r) for r in rows]

    def delete(self, hook_id: str) -> bool:
        """Remove a webhook and its delivery log; whether it existed."""
        with self.database.writing() as txn:
            txn.execute("DELETE FROM webhook_deliveries WHERE webhook_id = ?", (hook_id,))
            return bool(txn.execute("DELETE FROM webhooks WHERE id = ?", (hook_id,)) > 0)

    def org_projects(self, org_id: str) -> list[str]:
        """The ids of the projects of an org."""
        with self.database.reading() as txn:
            rows = txn.fetch("SELECT id FROM projects WHERE org_id = ? ORDER BY id", (org_id,))
        return [str(r[0]) for r in rows]

    # -- deliveries -------------------------------------------------------------------------

    def cursor(self) -> int | None:
        """The newest event id turned into deliveries (``None``: never started)."""
        with self.database.reading() as txn:
            row = txn.one("SELECT value FROM meta WHERE key = ?", (CURSOR_KEY,))
        return None if row is None else int(row[0])

    def enqueue(
        self, deliveries: Sequence[Delivery], cursor: tuple[int | None, int] | None = None
    ) -> None:
        """Store new deliveries; with ``cursor`` (old, new), move the cursor from old to new
        in the same transaction, or raise :class:`CursorMoved` (storing nothing) when it is
        no longer at old."""
        with self.database.writing() as txn:
            if cursor is not None:
                self._move_cursor(txn, *cursor)
            txn.execute_many(
                f"INSERT INTO webhook_deliveries ({_DELIVERY_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_delivery_row(d) for d in deliveries],
            )

    def _move_cursor(self, txn: Transaction, old: int | None, new: int) -> None:
        if old is None:
            if txn.one("SELECT value FROM meta WHERE key = ?", (CURSOR_KEY,)) is not None:
                raise CursorMoved
            txn.execute(_SET_CURSOR, (CURSOR_KEY, str(new)))
            return
        moved = txn.execute(
            "UPDATE meta SET value = ? WHERE key = ? AND value = ?",
            (str(new), CURSOR_KEY, str(old)),
        )
        if moved != 1:
            raise CursorMoved

    def due_by_webhook(
        self, now: datetime, limit: int, skip: Collection[str] = ()
    ) -> list[Delivery]:
        """The oldest due pending delivery of each webhook (not of those in ``skip``), at most
        ``limit`` of them, the longest waiting first: one webhook's backlog, however long,
        never hides another's next delivery."""
        with self.database.reading() as txn:
            heads = txn.fetch(
                "SELECT webhook_id, MIN(next_attempt_us) AS head_us FROM webhook_deliveries "
                "WHERE status = 'pending' AND next_attempt_us <= ? GROUP BY webhook_id "
                "ORDER BY head_us, webhook_id",
                (to_us(now),),
            )
            found: list[Delivery] = []
            for hook_id, head_us in heads:
                if len(found) >= limit:
                    break
                if hook_id in skip:
                    continue
                row = txn.one(
                    f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE status = 'pending' "
                    "AND next_attempt_us = ? AND webhook_id = ? ORDER BY id LIMIT 1",
                    (head_us, hook_id),
                )
                if row is not None:
                    found.append(_delivery(row))
        return found

    def due(self, now: datetime, limit: int) -> list[Delivery]:
        """Pending deliveries whose next attempt is due, oldest first."""
        with self.database.reading() as txn:
            rows = txn.fetch(
                f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE status = 'pending' "
                "AND next_attempt_us <= ? ORDER BY next_attempt_us, id LIMIT ?",
                (to_us(now), limit),
            )
        return [_delivery(r) for r in rows]

    def claim(self, delivery: Delivery, until: datetime) -> bool:
        """Take ``delivery`` for one attempt, leasing it until ``until``; false if another
        worker took it first."""
        with self.database.writing() as txn:
            return bool(
                txn.execute(
                    "UPDATE webhook_deliveries SET next_attempt_us = ? WHERE id = ? "
                    "AND status = 'pending' AND next_attempt_us = ?",
                    (to_us(until), delivery.id, to_us(delivery.next_attempt_at)),
                )
                == 1
            )

    def record_attempt(
        self,
        delivery_id: str,
        status: DeliveryStatus,
        *,
        next_attempt_at: datetime,
        last_status: int | None,
        last_error: str | None,
        done_at: datetime | None,
    ) -> None:
        """Count one attempt of a delivery and its outcome. A delivery that is done
        (delivered, or failed for good) keeps its status and no longer its body: the event's
        text stays with the receiver, not in the log."""
        with self.database.writing() as txn:
            txn.execute(
                "UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, "
                "next_attempt_us = ?, last_status = ?, last_error = ?, done_us = ?, "
                "body = CASE WHEN ? = 'pending' THEN body ELSE '' END WHERE id = ?",
                (
                    status,
                    to_us(next_attempt_at),
                    last_status,
                    last_error,
                    to_us(done_at),
                    status,
                    delivery_id,
                ),
            )

    def give_up(self, hook_id: str, reason: str, at: datetime) -> int:
        """End a webhook's pending deliveries that are due at ``at`` unsent (``failed``,
        without an attempt), saying why; how many. One being attempted (leased into the
        future) is left to its attempt."""
        with self.database.writing() as txn:
            return txn.execute(
                "UPDATE webhook_deliveries SET status = 'failed', last_error = ?, done_us = ?, "
                "body = '' WHERE webhook_id = ? AND status = 'pending' AND next_attempt_us <= ?",
                (reason, to_us(at), hook_id, to_us(at)),
            )

    def prune_bodies(self) -> int:
        """Empty the bodies of deliveries that are done (those logged before bodies were
        pruned on completion); how many."""
        with self.database.writing() as txn:
            return txn.execute(
                "UPDATE webhook_deliveries SET body = '' WHERE status <> 'pending' AND body <> ''"
            )

    def tests_since(self, hook_id: str, since: datetime) -> list[datetime]:
        """When each test delivery of a webhook made since ``since`` was queued, oldest first."""
        with self.database.reading() as txn:
            rows = txn.fetch(
                "SELECT created_us FROM webhook_deliveries WHERE webhook_id = ? "
                "AND event_type = 'test' AND created_us >= ? ORDER BY created_us",
                (hook_id, to_us(since)),
            )
        return [from_us(r[0]) for r in rows]

    def deliveries(self, hook_id: str, limit: int) -> list[Delivery]:
        """A webhook's deliveries, newest first."""
        with self.database.reading() as txn:
            rows = txn.fetch(
                f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? "
                "ORDER BY created_us DESC, id DESC LIMIT ?",
                (hook_id, limit),
            )
        return [_delivery(r) for r in rows]


def _delivery_row(d: Delivery) -> tuple[Any, ...]:
    return (
        d.id,
        d.webhook_id,
        d.event_id,
        d.event_type,
        d.body,
        d.status,
        d.attempts,
        to_us(d.next_attempt_at),
        d.last_status,
        d.last_error,
        to_us(d.created_at),
        to_us(d.done_at),
    )


def sql_webhooks(store: Store, cipher: Cipher | None = None) -> SqlWebhookStore:
    """The webhook tables in the SQL database of ``store``, secrets sealed with ``cipher``
    when given; a :class:`~memorybank.errors.ConfigurationError` for a store that has none."""
    return SqlWebhookStore(require_sql(store, "webhooks"), cipher)


__all__ = ["CURSOR_KEY", "SEALED", "Cipher", "CursorMoved", "SqlWebhookStore", "sql_webhooks"]
