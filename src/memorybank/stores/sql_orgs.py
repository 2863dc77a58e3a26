"""Who belongs to which org (for org admins' org-wide search): the org-member methods of
:class:`~memorybank.stores.base.Store` over the ``org_members`` table, shared by both SQL
stores."""

from __future__ import annotations

from datetime import UTC, datetime

from memorybank.model.stored import to_us
from memorybank.stores.sql import SqlTransactions, TxnT


class SqlOrgMembers(SqlTransactions[TxnT]):
    """The org-member methods of a SQL store (its transactions are the store's own)."""

    def add_org_member(self, org_id: str, user_id: str) -> None:
        """Record that ``user_id`` belongs to ``org_id`` (adding twice changes nothing)."""
        with self.writing() as txn:
            txn.execute(
                "INSERT INTO org_members (org_id, user_id, added_us) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (org_id, user_id, to_us(datetime.now(UTC))),
            )

    def remove_org_member(self, org_id: str, user_id: str) -> bool:
        """Remove ``user_id`` from ``org_id``; whether they were a member."""
        with self.writing() as txn:
            changed = txn.execute(
                "DELETE FROM org_members WHERE org_id = ? AND user_id = ?", (org_id, user_id)
            )
        return changed > 0

    def org_users(self, org_id: str) -> list[str]:
        """The users of ``org_id``, sorted."""
        with self.reading() as txn:
            rows = txn.fetch(
                "SELECT user_id FROM org_members WHERE org_id = ? ORDER BY user_id", (org_id,)
            )
        return [str(r[0]) for r in rows]


__all__ = ["SqlOrgMembers"]
