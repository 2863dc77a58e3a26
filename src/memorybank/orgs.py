"""Who belongs to which org, for org-wide search by org admins (seed 003's ``orgWide``).

The host application knows its orgs; it records membership here so an admin's org-wide
search knows whose memories to search. Membership grants nothing by itself: only a caller
whose :class:`~memorybank.model.Caller` says ``org_admin=True`` may search across the org
(:meth:`~memorybank.MemoryBank.org_readers`), and then only the private scopes of its members.
These functions are the bank's own methods, kept here under their earlier names.

>>> add_org_member(bank, "acme", "bob")
>>> org_users(bank, "acme")
['bob']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memorybank.bank import MemoryBank


def add_org_member(bank: MemoryBank, org_id: str, user_id: str) -> None:
    """Record that ``user_id`` belongs to ``org_id`` (again changes nothing)."""
    bank.add_org_member(org_id, user_id)


def remove_org_member(bank: MemoryBank, org_id: str, user_id: str) -> bool:
    """Remove ``user_id`` from ``org_id``; whether they were a member."""
    return bank.remove_org_member(org_id, user_id)


def org_users(bank: MemoryBank, org_id: str) -> list[str]:
    """The members of ``org_id``, sorted."""
    return bank.org_users(org_id)


__all__ = ["add_org_member", "org_users", "remove_org_member"]
