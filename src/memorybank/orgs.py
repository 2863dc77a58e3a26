"""Who belongs to which org, for org-wide search by org admins (seed 003's ``orgWide``).

The host application knows its orgs; it records membership here so an admin's org-wide
search knows whose memories to search. Membership grants nothing by itself: only a caller
whose :class:`~memorybank.tools.base.ToolContext` says ``org_admin=True`` may search across
the org, and then only the private scopes of its members.

>>> add_org_member(bank, "acme", "alice")  # doctest: +SKIP
>>> org_users(bank, "acme")  # doctest: +SKIP
['alice']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybank.errors import ValidationError

if TYPE_CHECKING:
    from memorybank.bank import MemoryBank


def _check(value: str, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{field} is required", field=field)
    return value


def add_org_member(bank: MemoryBank, org_id: str, user_id: str) -> None:
    """Record that ``user_id`` belongs to ``org_id`` (again changes nothing)."""
    bank.store.add_org_member(_check(org_id, "org_id"), _check(user_id, "user_id"))


def remove_org_member(bank: MemoryBank, org_id: str, user_id: str) -> bool:
    """Remove ``user_id`` from ``org_id``; whether they were a member."""
    return bank.store.remove_org_member(_check(org_id, "org_id"), _check(user_id, "user_id"))


def org_users(bank: MemoryBank, org_id: str) -> list[str]:
    """The members of ``org_id``, sorted."""
    return bank.store.org_users(_check(org_id, "org_id"))


__all__ = ["add_org_member", "org_users", "remove_org_member"]
