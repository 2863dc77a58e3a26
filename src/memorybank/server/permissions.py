"""Who a request acts for, and their role in a project: the server's half of authorisation.

The rules themselves (seed 002's table) are :data:`memorybank.permissions.PROJECT_ROLES`, and
:class:`~memorybank.MemoryBank` enforces them on every operation with the role it is given.
What only the server knows is *who* is calling and *which projects* they belong to: a request's
:class:`Principal` comes from its API key (:func:`resolve_principal`), and their role in a
project from the accounts (:func:`project_role`). Routes check early with :func:`authorize`
(the same table) so a refused request does no work, then hand the role to the bank.

Non-members get :class:`~memorybank.NotFound` (404), exactly as for a project that does not
exist, so the API never reveals which projects exist; members lacking the role get
:class:`~memorybank.PermissionDenied` (403). Routes addressed by a project id answer
``no project 'apollo'``, naming only what the caller named; routes addressed by a memory, plan
or thread id turn that into the same 404 as an id that does not exist (``no memory 'mem_…'``),
so they never reveal the project of something the caller may not see.

In local mode (no users configured) everyone is the single user ``local``, owner of every
project; otherwise a valid ``Authorization: Bearer`` API key is required.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memorybank.accounts import LOCAL_USER, Accounts, Role
from memorybank.errors import MemoryBankError, NotFound
from memorybank.permissions import Action, require

Mode = Literal["local", "auth"]


class Unauthorized(MemoryBankError):
    """No valid API key on a request that needs one (HTTP 401)."""


@dataclass(frozen=True)
class Principal:
    """The user a request acts for, as its API key says (the core
    :class:`~memorybank.model.Caller` adds the project, thread and role of one call)."""

    user_id: str
    name: str
    mode: Mode

    @property
    def local(self) -> bool:
        """Whether this is the single user of local mode."""
        return self.mode == "local"


def resolve_principal(accounts: Accounts, authorization: str | None) -> Principal:
    """The principal of a request with this ``Authorization`` header; :class:`Unauthorized`
    when users are configured and the header holds no active API key."""
    if not accounts.has_users():
        return Principal(user_id=LOCAL_USER, name="Local user", mode="local")
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("send your API key as 'Authorization: Bearer mb_…'")
    user = accounts.authenticate(token.strip())
    if user is None:
        raise Unauthorized("this API key is unknown or revoked: create a new one")
    return Principal(user_id=user.id, name=user.name, mode="auth")


def project_role(accounts: Accounts, principal: Principal, project_id: str) -> Role:
    """The principal's role in a project; :class:`NotFound` for non-members (and unknown
    projects), so existence is never revealed."""
    if principal.local:
        return "owner"
    role = accounts.role(project_id, principal.user_id)
    if role is None:
        raise NotFound(f"no project {project_id!r}")
    return role


def authorize(
    accounts: Accounts, principal: Principal, action: Action, project_id: str | None
) -> Role:
    """Check that ``principal`` may do ``action`` in their private memory
    (``project_id=None``, always their own) or in a project's, by seed 002's table; returns
    their role there, which the route passes on to the bank."""
    if project_id is None:
        return "owner"
    role = project_role(accounts, principal, project_id)
    require(role, action, project_id)
    return role


def org_admin_of(accounts: Accounts, principal: Principal) -> str | None:
    """The org the principal administers (seed 003's orgWide), if any."""
    if principal.local:
        return None
    return next((org for org, role in accounts.orgs(principal.user_id) if role == "admin"), None)


__all__ = [
    "Action",
    "Principal",
    "Unauthorized",
    "authorize",
    "org_admin_of",
    "project_role",
    "resolve_principal",
]
